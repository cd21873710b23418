"""Partition plan bench (issue 29): how balanced ``sessionquery partitions plan``'s sets are,
and what reading the partitions' sizes from the stream costs.

1. The corpus is published to a fresh events stream of ``--partitions`` partitions (or,
   with ``--stream``, an existing stream on ``--nats-url`` is read instead: a stream that
   already holds the corpus need not be published again).
2. The sizes are read as the command reads them (``read_partition_sizes``: an ordered
   headers-only consumer over the whole stream): wall seconds, events per second and this
   process's CPU seconds. When this run published the corpus, the sizes read are checked
   against the bytes the generator encoded for each partition (they must be equal).
3. For each shard count in ``--shards``: the plan's largest distance of a set from the mean
   by bytes (target: within ±5%), beside the contiguous split's (``0-7``/``8-15`` for two
   shards: what a layout chosen without sizes gets).

``python -m bench.plan_balance --sessions 4000 --events 250 --workspaces 256`` (1M events)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Final

from bench import corpus
from bench.report import (
    Absolute,
    bench_subjects,
    checks_of,
    format_table,
    nats_url,
    result_dict,
    write_result,
)

TARGET: Final = 0.05


def contiguous_deviation(sizes: Sequence[int], shards: int) -> float:
    """The largest distance from the mean of ``shards`` runs of consecutive partitions of
    near-equal count (the first ones one longer when they do not divide)."""
    count = len(sizes)
    base, extra = divmod(count, shards)
    weights, start = [], 0
    for i in range(shards):
        end = start + base + (1 if i < extra else 0)
        weights.append(sum(sizes[start:end]))
        start = end
    mean = sum(weights) / shards
    return max(abs(w - mean) / mean for w in weights) if mean else 0.0


async def run(
    config: corpus.CorpusConfig,
    *,
    count: int,
    shard_counts: Sequence[int],
    url: str | None = None,
    stream: str | None = None,
    events_prefix: str | None = None,
) -> dict[str, Any]:
    import nats

    from contracts.partitions import partition_of_cwd
    from contracts.streams import ensure_events_stream
    from contracts.subjects import Subjects
    from worker.commands.partition_plan import balance
    from worker.commands.partitions import read_partition_sizes

    expected: list[int] | None = None
    async with nats_url(url) as resolved:
        nc = await nats.connect(resolved)
        js = nc.jetstream()
        try:
            if stream is None:
                subjects = bench_subjects("plan")
                await ensure_events_stream(js, subjects, partitions=count)
                events = list(corpus.generate(config))
                await corpus.publish_partitioned(js, subjects, events, count)
                cwd_of = {plan.session_id: plan.cwd for plan in corpus.plan_sessions(config)}
                expected = [0] * count
                for event in events:
                    k = partition_of_cwd(cwd_of[event["session_id"]], count)
                    expected[k] += len(corpus.encode(event))
                del events
            else:
                subjects = Subjects(
                    events_stream=stream, events_prefix=events_prefix or Subjects().events_prefix
                )
            cpu0 = time.process_time()
            sizes = await read_partition_sizes(js, subjects)
            read_cpu_s = time.process_time() - cpu0
            if stream is None:
                await js.delete_stream(subjects.events_stream)
        finally:
            await nc.close()
    if expected is not None and list(sizes.bytes) != expected:
        raise AssertionError(f"sizes read {sizes.bytes} differ from those published {expected}")
    checks: list[Absolute] = []
    layouts = []
    for shards in shard_counts:
        plan = balance(sizes.bytes, shards)
        contiguous = contiguous_deviation(sizes.bytes, shards)
        checks.append(
            Absolute(f"{shards} shards: max deviation", plan.max_deviation, "of mean", "max",
                     TARGET)
        )  # fmt: skip
        layouts.append(
            {
                "shards": shards,
                "sets": [list(s) for s in plan.sets],
                "bytes": list(plan.weights),
                "max_deviation": plan.max_deviation,
                "contiguous_max_deviation": contiguous,
                "problem": plan.problem,
            }
        )
    total = sum(sizes.events)
    measurements = {
        "events": total,
        "bytes": sum(sizes.bytes),
        "partition_bytes": list(sizes.bytes),
        "partition_events": list(sizes.events),
        "read_seconds": sizes.read_seconds,
        "read_events_per_s": total / sizes.read_seconds if sizes.read_seconds else None,
        "read_cpu_s": read_cpu_s,
        "sizes_checked_against_generator": expected is not None,
        "layouts": layouts,
    }
    params = {**asdict(config), "partitions": sizes.count, "shards": list(shard_counts),
              "stream": stream}  # fmt: skip
    return result_dict("plan_balance", params=params, checks=checks, measurements=measurements)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plan_balance", description=__doc__)
    corpus.add_size_arguments(parser, sessions=400, events=250)
    parser.add_argument("--partitions", type=int, default=16, help="the stream's count")
    parser.add_argument("--shards", default="2,3,4,8", help="shard counts to plan, ',' between")
    parser.add_argument("--nats-url", default=None)
    parser.add_argument(
        "--stream", default=None, help="read this existing stream instead of publishing"
    )
    parser.add_argument("--events-prefix", default=None, help="with --stream: its prefix")
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    result = asyncio.run(
        run(
            config,
            count=args.partitions,
            shard_counts=[int(n) for n in args.shards.split(",")],
            url=args.nats_url,
            stream=args.stream,
            events_prefix=args.events_prefix,
        )
    )
    m = result["measurements"]
    info: dict[str, Any] = {
        "events / bytes": f"{m['events']:,} / {m['bytes']:,}",
        "partition bytes, smallest / largest": (
            f"{min(m['partition_bytes']):,} / {max(m['partition_bytes']):,}"
        ),
        "sizes read in s (events/s, client CPU s)": (
            f"{m['read_seconds']:.1f} ({m['read_events_per_s']:,.0f}/s, {m['read_cpu_s']:.1f})"
        ),
        "sizes equal the generator's bytes": (
            "yes" if m["sizes_checked_against_generator"] else "not checked (--stream)"
        ),
    }
    for layout in m["layouts"]:
        info[f"{layout['shards']} shards: plan / contiguous max deviation"] = (
            f"{layout['max_deviation']:.2%} / {layout['contiguous_max_deviation']:.2%}"
        )
        if layout["problem"]:
            info[f"{layout['shards']} shards: why"] = layout["problem"]
    title = f"partition plan: {m['events']:,} events, {result['params']['partitions']} partitions"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
