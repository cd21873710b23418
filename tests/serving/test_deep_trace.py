"""A deep trace over NATS: answered (never TOOL_FAILED), spilled like any large result, and
complete when fetched. 3,000 levels (three times the recursion limit) by default, 10,000 in
the slow suite: the same property, a larger corpus."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.client import SessionQueryClient
from contracts.envelope import AgentIdentity, Execution
from contracts.subjects import Subjects
from tests._events import subject_of
from tests._harness import config_for, event, until
from worker.replica.ingest_consumer import ensure_events_stream
from worker.worker import Worker

SIZES = [pytest.param(3_000, id="3000"), pytest.param(10_000, id="10000", marks=pytest.mark.slow)]


def chain_id(level: int) -> str:
    return f"s-deep-{level:05d}"


@pytest.mark.parametrize("size", SIZES)
async def test_a_10000_level_trace_spills_and_is_complete(
    nc: NATS, subjects: Subjects, tmp_path: Path, size: int
) -> None:
    await ensure_events_stream(nc.jetstream(), subjects)
    for level in range(size):
        payload = {"cwd": "/ws/deep"}
        if level:
            payload["parent_session_id"] = chain_id(level - 1)
        item = event(chain_id(level), 1, "session/start", payload)
        # Plain publishes are captured by the stream; the flush below bounds them.
        await nc.publish(
            subject_of(subjects, item["session_id"], "/ws/deep"),
            orjson.dumps(item),
            headers={"Nats-Msg-Id": f"{item['session_id']}:1"},
        )
    await nc.flush()
    worker = await Worker.start(nc, config_for(subjects, tmp_path))
    try:

        async def indexed() -> bool:
            return (await worker.indexed_through()) == size

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
    assert len(shown) == size  # the target and every descendant
    assert shown[-1].rstrip().split("s-deep-")[1].startswith(f"{size - 1:05d}")
    assert reply.content is not None and text.startswith(reply.content)
