"""Scale-out bench (issue 19): aggregate exact-read throughput with 1, 2 and 4 shards.

For each worker count N, a fresh stream of 16 partitions holds the same corpus and N worker
processes each hold 16/N partitions (``0-15``; ``0-7``, ``8-15``; ...). The load generator
(one process, routing each caller by its cwd) sends ``session_event_read`` requests with
``--concurrency`` in flight for ``--requests`` requests; the figure is answered requests
per second, with each worker's CPU seconds (its writer child's too), the load generator's
and the nats-server's from ``/proc`` beside it: the median of ``--repeat`` runs, every
layout up at once and measured in turn. The curve is printed against N = 1 (a ratio, not
a target): on a machine with fewer cores than workers plus the load generator, it
flattens where the cores run out.

``python -m bench.scale_out --sessions 400 --events 250`` (100k events)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus
from bench.report import (
    format_table,
    process_cpu_s,
    quiet_worker_logs,
    result_dict,
    tree_cpu_s,
    write_result,
)

COUNT: Final = 16
WORKER_COUNTS: Final = (1, 2, 4)


def shard_sets(workers: int, count: int = COUNT) -> list[str]:
    """``workers`` contiguous, equal partition sets covering ``count`` partitions."""
    width = count // workers
    return [f"{i * width}-{(i + 1) * width - 1}" for i in range(workers)]


async def measure(fleet: Any, plans: Any, *, requests: int, concurrency: int) -> dict[str, Any]:
    """One load run against an open fleet: answered reads per second and CPU seconds of each
    worker (with its writer child) and of the load generator (this process alone)."""
    from bench.loadgen import run_load

    before = [tree_cpu_s(pid) for pid in fleet.pids]
    generator_before, tree_before = process_cpu_s(os.getpid()), tree_cpu_s()
    report = await run_load(
        fleet.nc,
        fleet.subjects,
        plans,
        requests=requests,
        seconds=600,
        concurrency=concurrency,
        mix={"session_event_read": 1.0},
        foreign_share=0.0,
    )
    workers = [tree_cpu_s(pid) - b for pid, b in zip(fleet.pids, before, strict=True)]
    generator = process_cpu_s(os.getpid()) - generator_before
    return {
        "answered_per_s": report.answered / report.seconds,
        "ok": report.ok,
        "sent": report.sent,
        "seconds": report.seconds,
        "worker_cpu_s": workers,
        "generator_cpu_s": generator,
        # The rest of this process's tree: the nats-servers it started (the other layouts'
        # workers sit idle meanwhile); nothing with --nats-url.
        "server_cpu_s": tree_cpu_s() - tree_before - generator - sum(workers),
    }


async def run(
    config: corpus.CorpusConfig,
    *,
    requests: int,
    concurrency: int,
    repeat: int = 3,
    url: str | None = None,
    work_dir: Path | None = None,
    counts: Sequence[int] = WORKER_COUNTS,
) -> dict[str, Any]:
    from bench.child import local_fleet

    plans = corpus.plan_sessions(config)
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    async with contextlib.AsyncExitStack() as stack:
        fleets = {
            n: await stack.enter_async_context(
                local_fleet(config, workers=n, url=url, work_dir=work_dir, shards=shard_sets(n))
            )
            for n in counts
        }
        # Every layout is up at once and measured in turn, the order rotated each round, so
        # a change in what else the machine runs falls on all of them alike.
        for round_ in range(repeat):
            order = list(counts[round_ % len(counts) :]) + list(counts[: round_ % len(counts)])
            for n in order:
                runs[n].append(
                    await measure(fleets[n], plans, requests=requests, concurrency=concurrency)
                )
    layouts = [_median_layout(n, runs[n]) for n in counts]
    base = layouts[0]["answered_per_s"]
    for layout in layouts:
        layout["vs_one"] = layout["answered_per_s"] / base if base else None
    params = {**asdict(config), "requests": requests, "concurrency": concurrency}
    params["repeat"] = repeat
    # A curve to report, not a target to hold: no checks.
    return result_dict("scale_out", params=params, checks=[], measurements={"layouts": layouts})


def _median_layout(workers: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median throughput, with every run's throughput beside it."""
    ranked = sorted(runs, key=lambda one: float(one["answered_per_s"]))
    middle = ranked[len(ranked) // 2]
    return {
        "workers": workers,
        "shards": shard_sets(workers),
        **middle,
        "runs_per_s": [one["answered_per_s"] for one in runs],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    corpus.add_size_arguments(parser, sessions=400, events=250)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="load runs per layout (median)")
    parser.add_argument("--nats-url", default=None)
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    logs = quiet_worker_logs("scale_out")
    result = asyncio.run(
        run(
            config,
            requests=args.requests,
            concurrency=args.concurrency,
            repeat=args.repeat,
            url=args.nats_url,
        )
    )
    info = {
        f"{layout['workers']} worker(s) {', '.join(layout['shards'])}": (
            f"{layout['answered_per_s']:.0f} reads/s ({layout['vs_one']:.2f}x of 1),"
            f" runs {' / '.join(f'{r:.0f}' for r in layout['runs_per_s'])},"
            f" {layout['ok']} of {layout['sent']} ok, worker CPU s "
            + " / ".join(f"{c:.1f}" for c in layout["worker_cpu_s"])
            + f", load generator CPU s {layout['generator_cpu_s']:.1f}"
            + f", nats-server CPU s {layout['server_cpu_s']:.1f}"
        )
        for layout in result["measurements"]["layouts"]
    }
    print(format_table("scale-out: session_event_read", [], info))
    print(f"\nresult: {write_result(result)}\nworker log: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
