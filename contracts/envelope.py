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


def owner_key(agent: AgentIdentity | None) -> tuple[str, str | None] | None:
    """Who owns a request or a cancel: the trusted (session_id, agent_id), or None."""
    return None if agent is None else (agent.session_id, agent.agent_id)


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


class CancelRequest(BaseModel):
    """A ``<prefix>.cancel`` broadcast; no reply. It is honoured only for a request whose
    ``execution.agent`` equals ``agent`` (session_id and agent_id alike: a missing
    ``agent_id`` and ``agent_id: null`` are the same). The one model of the message: the
    worker parses it (``worker.serving.cancellation``) and docs/asyncapi.yaml is generated
    from it. Other fields are ignored."""

    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        json_schema_extra={
            "description": "Published on <prefix>.cancel; no reply. Honoured only for a request "
            "whose execution.agent equals agent (session_id and agent_id alike; a missing "
            "agent_id and agent_id null are the same); any other cancel is ignored. Fields "
            "other than these are ignored."
        },
    )

    request_id: Id = Field(description="The request to cancel, as its envelope named it.")
    agent: AgentIdentity = Field(
        description="The requester's identity, exactly the request's execution.agent; a "
        "cancel with another identity, or none, is ignored (counted in cancels_ignored)."
    )
    reason: str | None = Field(
        default=None,
        description="Reaches the model as quoted data in the CANCELLED message: control and "
        "format characters removed, then cut at 200 characters followed by '…'. Missing, "
        "blank or not a string: 'The request was cancelled by the runtime (no reason given).'",
    )


class SpillEncryption(BaseModel):
    """How a spilled object is sealed (docs/spill.md): AES-256-GCM, the object being the
    ciphertext followed by the 16-byte tag, no additional authenticated data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alg: Literal["A256GCM"] = "A256GCM"
    key: str  # 32 bytes, unpadded base64url: only this locator ever carries it
    nonce: str  # 12 bytes, unpadded base64url


class SpillLocator(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bucket: str
    name: str  # random: says nothing about the content
    size: int  # bytes of the plaintext (the stored object is 16 bytes longer: the tag)
    digest: str  # "SHA-256=<urlsafe base64>" of the plaintext
    hint: str
    encryption: SpillEncryption
    # When the bucket's TTL removes the object (RFC 3339, UTC, milliseconds).
    expires_at: str


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
