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
class ToolConfig:
    max_search_results: int = 100
    search_timeout_ms: int = 30_000
    persisted_inspect_concurrency: int = 4
    # Read-your-writes waits at most this long for the index to reach the caller's step,
    # so one runtime that sends a step the index never reaches cannot hold a search lane
    # for the whole search deadline.
    catch_up_timeout_ms: int = 5_000
    # Internal provider page size; the model never sees it. Equal to the default
    # max_search_results, so a search is one provider query (every page re-scores every
    # match); pages are still followed when the cap is set higher.
    provider_page_size: int = 100


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
