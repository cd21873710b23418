"""One session event, as runtimes publish it on ``sessions.events.<session_id>``, and the
rules a message must pass to be indexed (``validate_event``; docs/protocol.md §7).

The rules are here, not in the index writer, so a publisher (``sessionquery import``, an
agent runtime) checks an event with the same code and the same words as the worker's
dead letters, without loading the index. The checks that need the index (unknown session,
gaps, after the end, the subject's workspace key) stay with the writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    GetPydanticSchema,
    ValidationError,
)
from pydantic_core import core_schema

from contracts.ids import ID_PATTERN, Id
from contracts.limits import MAX_EVENT_BYTES

# SQLite's largest integer: a cited seq past it could not be stored.
MAX_INT64: Final = 2**63 - 1

KNOWN_EVENT_TYPES: Final = (
    "session/start",
    "session/title",
    "session/end",
    "step/start",
    "message/user",
    # Text a harness put in the user's turn (environment, instructions, notifications):
    # searchable, but not what the user said.
    "message/context",
    # A command the user ran through the harness (a slash command, ``!`` shell input) and
    # what it printed.
    "command",
    "command/output",
    "message/assistant",
    "tool/call",
    "tool/result",
    "compaction",
)


class Surface(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


def _with_message(error_type: str, message: str) -> GetPydanticSchema:
    """Replace a field's validation errors with one message, checked inside pydantic-core:
    these run for every ingested event, and a Python validator costs microseconds each."""
    return GetPydanticSchema(
        lambda tp, handler: core_schema.custom_error_schema(
            handler(tp), custom_error_type=error_type, custom_error_message=message
        )
    )


# Lax on this field alone so JSON strings (and str values) convert to the closed enum.
SurfaceField = Annotated[
    Surface,
    Field(strict=False),
    _with_message("surface", "surface must be one of: " + ", ".join(s.value for s in Surface)),
]
# A strict integer ("1" gets the usual integer message) that is a position, from 1.
Position = Annotated[
    int,
    GetPydanticSchema(
        lambda tp, handler: core_schema.chain_schema(
            [
                core_schema.int_schema(strict=True),
                core_schema.custom_error_schema(
                    core_schema.int_schema(ge=1),
                    custom_error_type="position",
                    custom_error_message="replaces holds positions (seq), which start at 1",
                ),
            ]
        )
    ),
]


class Cite(BaseModel):
    """A source event this event was derived from, possibly in another session."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    session_id: Id
    seq: int = Field(ge=1)


class SessionEvent(BaseModel):
    """The session event contract. ``type`` is open; ``surface`` is closed."""

    # cache_strings="keys": pydantic's JSON parser otherwise keeps every string value of
    # up to 64 characters it has seen (ids, types, short texts) in a process-wide cache of
    # 16,384; after an ingest burst those survivors, spread over the allocator's arenas,
    # kept tens of MiB resident (issue 20). Keys repeat; values mostly do not.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, cache_strings="keys")

    session_id: Id
    seq: int = Field(ge=1)
    event_id: Id
    type: str = Field(min_length=1, max_length=128)
    surface: SurfaceField
    # Strict mode would refuse ISO strings from JSON, so the time field alone is lax;
    # AwareDatetime still refuses a naive timestamp.
    time: AwareDatetime = Field(strict=False)
    payload: dict[str, Any] = Field(default_factory=dict)
    replaces: list[Position] = Field(default_factory=list)
    cites: list[Cite] = Field(default_factory=list)

    @property
    def time_ms(self) -> int:
        return datetime_to_ms(self.time)


def datetime_to_ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def event_json_schema() -> dict[str, Any]:
    return SessionEvent.model_json_schema()


# -- the rules -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a message is not a valid event: one line, the text a dead letter carries
    (``oversized: ...``, ``invalid JSON: ...``, ``contract violation: ...``)."""

    reason: str


def validate_event(raw: bytes, *, max_event_bytes: int = MAX_EVENT_BYTES) -> SessionEvent | Refusal:
    """The event ``raw`` holds, or why the index would refuse it on its own (the session
    checks, which need the index, are the writer's)."""
    outcome = validate_event_text(raw, max_event_bytes=max_event_bytes)
    return outcome if isinstance(outcome, Refusal) else outcome[0]


# The model's own validator, called directly: ``model_validate_json`` adds about 1 us of
# Python around it, and the writer runs this for every ingested event.
_validate_event_json: Final = SessionEvent.__pydantic_validator__.validate_json


def validate_event_text(
    raw: bytes, *, max_event_bytes: int = MAX_EVENT_BYTES
) -> tuple[SessionEvent, str] | Refusal:
    """``validate_event`` that also returns the message decoded, for the writer, which
    keeps that text (decoding it once)."""
    size = len(raw)
    if size > max_event_bytes:
        return Refusal(
            f"oversized: the event is {size} bytes, the maximum is {max_event_bytes} bytes"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal(f"invalid JSON: not UTF-8 at byte {exc.start}")
    try:
        event: SessionEvent = _validate_event_json(text)
    except ValidationError as exc:
        return Refusal(_describe(exc))
    problem = _range_problem(event) or _header_problem(event)
    return (event, text) if problem is None else Refusal(problem)


def _range_problem(event: SessionEvent) -> str | None:
    for cite in event.cites:
        if cite.seq > MAX_INT64:
            return f"contract violation: cites seq {cite.seq} out of range"
    for pos in event.replaces:
        if pos >= event.seq:
            return (
                f"contract violation: replaces {pos} at seq {event.seq}:"
                " replaces names earlier positions of the same session"
            )
    return None


def _header_problem(event: SessionEvent) -> str | None:
    """The payload fields the sessions table takes must have the right shapes."""
    if event.type == "session/start":
        cwd = event.payload.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            return "contract violation: session/start payload.cwd must be a string or null"
        parent = event.payload.get("parent_session_id")
        if parent is not None and not (isinstance(parent, str) and _is_id(parent)):
            return (
                "contract violation: session/start payload.parent_session_id must be"
                f" an id matching {ID_PATTERN} or null"
            )
    elif event.type == "session/title":
        title = event.payload.get("title")
        if title is not None and not isinstance(title, str):
            return "contract violation: session/title payload.title must be a string"
    return None


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_input=False, include_url=False, include_context=False)
    invalid_json = [e for e in errors if e["type"] == "json_invalid"]
    if invalid_json:
        msg = str(invalid_json[0]["msg"]).removeprefix("Invalid JSON: ")
        return f"invalid JSON: {msg}"
    parts = []
    for e in errors:
        loc = ".".join(str(x) for x in e["loc"]) or "event"
        parts.append(f"{loc}: {e['msg']}")
    return "contract violation: " + "; ".join(parts)


# ``ID_PATTERN``'s alphabet and length, checked without a regex.
_ID_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _is_id(value: str) -> bool:
    return 1 <= len(value) <= 128 and all(c in _ID_CHARS for c in value)
