"""Floors: the least the machine can do for each job, measured in the same run as a bench.

- ``raw_ingest``: plain ``sqlite3`` ``executemany`` into the index schema (events, FTS rows,
  relations, headers) in transactions of the writer's batch size. Rows (JSON parse and
  searchable text) are prepared outside the timed region: the floor is SQLite's own cost.
- ``raw_fts``: the bare FTS5 query with the provider's workspace pre-filter,
  ``ws:"<token>" AND body:(<compiled query>)``, top 100 by bm25 with ``snippet()``.
- ``echo``: nats-py request/reply of 1 KiB to an echo subscriber: sequential p50/p99, and
  throughput with 64 requests in flight.

``python -m bench.floors --sessions N --events N`` prints all three.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from bench import corpus, vocabulary
from bench.report import Latency, db_size_bytes, format_table, nats_url, result_dict, write_result
from worker.store import schema
from worker.store.errors import InvalidQuery
from worker.store.fts_query import compile_query
from worker.store.text import searchable_text

SNIPPET: Final = "snippet(events_fts, 1, '[', ']', '…', 12)"
RAW_FTS_SQL: Final = (
    f"SELECT rowid, {schema.BM25}, {SNIPPET} FROM events_fts "
    f"WHERE events_fts MATCH ? ORDER BY {schema.BM25} LIMIT 100"
)


# --- ingest --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IngestFloor:
    events: int
    seconds: float  # SQLite time only
    prepare_seconds: float  # JSON parse and searchable text, outside the floor
    db_bytes: int

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


_SESSION_SQL: Final = (
    "INSERT INTO sessions (session_id, cwd, ws, parent_session_id, title, availability,"
    " created_ms, updated_ms, last_seq, event_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET title = coalesce(excluded.title, title),"
    " availability = excluded.availability, updated_ms = excluded.updated_ms,"
    " last_seq = excluded.last_seq, event_count = excluded.event_count"
)
_EVENT_SQL: Final = (
    "INSERT INTO events (id, session_id, seq, event_id, type, surface, time_ms, stream_seq,"
    " ws, body, raw_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def raw_ingest(
    events: Iterable[dict[str, Any]],
    db_path: Path,
    *,
    batch: int = 500,
    text_cap_bytes: int = 64 * 1024,
) -> IngestFloor:
    """Insert ``events`` with bare executemany; returns SQLite-only elapsed time."""
    conn = schema.connect(str(db_path))
    schema.create(conn)
    headers: dict[str, list[Any]] = {}  # session_id -> header row (fold is trivial here)
    sql_seconds = prepare_seconds = 0.0
    count = 0
    row_id = 0
    buffer: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal sql_seconds, prepare_seconds, row_id
        t0 = time.perf_counter()
        rows: list[tuple[Any, ...]] = []
        fts: list[tuple[int, str, str]] = []
        repl: list[tuple[str, int, int]] = []
        cites: list[tuple[str, int, str, int]] = []
        touched: dict[str, tuple[Any, ...]] = {}
        for ev in buffer:
            # Round-trip through bytes as a consumer would receive them.
            raw = orjson.dumps(ev).decode()
            ev = orjson.loads(raw)
            sid, seq, payload = ev["session_id"], ev["seq"], ev["payload"]
            header = headers.get(sid)
            if header is None:
                cwd = payload.get("cwd")
                header = [sid, cwd, schema.workspace_token(cwd), payload.get("parent_session_id")]
                header += [None, "live", 0, 0, 0, 0]
                headers[sid] = header
            if ev["type"] == "session/title":
                header[4] = payload.get("title")
            if ev["type"] == "session/end":
                header[5] = "persisted"
            body = searchable_text(payload, text_cap_bytes)
            row_id += 1
            t_ms = _time_ms(ev["time"])
            header[6] = header[6] or t_ms
            header[7], header[8], header[9] = t_ms, seq, header[9] + 1
            ws = header[2]
            eid, kind, surface = ev["event_id"], ev["type"], ev["surface"]
            rows.append((row_id, sid, seq, eid, kind, surface, t_ms, row_id, ws, body, raw))
            fts.append((row_id, ws, body))
            repl.extend((sid, seq, pos) for pos in ev.get("replaces", ()))
            cites.extend((sid, seq, c["session_id"], c["seq"]) for c in ev.get("cites", ()))
            touched[sid] = tuple(header)
        t1 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_EVENT_SQL, rows)
        conn.executemany("INSERT INTO events_fts (rowid, ws, body) VALUES (?, ?, ?)", fts)
        conn.executemany("INSERT OR IGNORE INTO replacements VALUES (?, ?, ?)", repl)
        conn.executemany("INSERT OR IGNORE INTO citations VALUES (?, ?, ?, ?)", cites)
        conn.executemany(_SESSION_SQL, list(touched.values()))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'stream_seq'", (row_id,))
        conn.execute("COMMIT")
        t2 = time.perf_counter()
        prepare_seconds += t1 - t0
        sql_seconds += t2 - t1
        buffer.clear()

    try:
        for event in events:
            buffer.append(event)
            count += 1
            if len(buffer) >= batch:
                flush()
        if buffer:
            flush()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return IngestFloor(
        events=count,
        seconds=sql_seconds,
        prepare_seconds=prepare_seconds,
        db_bytes=db_size_bytes(db_path),
    )


def _time_ms(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


# --- FTS query -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    cwd: str
    text: str


def sample_queries(config: corpus.CorpusConfig, n: int, *, seed: int = 11) -> list[Query]:
    """Realistic queries from the corpus vocabulary, spread over the workspaces."""
    rng = random.Random(seed)
    cwds = corpus.workspace_paths(config)
    queries: list[Query] = []
    while len(queries) < n:
        text = vocabulary.sample_query(rng)
        try:
            compile_query(text)
        except InvalidQuery:
            continue
        queries.append(Query(cwd=rng.choice(cwds), text=text))
    return queries


def fts_match(query: Query) -> str:
    return f'ws:"{schema.workspace_token(query.cwd)}" AND body:({compile_query(query.text)})'


class RawFts:
    """The floor query on one plain sqlite3 connection of the index."""

    def __init__(self, db_path: Path) -> None:
        self.conn = schema.connect(str(db_path))

    def query(self, query: Query) -> tuple[float, int]:
        """(seconds, rows) of one run; the MATCH text is built outside the timing."""
        match = fts_match(query)
        t0 = time.perf_counter()
        rows = len(self.conn.execute(RAW_FTS_SQL, (match,)).fetchall())
        return time.perf_counter() - t0, rows

    def close(self) -> None:
        self.conn.close()


def raw_fts(db_path: Path, queries: Sequence[Query], *, rounds: int = 1) -> dict[str, Any]:
    """Run each query ``rounds`` times; one latency sample per run."""
    fts = RawFts(db_path)
    samples: list[float] = []
    rows = 0
    try:
        for query in queries[:3]:  # warm the page cache
            fts.query(query)
        for _ in range(rounds):
            for query in queries:
                seconds, found = fts.query(query)
                samples.append(seconds)
                rows += found
    finally:
        fts.close()
    return {"latency_ms": asdict(Latency.of(samples)), "rows": rows, "samples": samples}


# --- NATS echo -----------------------------------------------------------------------------


async def echo(
    url: str,
    *,
    sequential: int = 2000,
    parallel: int = 20_000,
    in_flight: int = 64,
    size: int = 1024,
    responder: Literal["process", "inline"] = "process",
) -> dict[str, Any]:
    """Raw nats-py request/reply to an echo responder.

    ``process``: the responder is a child process (as the worker is in the tools bench), so
    requester and responder do not share one interpreter; ``inline``: same event loop.
    """
    import nats

    from bench.child import ChildProcess, echo_args

    subject = f"sqbench.echo.{random.getrandbits(40):x}"
    payload = random.Random(5).randbytes(size)
    child: ChildProcess | None = None
    server_nc: Any = None
    sub: Any = None
    if responder == "process":
        child = ChildProcess(echo_args(url, subject))
        await child.start()
    else:
        server_nc = await nats.connect(url)

        async def handler(msg: Any) -> None:
            await msg.respond(msg.data)

        sub = await server_nc.subscribe(subject, cb=handler)
        await server_nc.flush()
    client_nc = await nats.connect(url)
    try:
        for _ in range(50):  # warm-up
            await client_nc.request(subject, payload, timeout=5)
        samples = []
        for _ in range(sequential):
            t0 = time.perf_counter()
            await client_nc.request(subject, payload, timeout=5)
            samples.append(time.perf_counter() - t0)
        throughput = await _throughput(client_nc, subject, payload, parallel, in_flight)
    finally:
        await client_nc.close()
        if sub is not None:
            await sub.unsubscribe()
        if server_nc is not None:
            await server_nc.close()
        if child is not None:
            await child.stop()
    return {
        "sequential_ms": asdict(Latency.of(samples)),
        "throughput_rps": throughput,
        "in_flight": in_flight,
        "responder": responder,
        "samples": samples,
    }


async def _throughput(nc: Any, subject: str, payload: bytes, total: int, in_flight: int) -> float:
    remaining = total

    async def lane() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await nc.request(subject, payload, timeout=10)

    t0 = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(in_flight)))
    return total / (time.perf_counter() - t0)


# --- CLI -----------------------------------------------------------------------------------


async def run(
    config: corpus.CorpusConfig,
    *,
    queries: int = 200,
    echo_sequential: int = 2000,
    echo_parallel: int = 20_000,
    url: str | None = None,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sq-bench-floors-", dir=work_dir) as tmp:
        db = Path(tmp) / "floor.sqlite"
        ingest = raw_ingest(corpus.generate(config), db)
        fts = raw_fts(db, sample_queries(config, queries))
    async with nats_url(url) as resolved:
        echo_result = await echo(resolved, sequential=echo_sequential, parallel=echo_parallel)
    fts.pop("samples")
    echo_result.pop("samples")
    measurements = {
        "raw_ingest": {**asdict(ingest), "events_per_s": ingest.events_per_s},
        "raw_fts": fts,
        "echo": echo_result,
    }
    return result_dict("floors", params=asdict(config), checks=[], measurements=measurements)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floors", description=__doc__)
    corpus.add_size_arguments(parser, sessions=200, events=200)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--nats-url", default=None)
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    result = asyncio.run(run(config, queries=args.queries, url=args.nats_url))
    m = result["measurements"]
    info = {
        "raw ingest events/s": m["raw_ingest"]["events_per_s"],
        "raw FTS p50 ms": m["raw_fts"]["latency_ms"]["p50"],
        "raw FTS p99 ms": m["raw_fts"]["latency_ms"]["p99"],
        "echo p50 ms": m["echo"]["sequential_ms"]["p50"],
        "echo p99 ms": m["echo"]["sequential_ms"]["p99"],
        "echo req/s (64 in flight)": m["echo"]["throughput_rps"],
    }
    print(format_table(f"floors ({result['params']['sessions']} sessions)", [], info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
