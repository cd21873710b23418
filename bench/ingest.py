"""Ingest bench: events/s through the real ingestion path vs raw sqlite3 executemany.

1. Publish the corpus to a fresh SESSIONS stream (``Nats-Msg-Id`` dedupe, bounded acks).
2. Start the worker's ``EventConsumer`` (pull consumer -> ingest actor -> index writer) on a
   fresh index and time it until the store holds the stream's last sequence and the search
   index's committed position covers the store's last event (searchable, not only stored).
3. Floor, same run: ``bench.floors.raw_ingest`` of the same corpus into a fresh file
   (SQLite executemany plus tantivy add_document and commits, the new layout's floor).

Target: actor events/s >= 0.5x the floor.
``python -m bench.ingest --sessions 400 --events 250``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus, floors
from bench.child import wait_searchable
from bench.report import (
    Check,
    bench_subjects,
    checks_of,
    db_size_bytes,
    format_table,
    nats_url,
    quiet_worker_logs,
    result_dict,
    write_result,
)

TARGET: Final = 0.5


async def run(
    config: corpus.CorpusConfig,
    *,
    url: str | None = None,
    work_dir: Path | None = None,
    timeout_s: float = 1800.0,
    writer_mode: str | None = None,
) -> dict[str, Any]:
    import nats

    from worker.config import WorkerConfig
    from worker.replica.ingest_consumer import EventConsumer
    from worker.store.index.writer_process import open_index_writer

    defaults = WorkerConfig()
    subjects = bench_subjects("ing")
    with tempfile.TemporaryDirectory(prefix="sq-bench-ingest-", dir=work_dir) as tmp:
        db = Path(tmp) / "index.sqlite"
        async with nats_url(url) as resolved:
            nc = await nats.connect(resolved)
            js = nc.jetstream()
            try:
                t0 = time.perf_counter()
                published = await corpus.publish_corpus(js, subjects, config)
                publish_s = time.perf_counter() - t0
                last_seq = (await js.stream_info(subjects.events_stream)).state.last_seq

                writer = await open_index_writer(
                    db,
                    mode=writer_mode or defaults.ingest_writer,
                    text_cap_bytes=defaults.text_cap_bytes,
                    max_event_bytes=defaults.max_event_bytes,
                )
                consumer = EventConsumer(
                    nc,
                    writer,
                    subjects=subjects,
                    batch_size=defaults.ingest_batch_size,
                    batch_ms=defaults.ingest_batch_ms,
                )
                t1 = time.perf_counter()
                task = asyncio.create_task(consumer.run())
                try:
                    await asyncio.wait_for(consumer.actor.wait_applied(last_seq), timeout_s)
                    stored_s = time.perf_counter() - t1
                    await wait_searchable(db, timeout_s)
                    ingest_s = time.perf_counter() - t1
                finally:
                    consumer.stop()
                    await task
                    stats = consumer.actor.stats
                    await writer.close()
                await js.delete_stream(subjects.events_stream)
            finally:
                await nc.close()
        actor_bytes = db_size_bytes(db)
        floor = floors.raw_ingest(
            corpus.generate(config), Path(tmp) / "floor.sqlite", batch=defaults.ingest_batch_size
        )
    actor_rate = stats.applied / ingest_s if ingest_s else 0.0
    checks = [
        Check(
            "ingest events/s (actor vs raw)",
            measured=actor_rate,
            floor=floor.events_per_s,
            unit="events/s",
            kind="min",
            target=TARGET,
        )
    ]
    measurements = {
        "published": published,
        "publish_s": publish_s,
        "publish_events_per_s": published / publish_s if publish_s else 0.0,
        "stream_last_seq": last_seq,
        "actor": {
            "applied": stats.applied,
            "duplicates": stats.duplicates,
            "dead_lettered": stats.dead_lettered,
            "batches": stats.batches,
            "seconds": ingest_s,
            "stored_s": stored_s,
            "events_per_s": actor_rate,
            "db_bytes": actor_bytes,
        },
        "floor": {**asdict(floor), "events_per_s": floor.events_per_s},
    }
    params = {**asdict(config), "writer": writer_mode or defaults.ingest_writer}
    return result_dict("ingest", params=params, checks=checks, measurements=measurements)


def _with_preparation(m: dict[str, Any]) -> str:
    floor = m["floor"]
    seconds = floor["seconds"] + floor["prepare_seconds"]
    rate = floor["events"] / seconds if seconds else 0.0
    ratio = m["actor"]["events_per_s"] / rate if rate else 0.0
    return f"{rate:,.0f} ({ratio:.2f}x)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__)
    corpus.add_size_arguments(parser)
    parser.add_argument("--nats-url", default=None)
    parser.add_argument("--timeout", type=float, default=1800.0, help="bound on the ingest wait")
    parser.add_argument(
        "--writer",
        choices=("process", "thread"),
        default=None,
        help="where the index writer runs (default: the worker's, process)",
    )
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    logs = quiet_worker_logs("ingest")
    result = asyncio.run(
        run(config, url=args.nats_url, timeout_s=args.timeout, writer_mode=args.writer)
    )
    m = result["measurements"]
    info = {
        "events": config.total_events,
        "publish events/s": m["publish_events_per_s"],
        "actor seconds": m["actor"]["seconds"],
        "actor seconds until stored (before the search index)": m["actor"]["stored_s"],
        "floor seconds (SQLite + tantivy)": (
            f"{m['floor']['seconds']:.2f} = {m['floor']['sqlite_seconds']:.2f}"
            f" + {m['floor']['tantivy_seconds']:.2f}"
        ),
        # For the record, not the target: the floor with the single-process preparation
        # (JSON parse, searchable text, analysed fields) that the actor also does.
        "floor with preparation events/s (actor ratio)": _with_preparation(m),
        "index MiB (actor / floor)": (
            f"{m['actor']['db_bytes'] / 2**20:.1f} / {m['floor']['db_bytes'] / 2**20:.1f}"
        ),
        "dead-lettered": m["actor"]["dead_lettered"],
    }
    title = f"ingest: {config.sessions} sessions x {config.events} events"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}\nworker log: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
