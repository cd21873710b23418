"""Model arguments: schemas and validation (``filters`` turns them into provider filters).

The pydantic models below are what the model sees (their JSON Schemas are the tool input
schemas), so every field carries a description. Validation failures become one short,
model-readable ``INVALID_ARGUMENTS`` message naming each offending field; pydantic's own
text (with its documentation URLs) never reaches the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from contracts.errors import ErrorCode
from contracts.ids import ID_PATTERN
from worker.store.protocol import Availability, SurfaceName
from worker.tools.definitions import ToolError

MAX_QUERY_CHARS = 2000
MAX_LIST_ITEMS = 100
_MAX_REPORTED_ERRORS = 5

_TIMESTAMP_HELP = "a timezone-qualified ISO 8601 timestamp, e.g. 2026-12-02T09:25:49Z"


def _parse_timestamp(value: object) -> object:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("timestamp_type", "must be " + _TIMESTAMP_HELP)
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise PydanticCustomError("timestamp_format", "must be " + _TIMESTAMP_HELP) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise PydanticCustomError(
            "timestamp_naive",
            "needs a timezone (add Z or an offset such as +02:00), e.g. 2026-12-02T09:25:49Z",
        )
    return parsed


Timestamp = Annotated[
    datetime,
    BeforeValidator(_parse_timestamp),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]

SessionId = Annotated[str, Field(pattern=ID_PATTERN)]
EventType = Annotated[str, Field(min_length=1, max_length=128)]
# Seqs are contiguous from 1, so no real one comes near this; the bound keeps a seq and its
# read window (seq +- before/after) inside SQLite's 64-bit integers.
MAX_SEQ = 2**62
Seq = Annotated[int, Field(ge=1, le=MAX_SEQ)]

_ID_DESCRIPTION = "a session id (letters, digits, '_' and '-')"


class _Arguments(BaseModel):
    # strict: a string is not silently an integer; forbid: a model-supplied workspace or
    # cursor is refused by name.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class SessionSearchArguments(_Arguments):
    """Search earlier sessions of this workspace; results are grouped by session."""

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=(
            "Words or phrases to find in earlier sessions' events (messages, tool calls and "
            "results): key words, an error fragment, an identifier or path, or a plain "
            "question. Events holding every word rank first; when none does, the best partial "
            "matches are shown. Word forms, parts of identifiers (camelCase, snake_case, "
            'paths) and words inside Chinese or Japanese text match. Use "double quotes" for '
            "an exact phrase, OR between terms for alternatives and a leading - to exclude a "
            'term. A date or time in it ("in January 2024", "last week") is not a word to '
            "match: events from then rank higher, and the reply says how it was read."
        ),
    )
    session_ids: list[SessionId] | None = Field(
        default=None,
        max_length=MAX_LIST_ITEMS,
        description="Only these sessions (any of them).",
    )
    parent_session_ids: list[SessionId] | None = Field(
        default=None,
        max_length=MAX_LIST_ITEMS,
        description="Only sessions started from one of these parent sessions (sub-sessions).",
    )
    include_root_sessions: bool = Field(
        default=False,
        description=(
            "Also match sessions that have no parent. Combined with parent_session_ids as OR; "
            "alone it limits the search to root sessions."
        ),
    )
    created_after: Timestamp | None = Field(
        default=None, description="Sessions created at or after this time (ISO 8601 with zone)."
    )
    created_before: Timestamp | None = Field(
        default=None, description="Sessions created at or before this time (ISO 8601 with zone)."
    )
    updated_after: Timestamp | None = Field(
        default=None,
        description="Sessions last updated at or after this time (ISO 8601 with zone).",
    )
    updated_before: Timestamp | None = Field(
        default=None,
        description="Sessions last updated at or before this time (ISO 8601 with zone).",
    )
    availability: list[Availability] | None = Field(
        default=None,
        description="'live' (still running) and/or 'persisted' (ended) sessions.",
    )
    event_types: list[EventType] | None = Field(
        default=None,
        max_length=MAX_LIST_ITEMS,
        description=(
            "Only matches in events of these types, e.g. message/user (what the user "
            "wrote), message/assistant, tool/call, tool/result, compaction, "
            "message/context (environment or instructions a harness added), command, "
            "command/output."
        ),
    )
    event_surfaces: list[SurfaceName] | None = Field(
        default=None, description="Only matches in events on these surfaces."
    )
    event_after: Timestamp | None = Field(
        default=None, description="Only matches in events at or after this time."
    )
    event_before: Timestamp | None = Field(
        default=None, description="Only matches in events at or before this time."
    )

    @model_validator(mode="after")
    def _ranges(self) -> SessionSearchArguments:
        _check_order("created_after", self.created_after, "created_before", self.created_before)
        _check_order("updated_after", self.updated_after, "updated_before", self.updated_before)
        _check_order("event_after", self.event_after, "event_before", self.event_before)
        return self


class SessionEventSearchArguments(_Arguments):
    """Search the events of one session (by default the calling session's earlier steps)."""

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=(
            "Words or phrases to find. Events holding every word rank first; when none does, "
            'the best partial matches are shown. Use "double quotes" for an exact phrase, OR '
            "between terms for alternatives and a leading - to exclude a term. A date or "
            'time in it ("on March 3", "yesterday") is not a word to match: events from then '
            "rank higher."
        ),
    )
    session_id: SessionId | None = Field(
        default=None,
        description=(
            "The session to search; omit for the current session (its current step is never "
            "searched)."
        ),
    )
    event_types: list[EventType] | None = Field(
        default=None, max_length=MAX_LIST_ITEMS, description="Only events of these types."
    )
    event_surfaces: list[SurfaceName] | None = Field(
        default=None, description="Only events on these surfaces."
    )
    event_after: Timestamp | None = Field(
        default=None, description="Only events at or after this time (ISO 8601 with zone)."
    )
    event_before: Timestamp | None = Field(
        default=None, description="Only events at or before this time (ISO 8601 with zone)."
    )
    from_seq: Seq | None = Field(default=None, description="Only events at or after this seq.")
    to_seq: Seq | None = Field(default=None, description="Only events at or before this seq.")

    @model_validator(mode="after")
    def _ranges(self) -> SessionEventSearchArguments:
        _check_order("event_after", self.event_after, "event_before", self.event_before)
        _check_order("from_seq", self.from_seq, "to_seq", self.to_seq)
        return self


