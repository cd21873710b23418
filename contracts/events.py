"""One session event, as runtimes publish it on ``sessions.events.<session_id>``."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, GetPydanticSchema
from pydantic_core import core_schema

from contracts.ids import Id

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
