"""What the tools package gives the runtime: definitions, configuration, one error type.

The runtime knows nothing else of the tools. ``run`` returns the canonical plain text of a
successful result; every failure is a ``ToolError`` with a known code and a model-safe
message. A cancelled or timed-out execution is also a ``ToolError`` (CANCELLED carries the
exact cancel reason as its message).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from contracts.envelope import Execution
from contracts.errors import ErrorCode
from worker.signals import ExecutionSignal

ExecutionMode = Literal["exclusive", "parallel"]

ToolRun = Callable[[Mapping[str, Any], Execution, ExecutionSignal], Awaitable[str]]
# What a request may need before it can run: argument checks, then waiting (the
# read-your-writes catch-up). The search lane runs it outside the exclusive lane, so one
# lagging caller cannot stall the others. Raises ToolError like ``run``.
ToolPrepare = Callable[[Mapping[str, Any], Execution, ExecutionSignal], Awaitable[None]]


class ToolError(Exception):
    """A model-facing failure: ``code`` and ``message`` go into the reply as they are."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: dict[str, Any]
    execution: ExecutionMode
    run: ToolRun
    read_only: bool = True
    prepare: ToolPrepare | None = None
    # The partition whose subject this definition answers (None: the unpartitioned one).
    partition: int | None = None

    @property
    def endpoint(self) -> str:
        """The service endpoint's name: the tool's, with ``-p<k>`` for a partition's."""
        return self.name if self.partition is None else f"{self.name}-p{self.partition}"


@dataclass(frozen=True, slots=True)
class ToolSet:
    tools: tuple[ToolDefinition, ...]
    prompt_section: str

    def get(self, name: str) -> ToolDefinition | None:
        return next((tool for tool in self.tools if tool.name == name), None)
