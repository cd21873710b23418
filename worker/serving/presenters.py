"""Presenters: how an endpoint's outcome is written on the wire, one per kind of endpoint.

The executor decides what a request's outcome is (a result, a ``ToolError`` from the one
error table, an abort); a presenter only writes it. The tools' presenter writes the reply
of docs/protocol.md (a success through the spill step); the operator verbs' writes the
JSON of docs/ui.md. A presenter may raise on success (a spill that fails, a result that
does not encode): the executor answers that with the presenter's TOOL_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

import orjson

from worker.serving import replies
from worker.serving.replies import EncodedReply
from worker.serving.spill import Spiller
from worker.tools import ToolError

ResultT_contra = TypeVar("ResultT_contra", contravariant=True)


class Failures(Protocol):
    def failure(self, request_id: str, error: ToolError) -> EncodedReply:
        """The reply for a model-facing error; never raises."""
        ...


class Presenter(Failures, Protocol[ResultT_contra]):
    async def success(self, request_id: str, result: ResultT_contra) -> EncodedReply:
        """The reply for a result; may raise (the executor answers that TOOL_FAILED)."""
        ...


class ToolFailures:
    """The tools' error replies: the body of docs/protocol.md and the micro error headers."""

    __slots__ = ()

    def failure(self, request_id: str, error: ToolError) -> EncodedReply:
        return replies.error(request_id, error.code, error.message)


TOOL_FAILURES: Final = ToolFailures()


@dataclass(frozen=True, slots=True)
class ToolReplies(ToolFailures):
    """The tools' replies: text, spilled to the object store when it is too large."""

    spiller: Spiller

    async def success(self, request_id: str, result: str) -> EncodedReply:
        return await self.spiller.reply(request_id, result)


class OperatorJson:
    """The operator verbs' replies: ``{"status": "ok", "result": ...}`` or ``{"status":
    "error", "error": {"code", "message"}}``, no headers and no request id (docs/ui.md)."""

    async def success(self, request_id: str, result: dict[str, Any]) -> EncodedReply:
        return EncodedReply(orjson.dumps({"status": "ok", "result": result}), None)

    def failure(self, request_id: str, error: ToolError) -> EncodedReply:
        message = replies.ECHOES.redact(error.message)
        body = {"status": "error", "error": {"code": error.code.value, "message": message}}
        return EncodedReply(orjson.dumps(body), None)
