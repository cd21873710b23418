"""A worker over the imported fixtures, and the bridge command's arguments."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.partitions import DEFAULT_PARTITION_COUNT, PartitionSet, partition_of
from contracts.subjects import Subjects
from tests._harness import config_for, until
from tests.importers._corpus import AIDER_FILE, CLAUDE_AGENT_FILE, CLAUDE_MAIN, CODEX_FILE
from worker.importers.base import SpawnLinks
from worker.importers.pipeline import convert_file
from worker.replica.ingest_consumer import ensure_events_stream
from worker.worker import Worker

# Results longer than this spill, so the lineage and event traces of the fixtures do.
SPILL_THRESHOLD = 1024


async def indexed_worker(
    nc: NATS, subjects: Subjects, tmp_path: Path, partitions: str = "all"
) -> Worker:
    """The fixture files, converted and published, and a worker that has indexed them (the
    ones in its ``partitions`` of the default count)."""
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    held = PartitionSet.parse(partitions, DEFAULT_PARTITION_COUNT)
    last = 0
    links: SpawnLinks = {}
    for fmt, path in (("claude-code", CLAUDE_MAIN), ("claude-code", CLAUDE_AGENT_FILE),
                      ("codex", CODEX_FILE), ("aider", AIDER_FILE)):  # fmt: skip
        outs, _ = convert_file(fmt, path, links=links)
        for out in outs:
            assert out.key is not None  # each file holds its sessions' starts
            ack = await js.publish(subjects.events(out.key, out.session_id), out.body,
                                   headers={"Nats-Msg-Id": out.msg_id})  # fmt: skip
            if partition_of(out.key, DEFAULT_PARTITION_COUNT) in held:
                last = ack.seq
    worker = await Worker.start(
        nc,
        config_for(
            subjects,
            tmp_path,
            spill_threshold_bytes=SPILL_THRESHOLD,
            spill_preview_bytes=256,
            partitions=partitions,
        ),
    )

    async def caught_up() -> bool:
        return (await worker.indexed_through()) == last

    await until(caught_up, within=20)
    return worker


def bridge_args(nats_url: str, subjects: Subjects, *extra: str) -> list[str]:
    return [
        "-m", "worker.cli", "mcp", "--nats-url", nats_url, "--subject-prefix", subjects.prefix,
        "--stream", subjects.events_stream, "--events-prefix", subjects.events_prefix, *extra,
    ]  # fmt: skip


def bridge_command(nats_url: str, subjects: Subjects, *extra: str) -> list[str]:
    return [sys.executable, *bridge_args(nats_url, subjects, *extra)]


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    return "".join(getattr(block, "text", "") for block in content)


def dumps(value: object) -> str:
    return orjson.dumps(value).decode()
