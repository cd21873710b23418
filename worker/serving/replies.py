"""Reply encoding: the JSON body of docs/protocol.md plus the nats.micro error headers.

Every reply this worker sends is built here, so the wire shape has one owner. Error
headers carry a single-line copy of the message (NATS headers cannot hold CR/LF); the body
carries it exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import orjson
from pydantic import ValidationError

from contracts.envelope import SpillLocator, ToolReply, ToolRequest
from contracts.errors import MICRO_STATUS, TOOL_FAILED_MESSAGE, ErrorCode
from contracts.ids import ID_PATTERN
from contracts.redaction import Redactor
from worker.failures import RuntimeFailure
from worker.signals import ExecutionAborted
from worker.tools import QUEUE_TIMEOUT_MESSAGE as QUEUE_TIMEOUT_MESSAGE
from worker.tools import ToolError, abort_error

_ID: Final = re.compile(ID_PATTERN)

ERROR_HEADER: Final = "Nats-Service-Error"
ERROR_CODE_HEADER: Final = "Nats-Service-Error-Code"
# A header line stays short; the body holds the full message.
MAX_HEADER_CHARS: Final = 512

OVERLOADED_MESSAGE: Final = "The worker is at capacity; retry shortly."
DUPLICATE_MESSAGE: Final = (
    "This request_id was already submitted; send each new request with a new request_id."
)


@dataclass(frozen=True, slots=True)
class EncodedReply:
    """Bytes ready to publish."""

    data: bytes
    headers: dict[str, str] | None
    spilled: bool = False


def ok(request_id: str, content: str, spill: SpillLocator | None = None) -> EncodedReply:
    if spill is None:
        # Every exact reply takes this path: the same bytes ToolReply.to_json() writes
        # (fields in model order, None left out), without building and dumping a model.
        body = orjson.dumps({"request_id": request_id, "status": "ok", "content": content})
        return EncodedReply(body, None)
    body = ToolReply.ok(request_id, content, spill).to_json()
    return EncodedReply(body, None, spilled=True)


# A refusal names what it refused (a session id, an unknown field's name) and may echo a
# credential the requester pasted there: every error message goes through the rules (only
# errors pay for it). The tools' replies and the operator's (``presenters``) alike.
ECHOES: Final = Redactor()


def error(request_id: str, code: ErrorCode, message: str) -> EncodedReply:
    message = ECHOES.redact(message)
    body = ToolReply.failure(request_id, code, message).to_json()
    return EncodedReply(body, error_headers(code, message))


def aborted(request_id: str, fired: ExecutionAborted, *, started: bool) -> EncodedReply:
    """The runtime's own fired signal, before the run started or after: the tools' one
    abort table (``worker.tools.abort_error``), never a message of the runtime's own."""
    return _tool_error(request_id, abort_error(fired, started=started))


def _tool_error(request_id: str, failed: ToolError) -> EncodedReply:
    return error(request_id, failed.code, failed.message)


def tool_failed(request_id: str) -> EncodedReply:
    return error(request_id, ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)


def overloaded(request_id: str) -> EncodedReply:
    return error(request_id, ErrorCode.OVERLOADED, OVERLOADED_MESSAGE)


def error_headers(code: ErrorCode, message: str) -> dict[str, str]:
    line = " ".join(message.split())
    if len(line) > MAX_HEADER_CHARS:
        line = line[: MAX_HEADER_CHARS - 3] + "..."
    return {ERROR_HEADER: line or code.value, ERROR_CODE_HEADER: MICRO_STATUS[code]}


NOT_AN_OBJECT_MESSAGE: Final = (
    "The request body must be a JSON object with request_id, execution and arguments."
)
# pydantic names the model class in some messages ("... or instance of Execution").
_CLASS_MENTION: Final = re.compile(r",? or (an )?instance of \w+")
_OBJECT_ERRORS: Final = frozenset({"model_type", "model_attributes_type", "dict_type"})


class BadEnvelope(RuntimeFailure):
    """The request body is not a valid envelope; ``reply`` answers it."""

    def __init__(self, request_id: str, message: str) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.message = message

    def reply(self) -> EncodedReply:
        return error(self.request_id, ErrorCode.INVALID_ARGUMENTS, self.message)


def parse_request(data: bytes) -> ToolRequest:
    """Parse a request envelope or raise ``BadEnvelope`` with a model-readable message."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise BadEnvelope("", "The request body is not valid JSON.") from None
    return validate_request(raw)


def validate_request(raw: object) -> ToolRequest:
    """A decoded request envelope validated, or ``BadEnvelope`` with a model-readable
    message."""
    if not isinstance(raw, dict):
        raise BadEnvelope("", NOT_AN_OBJECT_MESSAGE)
    request_id = raw["request_id"] if isinstance(raw.get("request_id"), str) else ""
    try:
        return ToolRequest.model_validate(raw)
    except ValidationError as exc:
        raise BadEnvelope(_safe_id(request_id), _describe(exc)) from None


def request_id_of(data: bytes) -> str:
    """Best effort: the valid request id in a body, else ""."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return ""
    if isinstance(raw, dict) and isinstance(raw.get("request_id"), str):
        return _safe_id(raw["request_id"])
    return ""


def _safe_id(request_id: str) -> str:
    # Echo the id only when it is a valid id, so the reply never repeats arbitrary input.
    return request_id if _ID.fullmatch(request_id) else ""


def _describe(exc: ValidationError) -> str:
    # Locations and messages only: pydantic's input echo is left out on purpose.
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "request"
        message = "must be a JSON object" if err["type"] in _OBJECT_ERRORS else err["msg"]
        # A custom validator's message arrives as "Value error, <text>".
        message = _CLASS_MENTION.sub("", message.removeprefix("Value error, "))
        parts.append(f"{loc}: {message}")
    return "The request envelope is invalid: " + "; ".join(parts) + "."
