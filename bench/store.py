"""Store bench: search p50/p99 through the provider vs the raw FTS5 query, and DB size.

The index is built through the real writer (``bench.corpus.write_index``). Queries are
drawn from the corpus vocabulary across the workspaces. For each query the raw floor
(``bench.floors.RawFts``: the same ``ws:"<token>" AND body:(...)`` MATCH, top 100 by bm25
with snippet) and ``SqliteSessionStore.search_sessions`` (first page, grouped by session)
run back to back on the same database, in alternating order per round, so drift of a shared
machine hits both alike.

Targets: provider p50 and p99 <= 1.2x the floor's. Also reports DB size per million events.
``python -m bench.store --sessions 400 --events 250 [--db PATH to keep or reuse the index]``
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus, floors
from bench.report import (
    Check,
    Latency,
    checks_of,
    db_size_bytes,
    format_table,
    result_dict,
    write_result,
)

TARGET: Final = 1.2
# The tool follows pages up to 100 results; one first page of 100 is what it needs most.
DEFAULT_PAGE_SIZE: Final = 100


def _stored_events(db: Path) -> int | None:
    if not db.exists():
        return None
    conn = sqlite3.connect(str(db))
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def _checkpoint(db: Path) -> None:
    conn = sqlite3.connect(str(db))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


async def ensure_index(config: corpus.CorpusConfig, db: Path) -> tuple[int, float]:
    """(events in the index, seconds spent building it; 0 when an existing one fit)."""
    count = _stored_events(db)
    if count is not None:
        if count == config.total_events:
            return count, 0.0
        raise SystemExit(f"{db} holds {count} events, not {config.total_events}: remove it")
    t0 = time.perf_counter()
    built = await corpus.write_index(config, db)
    elapsed = time.perf_counter() - t0
    _checkpoint(db)
    return built, elapsed


async def measure(
    db: Path,
    queries: Sequence[floors.Query],
    *,
    rounds: int = 2,
    page_size: int = DEFAULT_PAGE_SIZE,
    readers: int = 4,
) -> dict[str, Any]:
    from worker.signals import ExecutionSignal
    from worker.store.protocol import EventFilter, ServiceLimits, SessionFilter
    from worker.store.sqlite import SqliteSessionStore

    store = await SqliteSessionStore.open(
        db, readers=readers, limits=ServiceLimits(max_page_size=max(page_size, 100))
    )
    raw = floors.RawFts(db)
    provider_s: list[float] = []
    raw_s: list[float] = []
    hits = raw_rows = 0

    # Queries where one side found something and the other nothing: a bench that times an
    # empty answer on one side only would be comparing different work.
    disagreements: list[str] = []

    async def provider(query: floors.Query) -> int:
        nonlocal hits
        signal = ExecutionSignal.after(30.0)
        t0 = time.perf_counter()
        page = await store.search_sessions(
            query.text,
            cwd=query.cwd,
            sessions=SessionFilter(),
            events=EventFilter(),
            cursor=None,
            page_size=page_size,
            signal=signal,
        )
        provider_s.append(time.perf_counter() - t0)
        signal.close()
        hits += len(page.hits)
        return len(page.hits)

    def floor(query: floors.Query) -> int:
        nonlocal raw_rows
        seconds, rows = raw.query(query)
        raw_s.append(seconds)
        raw_rows += rows
        return rows

    try:
        for query in queries[:3]:  # warm both paths' caches alike
            floor(query)
            await provider(query)
        provider_s.clear()
        raw_s.clear()
        hits = raw_rows = 0
        for round_no in range(rounds):
            for query in queries:
                if round_no % 2 == 0:
                    rows = floor(query)
                    found = await provider(query)
                else:
                    found = await provider(query)
                    rows = floor(query)
                if round_no == 0 and bool(rows) != bool(found):
                    disagreements.append(query.text)
    finally:
        raw.close()
        await store.close()
    return {
        "provider_ms": asdict(Latency.of(provider_s)),
        "raw_ms": asdict(Latency.of(raw_s)),
        "provider_hits": hits,
        "raw_rows": raw_rows,
        "disagreements": disagreements,
    }


async def measure_paging(
    db: Path, queries: Sequence[floors.Query], *, page_size: int, results: int = 100
) -> dict[str, Any]:
    """What a search tool pays to collect ``results`` hits in pages of ``page_size``
    (following cursors, as the tool does): informational, no target."""
    from worker.signals import ExecutionSignal
    from worker.store.protocol import EventFilter, SessionFilter
    from worker.store.sqlite import SqliteSessionStore

    store = await SqliteSessionStore.open(db, readers=1)
    samples: list[float] = []
    pages = 0
    try:
        for query in queries:
            t0 = time.perf_counter()
            cursor: str | None = None
            collected = 0
            while True:
                signal = ExecutionSignal.after(30.0)
                page = await store.search_sessions(
                    query.text,
                    cwd=query.cwd,
                    sessions=SessionFilter(),
                    events=EventFilter(),
                    cursor=cursor,
                    page_size=page_size,
                    signal=signal,
                )
                signal.close()
                pages += 1
                collected += len(page.hits)
                cursor = page.next_cursor
                if cursor is None or collected >= results:
                    break
            samples.append(time.perf_counter() - t0)
    finally:
        await store.close()
    return {"page_size": page_size, "pages": pages, "latency_ms": asdict(Latency.of(samples))}


async def run(
    config: corpus.CorpusConfig,
    *,
    queries: int = 200,
    rounds: int = 2,
    page_size: int = DEFAULT_PAGE_SIZE,
    db: Path | None = None,
    work_dir: Path | None = None,
    follow_pages: int | None = None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sq-bench-store-", dir=work_dir) as tmp:
        path = db or Path(tmp) / "index.sqlite"
        events, build_s = await ensure_index(config, path)
        size = db_size_bytes(path)
        sample = floors.sample_queries(config, queries)
        m = await measure(path, sample, rounds=rounds, page_size=page_size)
        if follow_pages:
            m["paged"] = await measure_paging(path, sample, page_size=follow_pages)
    provider, raw = m["provider_ms"], m["raw_ms"]
    checks = [
        Check("search p50 (provider vs raw)", provider["p50"], raw["p50"], "ms", "max", TARGET),
        Check("search p99 (provider vs raw)", provider["p99"], raw["p99"], "ms", "max", TARGET),
    ]
    measurements = {
        **m,
        "events": events,
        "build_s": build_s,
        "build_events_per_s": events / build_s if build_s else None,
        "db_bytes": size,
        "db_mib_per_million_events": size / 2**20 / events * 1e6 if events else None,
        "queries": [asdict(q) for q in sample[:20]],
    }
    params = {**asdict(config), "queries": queries, "rounds": rounds, "page_size": page_size}
    return result_dict("store", params=params, checks=checks, measurements=measurements)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store", description=__doc__)
    corpus.add_size_arguments(parser)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--page-size", type=int, default=DEFAULT_PAGE_SIZE)
    parser.add_argument("--db", type=Path, help="index file to build once and reuse")
    parser.add_argument(
        "--follow-pages",
        type=int,
        metavar="N",
        help="also time collecting 100 results in provider pages of N, as the tool does",
    )
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    result = asyncio.run(
        run(
            config,
            queries=args.queries,
            rounds=args.rounds,
            page_size=args.page_size,
            db=args.db,
            follow_pages=args.follow_pages,
        )
    )
    m = result["measurements"]
    info: dict[str, Any] = {
        "events": m["events"],
        "index build events/s (writer)": m["build_events_per_s"] or "reused",
        "DB MiB per million events": m["db_mib_per_million_events"],
        "samples per side": m["provider_ms"]["n"],
        "provider hits / raw rows": f"{m['provider_hits']} / {m['raw_rows']}",
        "queries found by one side only": len(m["disagreements"]),
    }
    if "paged" in m:
        paged = m["paged"]
        info[f"100 results in pages of {paged['page_size']}: p50 / p99 ms"] = (
            f"{paged['latency_ms']['p50']:.1f} / {paged['latency_ms']['p99']:.1f}"
            f" ({paged['pages']} pages)"
        )
    title = f"store: {config.sessions} sessions x {config.events} events"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
