"""Asking the operator subjects, for the UI tests."""

from __future__ import annotations

from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects


async def ask(nc: NATS, subjects: Subjects, verb: str, **arguments: Any) -> dict[str, Any]:
    """The whole reply document of one operator request."""
    msg = await nc.request(
        subjects.operator(verb), orjson.dumps({"arguments": arguments}), timeout=10
    )
    reply: dict[str, Any] = orjson.loads(msg.data)
    return reply


async def result(nc: NATS, subjects: Subjects, verb: str, **arguments: Any) -> dict[str, Any]:
    reply = await ask(nc, subjects, verb, **arguments)
    assert reply["status"] == "ok", reply
    answer: dict[str, Any] = reply["result"]
    return answer
