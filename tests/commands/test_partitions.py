"""``sessionquery partitions plan`` over a real stream: the sizes it reads are the bytes
published per partition, and its sets are balanced ``--partitions`` values for each worker."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.partitions import PartitionSet, partition_of_cwd
from contracts.streams import ensure_events_stream
from contracts.subjects import Subjects
from tests._events import event_dict, subject_of

REPO = Path(__file__).resolve().parents[2]
COUNT = 8


async def plan(nats_url: str, subjects: Subjects, *args: str) -> tuple[int, str, str]:
    """The real command, in its own process."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")}
    environment["PYTHONPATH"] = str(REPO)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "worker.cli", "partitions", "plan", "--nats-url", nats_url,
        "--stream", subjects.events_stream, "--events-prefix", subjects.events_prefix, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=environment,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_plan_reads_each_partitions_bytes_and_balances_them(
    nc: NATS, nats_url: str, subjects: Subjects
) -> None:
    js = nc.jetstream()
    code, _, err = await plan(nats_url, subjects, "--workers", "2")
    assert code == 1 and f"no stream {subjects.events_stream}" in err

    await ensure_events_stream(js, subjects, partitions=COUNT)
    expected_bytes = [0] * COUNT
    expected_events = [0] * COUNT
    # 40 workspaces of uneven size (1 to 40 events, longer texts in later ones).
    for w in range(40):
        cwd = f"/work/plan-{w}"
        session = f"s-plan-{subjects.prefix}-{w}"
        k = partition_of_cwd(cwd, COUNT)
        for seq in range(1, w + 2):
            if seq == 1:
                body = event_dict(session, 1, "session/start", payload={"cwd": cwd})
            else:
                body = event_dict(session, seq, payload={"text": "x" * (20 * w)})
            data = orjson.dumps(body)
            await js.publish(subject_of(subjects, session, cwd), data)
            expected_bytes[k] += len(data)
            expected_events[k] += 1

    code, out, err = await plan(nats_url, subjects, "--workers", "4", "--replicas", "2", "--json")
    assert code in (0, 1), err
    report = orjson.loads(out)
    assert [p["bytes"] for p in report["partition_sizes"]] == expected_bytes
    assert [p["events"] for p in report["partition_sizes"]] == expected_events
    shards = report["shards"]
    assert len(shards) == 2 and report["workers"] == 4 and report["replicas"] == 2
    held = [PartitionSet.parse(s["partitions"], COUNT) for s in shards]
    assert sorted(k for s in held for k in s) == list(range(COUNT))
    assert [sum(expected_bytes[k] for k in s) for s in held] == [s["bytes"] for s in shards]
    assert code == (0 if report["within_tolerance"] else 1)
    # Each worker's --partitions value is its shard's; the two replicas of a shard share it.
    assert [(w["worker"], w["partitions"]) for w in report["worker_partitions"]] == [
        (1, shards[0]["partitions"]), (2, shards[0]["partitions"]),
        (3, shards[1]["partitions"]), (4, shards[1]["partitions"]),
    ]  # fmt: skip

    code, out, _ = await plan(nats_url, subjects, "--workers", "4", "--replicas", "2")
    assert f"worker 3    --partitions {shards[1]['partitions']}  (shard 2)" in out
    assert "balance" in out and "4 workers = 2 shards x 2 replicas" in out

    code, _, err = await plan(nats_url, subjects, "--workers", "5", "--replicas", "2")
    assert code == 2 and "--workers 5 is not a multiple of --replicas 2" in err
    code, _, err = await plan(nats_url, subjects, "--workers", "9")
    assert code == 2 and "9 shards need at least 9 partitions" in err
    await js.delete_stream(subjects.events_stream)
