"""Request and reply envelopes for ``sessionquery.tool.<tool>``.

``arguments`` is what the model wrote and is validated per tool by the worker.
``execution`` is trusted: the runtime sets it, and NATS permissions decide who may publish.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contracts.errors import ErrorCode
from contracts.ids import Id

# Epoch milliseconds below this (1973-03-03 as ms; the year 5138 as seconds) are taken to
# be seconds by mistake: an absolute deadline in ms is 13 digits today.
MIN_DEADLINE_MS: Final = 100_000_000_000


class AgentIdentity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: Id
    agent_id: Id | None = None


class Execution(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: AgentIdentity | None = Field(
        default=None, description="The caller's identity; without it every tool refuses."
    )
    # The seq of the current step/start: the search excludes it and everything after.
    step_start_seq: int | None = Field(
        default=None,
        ge=1,
        description="Seq of the caller's current step/start: its own-session search excludes "
        "it and everything after, and waits until the index holds the session up to it.",
    )
    # Absolute deadline, epoch milliseconds.
    deadline_ms: int | None = Field(
        default=None,
        ge=0,
        description="Absolute deadline in epoch milliseconds (values that look like seconds "
        "are refused). Default: 30 s from arrival.",
        json_schema_extra={"minimum": MIN_DEADLINE_MS},
    )

    @field_validator("deadline_ms")
    @classmethod
    def _milliseconds(cls, value: int | None) -> int | None:
        if value is not None and value < MIN_DEADLINE_MS:
            raise ValueError(
                f"deadline_ms is an absolute time in epoch milliseconds; {value} looks like "
                f"epoch seconds or a duration (send seconds × 1000, e.g. {value * 1000} if "
                f"it is epoch seconds)"
            )
        return value


class ToolRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: Id = Field(
        description="Unique per request; a search's id is de-duplicated for 2 minutes."
    )
    execution: Execution = Field(
        default_factory=Execution, description="Trusted: set by the runtime, never the model."
    )
    # Validated strictly per tool by the worker, never here.
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="What the model wrote; see the tool's input_schema."
    )


class SpillLocator(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bucket: str
    name: str
    size: int
    digest: str  # "SHA-256=<urlsafe base64>", as the object store records it
    hint: str


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: ErrorCode
    message: str


class ToolReply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: str
    status: Literal["ok", "error"]
    content: str | None = None
    spill: SpillLocator | None = None
    error: ErrorBody | None = None

    @classmethod
    def ok(cls, request_id: str, content: str, spill: SpillLocator | None = None) -> ToolReply:
        return cls(request_id=request_id, status="ok", content=content, spill=spill)

    @classmethod
    def failure(cls, request_id: str, code: ErrorCode, message: str) -> ToolReply:
        return cls(
            request_id=request_id, status="error", error=ErrorBody(code=code, message=message)
        )

    def to_json(self) -> bytes:
        import orjson

        return orjson.dumps(self.model_dump(mode="json", exclude_none=True))
