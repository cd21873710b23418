"""One session event, as runtimes publish it on ``sessions.events.<session_id>``."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from contracts.ids import Id

KNOWN_EVENT_TYPES: Final = (
    "session/start",
    "session/title",
    "session/end",
    "step/start",
    "message/user",
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


class Cite(BaseModel):
    """A source event this event was derived from, possibly in another session."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    session_id: Id
    seq: int = Field(ge=1)


class SessionEvent(BaseModel):
    """The session event contract. ``type`` is open; ``surface`` is closed."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    session_id: Id
    seq: int = Field(ge=1)
    event_id: Id
    type: str = Field(min_length=1, max_length=128)
    surface: Surface
    # Strict mode would refuse ISO strings from JSON, so the time field alone is lax;
    # AwareDatetime still refuses a naive timestamp.
    time: AwareDatetime = Field(strict=False)
    payload: dict[str, Any] = Field(default_factory=dict)
    replaces: list[int] = Field(default_factory=list)
    cites: list[Cite] = Field(default_factory=list)

    @field_validator("surface", mode="before")
    @classmethod
    def _surface_from_json(cls, value: object) -> object:
        # Strict enums reject plain strings; accept exactly the closed set of values.
        if isinstance(value, str):
            try:
                return Surface(value)
            except ValueError:
                allowed = ", ".join(s.value for s in Surface)
                raise ValueError(f"surface must be one of: {allowed}") from None
        return value

    @field_validator("replaces")
    @classmethod
    def _positive_positions(cls, value: list[int]) -> list[int]:
        if any(pos < 1 for pos in value):
            raise ValueError("replaces holds positions (seq), which start at 1")
        return value

    @property
    def time_ms(self) -> int:
        return datetime_to_ms(self.time)


def datetime_to_ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def event_json_schema() -> dict[str, Any]:
    return SessionEvent.model_json_schema()
