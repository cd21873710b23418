"""Floors: the least the machine can do for each job, measured in the same run as a bench.

Over 400 lines: every floor the benches share, so each is measured one way.

- ``raw_ingest``: the floor of the index layout: plain ``sqlite3`` ``executemany`` into the
  store's schema (events, relations, headers, the stream seq) in transactions of the
  writer's batch size, plus raw tantivy: ``add_document`` of the search index's documents
  and its commits (at the writer's commit interval). Rows, searchable text and the analysed
  document fields are prepared outside the timed region: the floor is SQLite's and
  tantivy's own cost, reported apart and summed.
- ``reference_fts``: the global FTS5 query of the search before issue 10 (the issue's
  "reference floor"), on a separate FTS5 file built from the same corpus with
  ``bench.legacy_fts``: ``ws:"<token>" AND body:(<legacy compiled query>)``, top 100 by
  bm25 with ``snippet()``.
- ``echo``: nats-py request/reply of 1 KiB to an echo subscriber: sequential p50/p99, and
  throughput with 64 requests in flight.

``python -m bench.floors --sessions N --events N`` prints all three.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from bench import corpus, legacy_fts, vocabulary
from bench.report import (
    Latency,
    db_size_bytes,
    format_table,
    nats_url,
    result_dict,
    threads_cpu_s,
    write_result,
)
from worker.store.database import INDEX
from worker.store.event_codec import EventPacker, preview_key
from worker.store.files import schema
from worker.store.search import search_schema

# The pre-issue-10 ranking and excerpt, verbatim.
BM25: Final = "bm25(events_fts, 0.0, 1.0)"
SNIPPET: Final = "snippet(events_fts, 1, '[', ']', '…', 12)"
REFERENCE_FTS_SQL: Final = (
    f"SELECT rowid, {BM25}, {SNIPPET} FROM events_fts "
    f"WHERE events_fts MATCH ? ORDER BY {BM25} LIMIT 100"
)


# --- ingest --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IngestFloor:
    events: int
    seconds: float  # SQLite + tantivy time only
    sqlite_seconds: float
    tantivy_seconds: float
    prepare_seconds: float  # JSON parse, searchable text, analysed fields: outside the floor
    db_bytes: int  # the SQLite file and the search index directory

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
    " doc, preview_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The search follower's writer settings (search_follower.SearchIndexWriter).
_TANTIVY_HEAP: Final = 64 * 2**20
COMMIT_INTERVAL_S: Final = 0.25


@dataclass(slots=True)
class _Batch:
    rows: list[tuple[Any, ...]]
    docs: list[Any]
    repl: list[tuple[str, int, int]]
    cites: list[tuple[str, int, str, int]]
    touched: list[tuple[Any, ...]]
    last_id: int


class _Preparer:
    """Turns corpus events into the rows and documents the writer would produce."""

    def __init__(self, text_cap_bytes: int) -> None:
        self.cap = text_cap_bytes
        # The event's JSON as the writer stores it (event_codec): packing is preparation.
        self.packer = EventPacker(text_cap_bytes=text_cap_bytes)
        self.headers: dict[str, list[Any]] = {}  # session_id -> header row
        self.row_id = 0

    def batch(self, events: Sequence[dict[str, Any]]) -> _Batch:
        out = _Batch([], [], [], [], [], 0)
        touched: dict[str, tuple[Any, ...]] = {}
        for ev in events:
            # Round-trip through bytes as a consumer would receive them.
            raw = orjson.dumps(ev).decode()
            ev = orjson.loads(raw)
            sid, seq, payload = ev["session_id"], ev["seq"], ev["payload"]
            header = self.headers.get(sid)
            if header is None:
                cwd = payload.get("cwd")
                header = [sid, cwd, schema.workspace_token(cwd), payload.get("parent_session_id")]
                header += [None, "live", 0, 0, 0, 0]
                self.headers[sid] = header
            if ev["type"] == "session/title":
                header[4] = payload.get("title")
            if ev["type"] == "session/end":
                header[5] = "persisted"
            self.row_id += 1
            t_ms = _time_ms(ev["time"])
            header[6] = header[6] or t_ms
            header[7], header[8], header[9] = t_ms, seq, header[9] + 1
            ws, rid = header[2], self.row_id
            eid, kind, surface = ev["event_id"], ev["type"], ev["surface"]
            out.rows.append(
                (rid, sid, seq, eid, kind, surface, t_ms, rid, self.packer.pack(raw, kind),
                 preview_key(raw, kind, surface))
            )  # fmt: skip
            # The follower's own document builder: analysed fields, workspace-prefixed.
            doc_row = (rid, sid, seq, kind, surface, t_ms, rid, ws, raw, None, None, None, None)
            out.docs.append(search_schema.event_document(doc_row, self.cap - 4))
            out.repl.extend((sid, seq, pos) for pos in ev.get("replaces", ()))
            out.cites.extend((sid, seq, c["session_id"], c["seq"]) for c in ev.get("cites", ()))
            touched[sid] = tuple(header)
        out.touched = list(touched.values())
        out.last_id = self.row_id
        return out


def _sqlite_apply(conn: sqlite3.Connection, b: _Batch) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(_EVENT_SQL, b.rows)
    conn.executemany("INSERT OR IGNORE INTO replacements VALUES (?, ?, ?)", b.repl)
    conn.executemany("INSERT OR IGNORE INTO citations VALUES (?, ?, ?, ?)", b.cites)
    conn.executemany(_SESSION_SQL, b.touched)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'stream_seq'", (b.last_id,))
    conn.execute("COMMIT")


def raw_ingest(
    events: Iterable[dict[str, Any]],
    db_path: Path,
    *,
    batch: int = 500,
    text_cap_bytes: int = 64 * 1024,
) -> IngestFloor:
    """Insert ``events`` with bare executemany and add their search documents with bare
    tantivy; returns the SQLite and tantivy elapsed times."""
    conn = plain_connection(db_path)
    conn.executescript(schema.DDL)
    index_dir = search_schema.search_index_path(db_path)
    index_dir.mkdir(parents=True, exist_ok=True)
    index = search_schema.open_index(index_dir)  # the follower's schema and tokenizer
    writer = index.writer(heap_size=_TANTIVY_HEAP, num_threads=1)
    prep = _Preparer(text_cap_bytes)
    sql_s = tantivy_s = prepare_s = 0.0
    since_commit = 0.0
    count = 0
    buffer: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal sql_s, tantivy_s, prepare_s, since_commit
        t0 = time.perf_counter()
        b = prep.batch(buffer)
        t1 = time.perf_counter()
        _sqlite_apply(conn, b)
        t2 = time.perf_counter()
        for doc in b.docs:
            writer.add_document(doc)
        # Commit at the writer's interval, counted in floor time (SQLite and tantivy).
        since_commit += time.perf_counter() - t1
        if since_commit >= COMMIT_INTERVAL_S:
            writer.commit()
            since_commit = 0.0
        t3 = time.perf_counter()
        prepare_s += t1 - t0
        sql_s += t2 - t1
        tantivy_s += t3 - t2
        buffer.clear()

    try:
        for event in events:
            buffer.append(event)
            count += 1
            if len(buffer) >= batch:
                flush()
        if buffer:
            flush()
        t0 = time.perf_counter()
        writer.commit()
        tantivy_s += time.perf_counter() - t0
        writer.wait_merging_threads()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return IngestFloor(
        events=count,
        seconds=sql_s + tantivy_s,
        sqlite_seconds=sql_s,
        tantivy_seconds=tantivy_s,
        prepare_seconds=prepare_s,
        db_bytes=db_size_bytes(db_path),
    )


def _time_ms(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


# --- the reference FTS5 query --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    cwd: str
    text: str
    kind: str = "mixed"  # the query class (bench.vocabulary.QUERY_CLASSES)


def sample_queries(config: corpus.CorpusConfig, n: int, *, seed: int = 11) -> list[Query]:
    """Realistic mixed queries from the corpus vocabulary, spread over the workspaces."""
    rng = random.Random(seed)
    cwds = corpus.workspace_paths(config)
    queries: list[Query] = []
    while len(queries) < n:
        text = vocabulary.sample_query(rng)
        if _compiles(text):
            queries.append(Query(cwd=rng.choice(cwds), text=text))
    return queries


def class_queries(
    config: corpus.CorpusConfig, per_class: int, *, seed: int = 11, classes: Sequence[str] = ()
) -> list[Query]:
    """``per_class`` queries of each class (``bench.vocabulary.QUERY_CLASSES``), labelled,
    interleaved, over the workspaces."""
    rng = random.Random(seed)
    # Workspaces from their own generator: the texts are the same whatever the count.
    cwd_rng = random.Random(seed + 1)
    cwds = corpus.workspace_paths(config)
    chosen = tuple(classes) or vocabulary.QUERY_CLASSES
    queries: list[Query] = []
    for _ in range(per_class):
        for kind in chosen:
            text = vocabulary.class_query(rng, kind)
            while not _compiles(text):
                text = vocabulary.class_query(rng, kind)
            queries.append(Query(cwd=cwd_rng.choice(cwds), text=text, kind=kind))
    return queries


def _compiles(text: str) -> bool:
    from worker.store.errors import InvalidQuery
    from worker.store.search.query import compile_query

    try:
        compile_query(text)
        legacy_fts.compile_query(text)
    except (InvalidQuery, legacy_fts.InvalidQuery):
        return False
    return True


def reference_match(query: Query) -> str:
    token = legacy_fts.workspace_token(query.cwd)
    return f'ws:"{token}" AND body:({legacy_fts.compile_query(query.text)})'


def reference_match_any(query: Query) -> str:
    """The reference with OR between the words: bm25 over any word, the semantics the new
    search gives a question (function words included; FTS5 has no stop list)."""
    token = legacy_fts.workspace_token(query.cwd)
    any_word = legacy_fts.compile_query(query.text).replace(" AND ", " OR ")
    return f'ws:"{token}" AND body:({any_word})'


def reference_path(db_path: Path) -> Path:
    return Path(f"{db_path}.reference-fts")


def build_reference_fts(events: Iterable[dict[str, Any]], path: Path, *, batch: int = 5000) -> int:
    """The pre-issue-10 FTS5 table (``ws``, ``body``; rowid = the event's order, as the
    store's ids) in its own file, from the same corpus. Returns the events indexed."""
    conn = plain_connection(path)
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5"
        f" (ws, body, tokenize = '{legacy_fts.TOKENIZER}')"
    )
    cwd_of: dict[str, str] = {}
    rows: list[tuple[int, str, str]] = []
    count = 0

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO events_fts (rowid, ws, body) VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
        rows.clear()

    try:
        for count, event in enumerate(events, start=1):
            sid = event["session_id"]
            if event["type"] == "session/start":
                cwd_of[sid] = event["payload"]["cwd"]
            token = legacy_fts.workspace_token(cwd_of[sid])
            rows.append((count, token, legacy_fts.searchable_text(event["payload"])))
            if len(rows) >= batch:
                flush()
        if rows:
            flush()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return count


