"""``sessionquery partitions plan``: balanced ``--partitions`` values for a sharded layout.

``--workers W --replicas R`` means W worker processes in all, making W/R shards of R
replicas each (the replicas of a shard hold the same set and answer the same requests).
The command reads each partition's size from the events stream and prints W/R partition
sets balanced by bytes (``partition_plan.balance``), each within ±5% of the mean when the
partitions allow it, and the ``--partitions`` value of every worker.

Sizes: JetStream reports per-subject message counts but not bytes, so the command reads
the stream once through an ordered consumer with ``headers_only``: the server sends each
message's subject (its partition is the subject's first token after the prefix) and its
payload size (``Nats-Msg-Size``) without the payload. That is exact, costs the server a
read of the stream's index and the client one small message per event (progress on
stderr when it takes more than a second); docs/operations.md gives the time at 1M events.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from worker.failures import RuntimeFailure

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1
EXIT_USAGE: Final = 2
# A scan that receives nothing for this long has lost the consumer: it stops and says so.
SCAN_STALL_S: Final = 30.0
PROGRESS_EVERY_S: Final = 2.0


class SizesUnavailable(RuntimeFailure):
    """The stream's partition sizes cannot be read (no stream, no partitions, a stall)."""


@dataclass(frozen=True, slots=True)
class PartitionSizes:
    """What the stream holds per partition: events and their payload bytes."""

    stream: str
    count: int
    events: tuple[int, ...]
    bytes: tuple[int, ...]
    last_seq: int
    read_seconds: float


async def read_partition_sizes(
    js: Any, subjects: Any, progress: Callable[[int, int], None] | None = None
) -> PartitionSizes:
    """Each partition's events and payload bytes, up to the stream's last seq at the start.
    ``progress(read, total)`` is called now and then during a long read."""
    from nats.js.api import DeliverPolicy
    from nats.js.errors import NotFoundError

    from contracts.streams import UnpartitionedStream, partition_count_of

    started = time.monotonic()
    try:
        info = await js.stream_info(subjects.events_stream)
    except NotFoundError:
        raise SizesUnavailable(
            f"no stream {subjects.events_stream} on this server: nothing to plan (publish"
            " events first, or name it with --stream)"
        ) from None
    try:
        count = partition_count_of(info)
    except UnpartitionedStream as exc:
        raise SizesUnavailable(str(exc)) from None
    events = [0] * count
    sizes = [0] * count
    last_seq, total = int(info.state.last_seq), int(info.state.messages)
    if total == 0:
        return PartitionSizes(info.config.name, count, tuple(events), tuple(sizes), last_seq, 0.0)
    # The partition is this token of a stored subject (<prefix>.<partition>.<key>.<session>).
    token = len(subjects.events_prefix.split("."))
    done = asyncio.Event()
    read = 0
    latest = time.monotonic()

    async def on_message(msg: Any) -> None:
        nonlocal read, latest
        k = int(msg.subject.split(".")[token])
        events[k] += 1
        sizes[k] += int((msg.headers or {}).get("Nats-Msg-Size", 0))
        read += 1
        latest = time.monotonic()
        meta = msg.metadata
        # The last seq at the start, or nothing left (it was removed meanwhile).
        if meta.sequence.stream >= last_seq or meta.num_pending == 0:
            done.set()

    sub = await js.subscribe(
        subjects.events_wildcard,
        stream=info.config.name,
        cb=on_message,
        ordered_consumer=True,
        headers_only=True,
        deliver_policy=DeliverPolicy.ALL,
    )
    try:
        shown = time.monotonic()
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), timeout=0.5)
            now = time.monotonic()
            if now - latest > SCAN_STALL_S:
                raise SizesUnavailable(
                    f"reading {info.config.name}'s sizes stalled after {read:,} of"
                    f" {total:,} events (nothing for {SCAN_STALL_S:.0f} s)"
                )
            if progress is not None and now - shown >= PROGRESS_EVERY_S:
                progress(read, total)
                shown = now
    finally:
        await sub.unsubscribe()
    return PartitionSizes(
        info.config.name,
        count,
        tuple(events),
        tuple(sizes),
        last_seq,
        time.monotonic() - started,
    )


# -- the command ---------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config_flags import add_subject_arguments
    from worker.transport.flags import add_nats_arguments

    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    plan = actions.add_parser(
        "plan",
        help="balanced --partitions values for W workers with R replicas per shard",
        description=(
            "Read each partition's size (its events' bytes) from the events stream and print"
            " W/R partition sets balanced by bytes (each within ±5% of the mean when the"
            " partitions allow it) and the --partitions value of each of the W workers:"
            " W workers make W/R shards, each served by R workers holding the same set."
            " Exit 0 when every set is within ±5%, 1 when not (the best plan is still"
            " printed, with why) or when the stream cannot be read, 2 on bad arguments."
        ),
    )
    plan.add_argument(
        "--workers", type=int, required=True, metavar="W", help="worker processes in all"
    )
    plan.add_argument(
        "--replicas", type=int, default=1, metavar="R",
        help="workers per shard, holding the same partitions (default 1); W must be a"
        " multiple of R",
    )  # fmt: skip
    plan.add_argument("--json", action="store_true", help="one JSON object")
    add_subject_arguments(plan)
    add_nats_arguments(plan)


