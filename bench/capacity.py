"""Capacity and routing bench (issues 19, 29): what a shard costs against a worker of everything.

1. One corpus is published to a fresh events stream of ``--partitions`` partitions (16).
2. Layout A: one worker holding every partition. Layout B: one worker per ``--shards`` set
   (default ``0-7`` and ``8-15``; ``plan:N``: the N sets ``sessionquery partitions plan``
   prints for this stream, balanced by its bytes; replicas of a shard do the same work, so
   one stands for each). The workers ingest one after another; each one's ingest CPU (its
   process's and its writer child's, read from ``/proc``) and its index bytes on disk are
   measured. Capacity (issue 29: the overhead of sharding, not a blind half): the shards
   together hold <= 1.10x layout A's bytes, and each shard <= 1.10x its share of them (A's
   bytes times the shard's share of the events).
3. Routing: with every worker serving, ``session_search`` and ``session_event_read`` are
   sent alternately to layout A's unpartitioned subjects and to layout B's partition of the
   caller's workspace (interleaved, the order swapped every round); target: B's p50 <=
   1.1x A's.

``python -m bench.capacity --sessions 400 --events 250 --workspaces 64 --shards plan:2``
(100k events)
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

import orjson

from bench import corpus
from bench.floors import sample_queries
from bench.report import (
    Check,
    bench_subjects,
    checks_of,
    db_size_bytes,
    format_table,
    layout_subjects,
    nats_url,
    percentile,
    quiet_worker_logs,
    result_dict,
    tree_cpu_s,
    write_result,
)

# Issue 29: the shards of a layout together, and each against its share of the events.
OVERHEAD_TARGET: Final = 1.10
ROUTING_TARGET: Final = 1.1
# ``--shards plan:N``: the N sets the partitions plan command prints for the stream.
PLANNED: Final = "plan:"


@dataclasses.dataclass
class Held:
    """One worker of a layout: what it holds and what ingesting it cost."""

    partitions: str
    subjects: Any
    worker: Any = None
    events: int = 0
    ingest_cpu_s: float = 0.0
    index_bytes: int = 0


async def _ingest(
    nc: Any, held: Held, home: Path, stored: dict[int, int], count: int, timeout_s: float = 3600
) -> None:
    """Start ``held``'s worker on an empty home and wait until it holds its partitions."""
    from contracts.partitions import PartitionSet
    from worker.config import WorkerConfig
    from worker.worker import Worker

    members = PartitionSet.parse(held.partitions, count)
    held.events = sum(1 for k in stored.values() if k in members)
    last = corpus.last_seq_held(stored, held.partitions, count)
    await asyncio.to_thread(home.mkdir, parents=True)
    config = WorkerConfig(
        db_path=home / "index.sqlite", subjects=held.subjects, partitions=held.partitions
    )
    before = tree_cpu_s()
    held.worker = await Worker.start(nc, config)
    started = time.monotonic()
    while (await held.worker.indexed_through() or 0) < last:
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"worker {held.partitions} did not catch up in {timeout_s} s")
        await asyncio.sleep(0.05)
    held.ingest_cpu_s = tree_cpu_s() - before
    held.index_bytes = db_size_bytes(config.db_path)


async def _routing(
    nc: Any,
    whole: Held,
    shards: Sequence[Held],
    config: corpus.CorpusConfig,
    rounds: int,
    count: int,
) -> dict[str, dict[str, float]]:
    """p50/p90 ms of each tool: layout A's unpartitioned subject vs B's partition."""
    from contracts.partitions import partition_of_cwd

    plans = corpus.plan_sessions(config)
    by_cwd: dict[str, list[corpus.SessionPlan]] = {}
    for plan in plans:
        by_cwd.setdefault(plan.cwd, []).append(plan)
    # Queries of workspaces that hold sessions (a small corpus leaves some empty).
    queries = [q for q in sample_queries(config, rounds * 4) if q.cwd in by_cwd][:rounds]
    rng = random.Random(5)
    shard_of = {k: held for held in shards for k in _members(held, count)}
    timings: dict[str, dict[str, list[float]]] = {}
    for i, query in enumerate(queries):
        caller = rng.choice(by_cwd[query.cwd])
        partition = partition_of_cwd(caller.cwd, count)
        for tool, arguments in (
            ("session_search", {"query": query.text}),
            ("session_event_read", {"session_id": caller.session_id, "seq": 2}),
        ):
            routes = [
                ("A", whole.subjects.tool(tool)),
                ("B", shard_of[partition].subjects.tool(tool, partition)),
            ]
            for layout, subject in routes if i % 2 == 0 else routes[::-1]:
                body = orjson.dumps(
                    {
                        "request_id": "r-" + uuid.uuid4().hex[:16],
                        "execution": {"agent": {"session_id": caller.session_id}},
                        "arguments": arguments,
                    }
                )
                started = time.perf_counter()
                msg = await nc.request(subject, body, timeout=30)
                elapsed = (time.perf_counter() - started) * 1000
                if orjson.loads(msg.data).get("status") != "ok":
                    raise RuntimeError(f"{tool} on {subject} did not answer ok: {msg.data[:300]!r}")
                timings.setdefault(tool, {}).setdefault(layout, []).append(elapsed)
    return {
        f"{tool} {layout}": {"p50_ms": percentile(ms, 50), "p90_ms": percentile(ms, 90)}
        for tool, layouts in timings.items()
        for layout, ms in layouts.items()
    }


