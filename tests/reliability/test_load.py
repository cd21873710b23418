"""Load: ``bench.loadgen.run_load`` against two worker processes while ingestion runs.

Bounded in requests and seconds. Every request is answered (no transport failure), errors
are only the codes this mix expects (foreign and missing ids are NOT_FOUND), each worker's
RSS is flat across the run, and both indexes end up holding exactly the stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest

from bench import corpus
from bench.loadgen import format_report, run_load
from contracts.subjects import Subjects
from tests.reliability._harness import (
    EventFeed,
    WorkerProcess,
    check_ingest,
    ensure_events_stream,
    extra_corpus,
    wait_indexed,
)

# Foreign and missing ids. Not GENERATION_CHANGED: a search racing ingestion keeps its
# snapshot seq; that code is raised only when the index epoch moves (worker/store/sqlite/cursors.py
# resume, worker/tools/operations.py collect_pages), which only a purge does.
EXPECTED_CODES = {"SESSION_QUERY_NOT_FOUND"}


async def load_two_workers(
    nats_url: str,
    subjects: Subjects,
    tmp_path: Path,
    *,
    base: corpus.CorpusConfig,
    requests: int,
    seconds: float,
    extra_sessions: int,
) -> None:
    nc = await nats.connect(nats_url)
    workers = [
        WorkerProcess(nats_url, subjects, tmp_path / f"{w}.sqlite", tmp_path / f"{w}.log", label=w)
        for w in ("A", "B")
    ]
    try:
        await ensure_events_stream(nc.jetstream(), subjects)
        feed = EventFeed(nc, subjects, base)
        feed.start(rate=20_000, burst=200)
        await feed.wait(within=300)
        for w in workers:
            await w.start()
        for w in workers:
            await wait_indexed(w.db, feed.published, within=300)
        extra = extra_corpus(base, extra_sessions, seed=base.seed + 1000)
        report = await run_load(
            nc,
            subjects,
            corpus.plan_sessions(base),
            requests=requests,
            seconds=seconds,
            concurrency=8,
            request_timeout=30.0,
            worker_pids=[w.pid for w in workers],
            rss_interval=0.1,  # >= 8 samples even when the bounded load ends in ~1 s
            extra=extra,
            extra_rate=300.0,
        )
        print(format_report(report))
        total = feed.published + report.extra_events_published
        checks = [await check_ingest(nc, subjects, w.db, total) for w in workers]
        print(json.dumps({w.label: repr(c) for w, c in zip(workers, checks, strict=True)}))
        assert all(w.alive for w in workers), [w.log_tail() for w in workers]
        assert report.sent > 0 and report.answered == report.sent, report.transport_errors
        assert report.transport_errors == {}
        assert set(report.errors_by_code) <= EXPECTED_CODES, report.errors_by_code
        assert report.ok > report.sent * 0.8
        for tool, stats in report.per_tool.items():
            assert stats.ok > 0, tool
        assert report.extra_publish_error is None
        assert report.extra_events_published > 0  # ingestion ran under the load
        assert len(report.rss) == 2
        for rss in report.rss:
            assert rss.alive_at_end and rss.samples >= 8
            assert rss.flat, rss
        for check in checks:
            check.assert_exact(total)
    finally:
        for w in workers:
            await w.stop()
        await nc.close()


async def test_load_on_two_workers_with_ingestion(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    await load_two_workers(
        nats_url,
        subjects,
        tmp_path,
        base=corpus.CorpusConfig(sessions=60, events=80, workspaces=6, seed=7),
        requests=1500,
        seconds=20.0,
        extra_sessions=20,
    )


@pytest.mark.slow
async def test_longer_load_on_two_workers_over_a_larger_corpus(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    await load_two_workers(
        nats_url,
        subjects,
        tmp_path,
        base=corpus.CorpusConfig(sessions=400, events=150, workspaces=24, seed=7),
        requests=10_000,
        seconds=120.0,
        extra_sessions=200,
    )
