"""The ground: the contract models and the real nats-server fixture."""

from __future__ import annotations

import orjson
import pytest
from nats.aio.client import Client as NATS
from pydantic import ValidationError

from contracts import SessionEvent, ToolReply, ToolRequest
from contracts.errors import ErrorCode
from contracts.events import event_json_schema


def _event(**over: object) -> bytes:
    base: dict[str, object] = {
        "session_id": "s-abc",
        "seq": 12,
        "event_id": "e-1",
        "type": "tool/result",
        "surface": "tool",
        "time": "2026-12-02T09:25:49.123Z",
        "payload": {"tool": "bash", "output": "ok"},
        "replaces": [9, 10],
        "cites": [{"session_id": "s-xyz", "seq": 4}],
    }
    base.update(over)
    return orjson.dumps(base)


def test_event_contract_accepts_the_design_example() -> None:
    event = SessionEvent.model_validate_json(_event())
    assert event.seq == 12
    assert event.time_ms == 1796203549123
    assert event.cites[0].session_id == "s-xyz"


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("session_id", "s abc", "pattern"),
        ("session_id", "x" * 129, "pattern"),
        ("surface", "robot", "surface must be one of"),
        ("time", "2026-12-02T09:25:49", "timezone"),
        ("seq", 0, "greater than or equal"),
        ("seq", "12", "integer"),
        ("replaces", [0], "positions"),
        ("extra", 1, "Extra inputs"),
    ],
)
def test_event_contract_rejects(field: str, value: object, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        SessionEvent.model_validate_json(_event(**{field: value}))
    assert fragment in str(info.value)


def test_event_type_is_open() -> None:
    assert SessionEvent.model_validate_json(_event(type="plugin/custom")).type == "plugin/custom"


def test_event_schema_exports() -> None:
    schema = event_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) >= {"session_id", "seq", "event_id", "type", "surface"}


def test_envelope_round_trip() -> None:
    request = ToolRequest.model_validate(
        {
            "request_id": "r-1",
            "execution": {"agent": {"session_id": "s-abc", "agent_id": "a-1"}},
            "arguments": {"query": "flaky test"},
        }
    )
    assert request.execution.agent is not None
    reply = ToolReply.failure("r-1", ErrorCode.NOT_FOUND, "No such session.")
    assert orjson.loads(reply.to_json()) == {
        "request_id": "r-1",
        "status": "error",
        "error": {"code": "SESSION_QUERY_NOT_FOUND", "message": "No such session."},
    }


async def test_real_nats_server_answers(nc: NATS) -> None:
    sub = await nc.subscribe("echo.test", cb=None)

    async def echo() -> None:
        msg = await sub.next_msg(timeout=2)
        await msg.respond(msg.data)

    import asyncio

    task = asyncio.create_task(echo())
    reply = await nc.request("echo.test", b"ping", timeout=2)
    await task
    assert reply.data == b"ping"
    js = nc.jetstream()
    info = await js.account_info()
    assert info.limits is not None