def ensure_reference_fts(config: corpus.CorpusConfig, db_path: Path) -> Path:
    """The reference FTS5 file beside ``db_path``, built once per corpus."""
    path = reference_path(db_path)
    if path.exists():
        conn = sqlite3.connect(str(path))
        try:
            held = conn.execute("SELECT max(rowid) FROM events_fts").fetchone()[0]
        finally:
            conn.close()
        if held == config.total_events:
            return path
        path.unlink()
    build_reference_fts(corpus.generate(config), path)
    return path


def plain_connection(path: Path) -> sqlite3.Connection:
    """A bare sqlite3 connection with the index's pragmas: a floor pays no ``Database``."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    for pragma in INDEX.statements():
        conn.execute(pragma)
    return conn


class ReferenceFts:
    """The reference floor query on one plain sqlite3 connection of the FTS5 file."""

    def __init__(self, path: Path) -> None:
        self.conn = plain_connection(path)

    def query(self, query: Query, *, any_word: bool = False) -> tuple[float, int]:
        """(seconds, rows) of one run; the MATCH text is built outside the timing."""
        match = reference_match_any(query) if any_word else reference_match(query)
        t0 = time.perf_counter()
        rows = len(self.conn.execute(REFERENCE_FTS_SQL, (match,)).fetchall())
        return time.perf_counter() - t0, rows

    def close(self) -> None:
        self.conn.close()


def reference_fts(path: Path, queries: Sequence[Query], *, rounds: int = 1) -> dict[str, Any]:
    """Run each query ``rounds`` times; latency per query class and overall."""
    fts = ReferenceFts(path)
    samples: dict[str, list[float]] = {}
    rows = 0
    try:
        for query in queries[:3]:  # warm the page cache
            fts.query(query)
        for _ in range(rounds):
            for query in queries:
                seconds, found = fts.query(query)
                samples.setdefault(query.kind, []).append(seconds)
                rows += found
    finally:
        fts.close()
    every = [s for values in samples.values() for s in values]
    return {
        "latency_ms": asdict(Latency.of(every)),
        "by_class": {kind: asdict(Latency.of(values)) for kind, values in samples.items()},
        "rows": rows,
    }


# --- NATS echo -----------------------------------------------------------------------------


async def echo(
    url: str,
    *,
    sequential: int = 2000,
    parallel: int = 20_000,
    in_flight: int = 64,
    size: int = 1024,
    responder: Literal["process", "inline", "work-queue"] = "process",
) -> dict[str, Any]:
    """Raw nats-py request/reply to an echo responder.

    ``process``: the responder is a child process (as the worker is in the tools bench), so
    requester and responder do not share one interpreter; ``inline``: same event loop;
    ``work-queue``: a child that passes each request through a JetStream work-queue stream
    (publish, pull, reply, ack), the search lane's floor. ``parallel`` 0 skips throughput.
    """
    import nats

    from bench.child import ChildProcess, echo_args, work_queue_echo_args

    subject = f"sqbench.echo.{random.getrandbits(40):x}"
    payload = random.Random(5).randbytes(size)
    child: ChildProcess | None = None
    server_nc: Any = None
    sub: Any = None
    if responder != "inline":
        make_args = echo_args if responder == "process" else work_queue_echo_args
        child = ChildProcess(make_args(url, subject))
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
        cpu0 = threads_cpu_s(child.pid) if child is not None else 0.0
        for _ in range(sequential):
            t0 = time.perf_counter()
            await client_nc.request(subject, payload, timeout=5)
            samples.append(time.perf_counter() - t0)
        # The responder's CPU per reply: the floor of the worker's CPU per request.
        cpu_us = (threads_cpu_s(child.pid) - cpu0) / sequential * 1e6 if child else None
        throughput = (
            await _throughput(client_nc, subject, payload, parallel, in_flight) if parallel else 0.0
        )
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
        "responder_cpu_us": cpu_us,
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
        path = ensure_reference_fts(config, db)
        per_class = max(1, queries // len(vocabulary.QUERY_CLASSES))
        fts = reference_fts(path, class_queries(config, per_class))
    async with nats_url(url) as resolved:
        echo_result = await echo(resolved, sequential=echo_sequential, parallel=echo_parallel)
    echo_result.pop("samples")
    measurements = {
        "raw_ingest": {**asdict(ingest), "events_per_s": ingest.events_per_s},
        "reference_fts": fts,
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
        "raw ingest events/s (SQLite + tantivy)": m["raw_ingest"]["events_per_s"],
        "raw ingest s: SQLite / tantivy": (
            f"{m['raw_ingest']['sqlite_seconds']:.2f} / {m['raw_ingest']['tantivy_seconds']:.2f}"
        ),
        "reference FTS5 p50 ms": m["reference_fts"]["latency_ms"]["p50"],
        "reference FTS5 p99 ms": m["reference_fts"]["latency_ms"]["p99"],
        "echo p50 ms": m["echo"]["sequential_ms"]["p50"],
        "echo p99 ms": m["echo"]["sequential_ms"]["p99"],
        "echo req/s (64 in flight)": m["echo"]["throughput_rps"],
    }
    print(format_table(f"floors ({result['params']['sessions']} sessions)", [], info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