def run(args: argparse.Namespace) -> int:
    workers, replicas = args.workers, args.replicas
    if workers < 1 or replicas < 1:
        return _usage("--workers and --replicas must be at least 1")
    if workers % replicas:
        return _usage(
            f"--workers {workers} is not a multiple of --replicas {replicas}: W workers make"
            " W/R shards of R replicas each"
        )
    try:
        sizes = asyncio.run(_read(args))
    except RuntimeFailure as exc:
        print(f"sessionquery partitions plan: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    from worker.commands.partition_plan import PlanError, balance

    try:
        plan = balance(sizes.bytes, workers // replicas)
    except PlanError as exc:
        return _usage(str(exc))
    report = plan_report(sizes, plan, replicas)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        print("\n".join(format_plan(report)))
    return EXIT_OK if plan.within_tolerance else EXIT_PROBLEM


def _usage(message: str) -> int:
    print(f"sessionquery partitions plan: {message}", file=sys.stderr)
    return EXIT_USAGE


async def _read(args: argparse.Namespace) -> PartitionSizes:
    from worker.config_flags import subjects_from_args
    from worker.transport.connection import connect_reporting
    from worker.transport.flags import options_from_args

    options = options_from_args(args)
    if options.url is None:
        raise SizesUnavailable("no NATS URL given (--nats-url or NATS_URL)")
    import nats.errors

    from worker.transport.connection import describe_error

    nc = await connect_reporting(options, attempts=1, name="sessionquery-partitions")
    subjects = subjects_from_args(args)
    try:
        return await read_partition_sizes(nc.jetstream(), subjects, _progress)
    except (nats.errors.Error, TimeoutError) as exc:  # JetStream off, no leader, a timeout
        raise SizesUnavailable(f"stream {subjects.events_stream}: {describe_error(exc)}") from None
    finally:
        await nc.close()


def _progress(read: int, total: int) -> None:
    print(f"reading partition sizes: {read:,} of {total:,} events", file=sys.stderr, flush=True)


def plan_report(sizes: PartitionSizes, plan: Any, replicas: int) -> dict[str, Any]:
    """The plan as one JSON-able object (what ``--json`` prints and the text shows)."""
    from contracts.partitions import PartitionSet

    shards = []
    for i, members in enumerate(plan.sets):
        first = i * replicas + 1
        shards.append(
            {
                "shard": i + 1,
                "partitions": str(PartitionSet(sizes.count, frozenset(members))),
                "members": list(members),
                "events": sum(sizes.events[k] for k in members),
                "bytes": plan.weights[i],
                "deviation": round(plan.deviation(i), 6),
                "workers": list(range(first, first + replicas)),
            }
        )
    return {
        "stream": sizes.stream,
        "partition_count": sizes.count,
        "last_seq": sizes.last_seq,
        "events": sum(sizes.events),
        "bytes": sum(sizes.bytes),
        "read_seconds": round(sizes.read_seconds, 3),
        "workers": len(plan.sets) * replicas,
        "replicas": replicas,
        "shards": shards,
        "worker_partitions": [
            {"worker": w, "shard": s["shard"], "partitions": s["partitions"]}
            for s in shards
            for w in s["workers"]
        ],
        "max_deviation": round(plan.max_deviation, 6),
        "tolerance": plan.tolerance,
        "within_tolerance": plan.within_tolerance,
        "problem": plan.problem,
        "partition_sizes": [
            {"partition": k, "events": sizes.events[k], "bytes": sizes.bytes[k]}
            for k in range(sizes.count)
        ],
    }


def format_plan(report: dict[str, Any]) -> list[str]:
    shards = report["shards"]
    lines = [
        f"stream       {report['stream']}: {report['partition_count']} partitions,"
        f" {report['events']:,} events, {report['bytes']:,} bytes"
        f" (sizes read in {report['read_seconds']:.1f} s)",
        f"layout       {report['workers']} workers = {len(shards)} shards x"
        f" {report['replicas']} replicas, balanced by bytes",
    ]
    if not report["bytes"]:
        lines.append(
            "             (the stream holds no events: the sets share the partitions by"
            " number; plan again once it holds a representative corpus)"
        )
    width = max(len(s["partitions"]) for s in shards)
    for s in shards:
        lines.append(
            f"shard {s['shard']:<6} partitions {s['partitions']:<{width}}  {s['events']:>12,}"
            f" events  {s['bytes']:>15,} bytes  {s['deviation']:+.2%} of the mean"
        )
    tolerance = f"±{report['tolerance']:.0%}"
    if report["within_tolerance"]:
        lines.append(
            f"balance      every shard within {report['max_deviation']:.2%} of the mean"
            f" (target {tolerance})"
        )
    else:
        lines.append(f"balance      NOT within {tolerance}: {report['problem']}")
    lines.append("workers")
    for w in report["worker_partitions"]:
        lines.append(
            f"  worker {w['worker']:<4} --partitions {w['partitions']}  (shard {w['shard']})"
        )
    return lines
