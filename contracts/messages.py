"""The other messages of the protocol: cancel broadcasts and the manifest.

Plain JSON like the envelopes; docs/protocol.md describes them and docs/asyncapi.yaml is
generated from these models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.envelope import Execution


class CancelRequest(BaseModel):
    """Published on ``<prefix>.cancel``; no reply. Fields other than these are ignored."""

    model_config = ConfigDict(frozen=True)

    request_id: str = Field(min_length=1, description="The request to cancel.")
    reason: str | None = Field(
        default=None,
        description="Reaches the requester as the CANCELLED message (first 2,048 characters);"
        " missing or blank: 'cancelled by the requester'.",
    )
    execution: Execution | None = Field(
        default=None,
        description="Optional: the requester's identity, as in the request "
        "(docs/protocol.md, Cancel identity).",
    )


class ManifestTool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    input_schema: dict[str, Any] = Field(
        description="JSON Schema 2020-12 of the tool's arguments (declares $schema)."
    )
    execution: Literal["exclusive", "parallel"]
    read_only: bool


class Manifest(BaseModel):
    """The reply of ``<prefix>.manifest`` (the request body is ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(description="The service version, as in $SRV.INFO.")
    tools: list[ManifestTool]
    prompt_section: str
    partition_count: int = Field(
        ge=1,
        description="Partitions of the events stream (its metadata): a requester sends a "
        "call to the tool subject of the caller's partition (docs/protocol.md §10).",
    )