def _max(
    name: str, measured: float, floor: float, unit: str, target: float = OVERHEAD_TARGET
) -> Check:
    return Check(name, measured, floor, unit, "max", target)


def _members(held: Held, count: int) -> list[int]:
    from contracts.partitions import PartitionSet

    return list(PartitionSet.parse(held.partitions, count))


async def run(
    config: corpus.CorpusConfig,
    *,
    count: int,
    shards: Sequence[str],
    rounds: int,
    url: str | None = None,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    import nats

    from contracts.streams import ensure_events_stream

    shared = bench_subjects("cap")
    whole = Held("all", layout_subjects(shared, "a"))
    events = list(corpus.generate(config))
    plan: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="sq-bench-capacity-", dir=work_dir) as tmp:
        root = Path(tmp)
        async with nats_url(url) as resolved:
            nc = await nats.connect(resolved)
            js = nc.jetstream()
            try:
                await ensure_events_stream(js, shared, partitions=count)
                stored = await corpus.publish_partitioned(js, shared, events, count)
                if len(shards) == 1 and shards[0].startswith(PLANNED):
                    plan = await _planned(js, shared, int(shards[0].removeprefix(PLANNED)))
                    shards = [s["partitions"] for s in plan["shards"]]
                parts = [Held(text, layout_subjects(shared, "b")) for text in shards]
                try:
                    for i, held in enumerate((whole, *parts)):
                        await _ingest(nc, held, root / f"w{i}", stored, count)
                    latency = await _routing(nc, whole, parts, config, rounds, count)
                finally:
                    for held in (whole, *parts):
                        if held.worker is not None:
                            await held.worker.stop()
                await js.delete_stream(shared.events_stream)
            finally:
                await nc.close()
    checks: list[Check] = []
    covered = sorted(k for held in parts for k in _members(held, count))
    if covered == list(range(count)):  # the shards are a layout: each partition once
        total = sum(held.index_bytes for held in parts)
        checks.append(
            _max("index bytes, the shards together vs all", total, whole.index_bytes, "B")
        )
    for held in parts:
        share = held.events / whole.events if whole.events else 0.0
        name = f"index bytes, shard {held.partitions} vs its share ({share:.1%})"
        checks.append(_max(name, held.index_bytes, whole.index_bytes * share, "B"))
    for tool in ("session_search", "session_event_read"):
        a_ms, b_ms = latency[f"{tool} A"]["p50_ms"], latency[f"{tool} B"]["p50_ms"]
        name = f"{tool} p50, partitioned vs unpartitioned"
        checks.append(_max(name, b_ms, a_ms, "ms", ROUTING_TARGET))
    measurements = {
        "events": len(events),
        "workers": {
            held.partitions: {
                "events": held.events,
                "ingest_cpu_s": held.ingest_cpu_s,
                "index_bytes": held.index_bytes,
            }
            for held in (whole, *parts)
        },
        "latency": latency,
        "plan": plan,
    }
    params = {**asdict(config), "partitions": count, "shards": list(shards), "rounds": rounds}
    return result_dict("capacity", params=params, checks=checks, measurements=measurements)


async def _planned(js: Any, subjects: Any, shards: int) -> dict[str, Any]:
    """What ``sessionquery partitions plan --workers N`` prints for the stream (its report)."""
    from worker.commands.partition_plan import balance
    from worker.commands.partitions import plan_report, read_partition_sizes

    sizes = await read_partition_sizes(js, subjects)
    return plan_report(sizes, balance(sizes.bytes, shards), replicas=1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=__doc__)
    corpus.add_size_arguments(parser, sessions=400, events=250)
    parser.add_argument("--partitions", type=int, default=16, help="the stream's count")
    parser.add_argument(
        "--shards",
        default="0-7;8-15",
        help="partition sets, ';' between; or plan:N, the N sets `sessionquery partitions"
        " plan --workers N` prints for the stream (balanced by bytes)",
    )
    parser.add_argument("--rounds", type=int, default=200, help="requests per tool and layout")
    parser.add_argument("--nats-url", default=None)
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    logs = quiet_worker_logs("capacity")
    result = asyncio.run(
        run(
            config,
            count=args.partitions,
            shards=args.shards.split(";"),
            rounds=args.rounds,
            url=args.nats_url,
        )
    )
    workers = result["measurements"]["workers"]
    info = {
        f"worker {name}: events / ingest CPU s / index MiB": (
            f"{w['events']:,} / {w['ingest_cpu_s']:.1f} / {w['index_bytes'] / 2**20:.1f}"
        )
        for name, w in workers.items()
    }
    whole = workers["all"]
    for name, w in workers.items():
        if name != "all" and whole["events"] and whole["ingest_cpu_s"]:
            share = w["events"] / whole["events"]
            info[f"worker {name}: ingest CPU vs its share"] = (
                f"{w['ingest_cpu_s'] / (whole['ingest_cpu_s'] * share):.2f}x"
            )
    plan = result["measurements"]["plan"]
    if plan is not None:
        info["plan: stream bytes, max deviation from the mean"] = f"{plan['max_deviation']:.2%}"
        info["plan: partition sizes read in s"] = plan["read_seconds"]
    for name, figures in result["measurements"]["latency"].items():
        info[f"{name} p50 / p90 ms"] = f"{figures['p50_ms']:.2f} / {figures['p90_ms']:.2f}"
    title = (
        f"capacity: {config.sessions} sessions x {config.events} events,"
        f" {args.partitions} partitions"
    )
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}\nworker log: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
