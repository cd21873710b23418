"""The manifest message (the cancel broadcast's model is ``contracts.envelope.CancelRequest``).

Plain JSON like the envelopes; docs/protocol.md describes them and docs/asyncapi.yaml is
generated from these models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
