"""The serving process's memory after an ingest burst, against a worker restarted on it.

``bench.tools`` checks the same ratio among many others (~3 min at 100k); this runs only
its ingest: publish the corpus, start a worker child, wait until the events are stored and
searchable, idle ``--settle`` seconds (the end-of-burst release runs after 1 s idle), read
its RssAnon and where it is (``bench.memory_probe.smaps_summary``); then stop it, start a
worker on the same index and read the same. With ``--probe PREFIX`` both workers also write
``bench.memory_probe``'s in-process report (glibc arenas, objects by type; allocation sites
with ``--trace FRAMES``) to ``PREFIX.<pid>.1.json``.

``python -m bench.ingest_memory --sessions 400 --events 250``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench import corpus, report
from bench.child import MEMORY_ENV, ChildProcess, wait_ingested, wait_searchable, worker_args
from bench.loadgen import read_rss_kib
from bench.memory_probe import TRACE_ENV, smaps_summary

TARGET: Final = 1.5  # RssAnon after ingest <= 1.5x a restarted worker's (issue 31)


async def run(
    config: corpus.CorpusConfig,
    *,
    url: str | None = None,
    settle_s: float = 3.0,
    timeout_s: float = 1800.0,
    probe: str | None = None,
    trace_frames: int = 0,
) -> dict[str, Any]:
    import nats

    probe_env = {MEMORY_ENV: probe, TRACE_ENV: str(trace_frames)} if probe else {}
    subjects = report.bench_subjects("mem")
    m: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sq-bench-mem-") as tmp:
        db = Path(tmp) / "index.sqlite"
        async with report.nats_url(url) as resolved:
            nc = await nats.connect(resolved)
            js = nc.jetstream()
            # With --probe the worker's log is kept beside the reports.
            log_path = Path(f"{probe}.worker.log") if probe else Path(tmp) / "worker.log"
            worker = ChildProcess(worker_args(resolved, db, subjects), log_path, probe_env)
            try:
                m["events"] = await corpus.publish_corpus(js, subjects, config)
                last_seq = (await js.stream_info(subjects.events_stream)).state.last_seq
                t0 = time.perf_counter()
                pid = await worker.start()
                await wait_ingested(db, last_seq, timeout_s)
                await wait_searchable(db, timeout_s)
                m["ingest_s"] = time.perf_counter() - t0
                m["after_ingest"] = await _settled(pid, settle_s, probe)
                await worker.stop()
                m["restarted"] = await _settled(await worker.start(), settle_s, probe)
            finally:
                await worker.stop()
                with contextlib.suppress(Exception):
                    await js.delete_stream(subjects.events_stream)
                await nc.close()
    after, restarted = m["after_ingest"]["rss_anon_mib"], m["restarted"]["rss_anon_mib"]
    checks = [
        report.Check(
            "worker RssAnon after ingest vs restarted",
            measured=after,
            floor=restarted,
            unit="MiB",
            kind="max",
            target=TARGET,
        )
    ]
    params = {"sessions": config.sessions, "events": config.events, "settle_s": settle_s}
    return report.result_dict("ingest_memory", params=params, checks=checks, measurements=m)


async def _settled(pid: int, settle_s: float, probe: str | None) -> dict[str, float]:
    """The worker's RssAnon and its smaps summary after ``settle_s`` idle."""
    await asyncio.sleep(settle_s)
    found = read_rss_kib(pid)
    out = {"rss_anon_mib": found[0] / 1024 if found else 0.0, **smaps_summary(pid)}
    if probe:
        os.kill(pid, signal.SIGUSR1)
        await asyncio.sleep(1.0)  # the report is written on the worker's loop
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest_memory", description=__doc__)
    corpus.add_size_arguments(parser, sessions=400, events=250)
    parser.add_argument("--nats-url", default=None)
    parser.add_argument("--settle", type=float, default=3.0, help="idle seconds before reading")
    parser.add_argument("--timeout", type=float, default=1800.0, help="bound on the ingest wait")
    parser.add_argument("--probe", default=None, help="path prefix for in-process reports")
    parser.add_argument("--trace", type=int, default=0, help="with --probe: tracemalloc frames")
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    result = asyncio.run(
        run(
            config,
            url=args.nats_url,
            settle_s=args.settle,
            timeout_s=args.timeout,
            probe=args.probe,
            trace_frames=args.trace,
        )
    )
    m = result["measurements"]
    info: dict[str, Any] = {"events": m["events"], "ingest s": m["ingest_s"]}
    for key in sorted(set(m["after_ingest"]) | set(m["restarted"])):
        info[f"{key} (after ingest / restarted)"] = (
            f"{m['after_ingest'].get(key, 0.0):.1f} / {m['restarted'].get(key, 0.0):.1f}"
        )
    print(report.format_table("ingest memory", report.checks_of(result), info))
    print(f"\nresult: {report.write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
