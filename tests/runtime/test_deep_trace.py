"""A 10,000-level trace over NATS: answered (never TOOL_FAILED), spilled like any large
result, and complete when fetched."""

from __future__ import annotations

from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.client import SessionQueryClient
from contracts.envelope import AgentIdentity, Execution
from contracts.subjects import Subjects
from tests.runtime._harness import config_for, until
from tests.runtime.test_head_of_line import event
from worker.runtime.ingest_consumer import ensure_events_stream
from worker.runtime.worker import Worker

N = 10_000


def chain_id(level: int) -> str:
    return f"s-deep-{level:05d}"


async def test_a_10000_level_trace_spills_and_is_complete(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    await ensure_events_stream(nc.jetstream(), subjects)
    for level in range(N):
        payload = {"cwd": "/ws/deep"}
        if level:
            payload["parent_session_id"] = chain_id(level - 1)
        item = event(chain_id(level), 1, "session/start", payload)
        # Plain publishes are captured by the stream; the flush below bounds them.
        await nc.publish(
            subjects.events(item["session_id"]),
            orjson.dumps(item),
            headers={"Nats-Msg-Id": f"{item['session_id']}:1"},
        )
    await nc.flush()
    worker = await Worker.start(nc, config_for(subjects, tmp_path))
    try:

        async def indexed() -> bool:
            return (await worker.indexed_through()) == N

        await until(indexed, within=120)
        client = SessionQueryClient(nc, subjects)
        reply = await client.call(
            "session_trace", {}, Execution(agent=AgentIdentity(session_id=chain_id(0)))
        )
        assert reply.status == "ok", reply.error
        assert reply.spill is not None
        text = (await client.fetch_spilled(reply.spill)).decode()
    finally:
        await worker.stop()
    shown = [line for line in text.splitlines() if "s-deep-" in line]
    assert len(shown) == N  # the target and every descendant
    assert shown[-1].rstrip().split("s-deep-")[1].startswith(f"{N - 1:05d}")
    assert reply.content is not None and text.startswith(reply.content)