class SessionTraceArguments(_Arguments):
    """The lineage of one session: its ancestors and every descendant sub-session."""

    session_id: SessionId | None = Field(
        default=None, description="The session to trace; omit for the current session."
    )


class SessionEventTraceArguments(_Arguments):
    """Replacements and citations of one event."""

    session_id: SessionId | None = Field(
        default=None, description="The event's session; omit for the current session."
    )
    seq: Seq = Field(description="The event's position (seq) in its session.")


class SessionEventReadArguments(_Arguments):
    """One event as exact JSON, optionally with neighbouring events summarized."""

    session_id: SessionId | None = Field(
        default=None, description="The event's session; omit for the current session."
    )
    seq: Seq = Field(description="The event's position (seq) in its session.")
    before: int | None = Field(
        default=None,
        ge=0,
        description="How many preceding events to summarize (default 0: target only).",
    )
    after: int | None = Field(
        default=None,
        ge=0,
        description="How many following events to summarize (default 0: target only).",
    )


def _check_order(low_name: str, low: Any, high_name: str, high: Any) -> None:
    if low is not None and high is not None and low > high:
        raise PydanticCustomError("range_order", f"{low_name} must not be later than {high_name}")


Args = TypeVar("Args", bound=_Arguments)


def parse_arguments(tool: str, model: type[Args], arguments: Mapping[str, Any]) -> Args:
    """Validate the model's arguments, or raise INVALID_ARGUMENTS naming each field."""
    if not isinstance(arguments, Mapping):
        raise ToolError(ErrorCode.INVALID_ARGUMENTS, f"{tool}: arguments must be a JSON object")
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS, describe_validation_error(tool, model, exc)
        ) from None


def describe_validation_error(tool: str, model: type[BaseModel], exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    parts = [_describe_one(model, error) for error in errors[:_MAX_REPORTED_ERRORS]]
    if len(errors) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more problems")
    return f"Invalid arguments for {tool}: " + "; ".join(parts) + "."


def _describe_one(model: type[BaseModel], error: ErrorDetails) -> str:
    where = _location(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        allowed = ", ".join(model.model_fields)
        return f"unknown field '{where}' (allowed fields: {allowed})"
    if kind == "missing":
        return f"'{where}' is required"
    text = _MESSAGES.get(kind)
    if text is None and kind == "literal_error":
        text = f"must be one of {ctx.get('expected', 'the allowed values')}"
    elif text is None and kind == "greater_than_equal":
        text = f"must be at least {ctx.get('ge')}"
    elif text is None and kind == "too_long":
        text = f"must have at most {ctx.get('max_length')} items"
    elif text is None and kind == "string_too_long":
        text = f"must be at most {ctx.get('max_length')} characters"
    elif text is None and kind == "string_pattern_mismatch":
        text = "must be " + _ID_DESCRIPTION
    elif text is None:
        text = str(error["msg"])
    if not where:
        return text
    return f"'{where}' {text}"


_MESSAGES: Mapping[str, str] = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "string_too_short": "must not be empty",
    "model_type": "must be a JSON object",
    "dict_type": "must be a JSON object",
}


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text
