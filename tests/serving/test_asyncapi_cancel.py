"""The cancel message exactly as docs/asyncapi.yaml describes it, sent to a real worker
(issue 23): every example validates against the document's schema, and cancels the request
it names; the same message with another identity is ignored. A client generated from the
document put the identity under ``execution`` and could not cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
import yaml
from nats.aio.client import Client as NATS

from contracts.errors import ErrorCode
from contracts.subjects import Subjects
from tests._harness import call, start_recorded_worker, until
from worker.serving.cancellation import NO_REASON_MESSAGE

DOC = yaml.safe_load((Path(__file__).resolve().parents[2] / "docs" / "asyncapi.yaml").read_text())


def _schema(name: str) -> dict[str, Any]:
    """A components schema with its references resolvable (the whole document beside it)."""
    return {**DOC["components"]["schemas"][name], "components": DOC["components"]}


def _validate(payload: dict[str, Any], name: str) -> None:
    schema = _schema(name)
    jsonschema.validate(payload, schema, cls=jsonschema.Draft202012Validator)


CANCEL = DOC["components"]["messages"]["cancel"]
EXAMPLES = [pytest.param(e["payload"], id=e["name"]) for e in CANCEL["examples"]]


def _address(subjects: Subjects, channel: str) -> str:
    # The document's addresses use the default prefix; the test's worker has its own.
    address = str(DOC["channels"][channel]["address"])
    return subjects.prefix + address.removeprefix(Subjects().prefix)


def _request(request_id: str, agent: dict[str, Any], tag: str) -> bytes:
    envelope = {
        "request_id": request_id,
        "execution": {"agent": agent},
        "arguments": {"tag": tag, "hold": True},
    }
    return orjson.dumps(envelope)


def _expected_message(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip():
        return NO_REASON_MESSAGE
    return f"The request was cancelled by the runtime (reason: {orjson.dumps(reason).decode()})"


def test_the_old_shape_with_the_identity_under_execution_is_not_the_documented_one() -> None:
    old = {"request_id": "r-1", "reason": "stop", "execution": {"agent": {"session_id": "s-a"}}}
    with pytest.raises(jsonschema.ValidationError, match="'agent' is a required property"):
        _validate(old, "CancelRequest")


@pytest.mark.parametrize("example", EXAMPLES)
async def test_each_documented_cancel_cancels_and_a_foreign_identity_is_ignored(
    nc: NATS, subjects: Subjects, tmp_path: Path, example: dict[str, Any]
) -> None:
    _validate(example, "CancelRequest")
    request_id, agent = example["request_id"], example["agent"]
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        # A foreign identity first: the request keeps running.
        foreign_id = request_id + "-f"
        foreign = asyncio.create_task(
            call(nc, subjects, "session_event_read", _request(foreign_id, agent, "foreign"))
        )
        await recorder.wait_started("foreign")
        stranger = {**example, "request_id": foreign_id, "agent": {"session_id": "s-other"}}
        _validate(stranger, "CancelRequest")
        await nc.publish(_address(subjects, "cancel"), orjson.dumps(stranger))
        await until(lambda: worker.registry.ignored == 1)
        assert not foreign.done()

        # The documented message, as documented: it cancels.
        own = asyncio.create_task(
            call(nc, subjects, "session_event_read", _request(request_id, agent, "own"))
        )
        await recorder.wait_started("own")
        await nc.publish(_address(subjects, "cancel"), orjson.dumps(example))
        reply, _ = await own
        assert reply["status"] == "error", reply
        assert reply["error"] == {
            "code": ErrorCode.CANCELLED.value,
            "message": _expected_message(example.get("reason")),
        }
        recorder.release.set()
        foreign_reply, _ = await foreign
        assert foreign_reply["status"] == "ok", foreign_reply
    finally:
        recorder.release.set()
        await worker.stop()
