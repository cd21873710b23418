"""Endpoints besides the tools whose requests take the search lane: the operator's search.

Every search takes the search lane, a person's as well as a model's: the operator's
``search`` verb puts its request on the same work queue (one more endpoint, named by the
queue subject's last token, ``operator-search``), and a lane that fetches it admits it once
from the queued document and runs it through the executor with the endpoint's presenter,
one at a time with every other search. Its body is checked before it is queued (a body
that is no ``{"arguments": {...}}`` is answered at once); its arguments are admitted by the
lane that runs it. It has no request id and no caller, so no de-duplication (each message
gets a fresh ``Nats-Msg-Id``) and no cancel; it is queued on a partition this worker holds,
so a replica of the same index answers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson
from nats.nuid import NUID

from contracts.errors import ErrorCode
from worker.serving.execution import Route
from worker.serving.lane_decisions import MSG_ID_HEADER
from worker.tools import ToolError

NOT_JSON_MESSAGE: Final = "The body is not JSON."
NOT_ARGUMENTS_MESSAGE: Final = 'The body must be {"arguments": {...}}.'


class QueuedVerb(Protocol):
    def admit(self, arguments: Mapping[str, Any]) -> Any:
        """The request admitted once; never raises (a refusal rides in the value)."""
        ...


@dataclass(frozen=True, slots=True)
class QueuedEndpoint:
    """An endpoint whose requests the search lane runs: its queue name (the subject's last
    token), how a fetched request is admitted, and the route the executor runs it on."""

    name: str
    verb: QueuedVerb
    route: Route[Any, Any]

    def admitted(self, envelope: Mapping[str, Any]) -> Any:
        arguments = envelope.get("arguments", {})
        return self.verb.admit(arguments if isinstance(arguments, dict) else {})


def body_arguments(data: bytes) -> dict[str, Any] | ToolError:
    """An operator body's ``arguments``, or why it is answered before any verb reads it: it
    must be a JSON object whose ``arguments`` (when given) is an object."""
    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        return ToolError(ErrorCode.INVALID_ARGUMENTS, NOT_JSON_MESSAGE)
    arguments = body.get("arguments", {}) if isinstance(body, dict) else None
    if not isinstance(arguments, dict):
        return ToolError(ErrorCode.INVALID_ARGUMENTS, NOT_ARGUMENTS_MESSAGE)
    return arguments


def fresh_headers() -> dict[str, str]:
    """No request id to de-duplicate on: every queued message is its own."""
    return {MSG_ID_HEADER: NUID().next().decode()}
