"""What the tools package gives the runtime: definitions, admitted requests, one error type.

The runtime knows nothing else of the tools. A request is admitted once, when it arrives
(``ToolDefinition.admit``: its arguments validated into the tool's model, a search's query
compiled, its caller's identity read from the envelope), and the one ``Admitted`` value is
what the tool's ``prepare`` and ``run`` receive. ``run`` returns the canonical plain text
of a successful result; every failure is a ``ToolError`` with a known code and a model-safe
message. A cancelled or timed-out execution is also a ``ToolError`` (CANCELLED carries the
exact cancel reason as its message).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from contracts.envelope import Execution, owner_key
from contracts.errors import ErrorCode
from worker.signals import ExecutionSignal
from worker.store import CompiledQuery

ExecutionMode = Literal["exclusive", "parallel"]

ArgsT = TypeVar("ArgsT")
# The request id of a run in this process, with no envelope (tests, benches).
LOCAL_REQUEST_ID = "r-local"


class ToolError(Exception):
    """A model-facing failure: ``code`` and ``message`` go into the reply as they are."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Caller:
    """The calling session as the index knows it: its id and its workspace (cwd)."""

    session_id: str
    cwd: str | None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a request arrived: its tool and partition (None: the unpartitioned subject)."""

    tool: str
    partition: int | None = None

    @property
    def stats_key(self) -> str:
        """The service endpoint's name: the tool's, with ``-p<k>`` for a partition's."""
        return self.tool if self.partition is None else f"{self.tool}-p{self.partition}"


@dataclass(slots=True)
class CallerMemo:
    """The caller, resolved at most once per request: the read-your-writes wait done
    (by a search's prepare step), then the caller read and interpreted (by its run)."""

    caught_up: bool = False
    caller: Caller | None = None


@dataclass(frozen=True, slots=True)
class Admitted(Generic[ArgsT]):
    """One request, admitted once: everything later steps need without parsing again.

    ``arguments`` are the tool's validated model (None when refused: ``refusal`` says why,
    and is raised by ``checked`` where the run would start, so a refused request is answered
    at the same point, after the same checks, as an admitted one)."""

    request_id: str
    execution: Execution
    endpoint: Endpoint
    arguments: ArgsT | None
    refusal: ToolError | None = None
    query: CompiledQuery | None = None  # a search's query, compiled
    memo: CallerMemo = field(default_factory=CallerMemo)

    @property
    def session_id(self) -> str | None:
        """The caller's trusted identity from the envelope, or None (answered NO_IDENTITY)."""
        agent = self.execution.agent
        return agent.session_id if agent is not None and agent.session_id else None

    @property
    def prior_seq(self) -> int | None:
        """The caller's last seq before its current step (what read-your-writes waits
        for and its own-session search stops at), or None without a step before it."""
        step = self.execution.step_start_seq
        return step - 1 if step is not None and step - 1 >= 1 else None

    @property
    def owner(self) -> tuple[str, str | None] | None:
        """Who may cancel this request (``contracts.envelope.owner_key``)."""
        return owner_key(self.execution.agent)

    def checked(self) -> ArgsT:
        """The validated arguments; raises the admission's refusal."""
        if self.refusal is not None:
            raise self.refusal
        assert self.arguments is not None
        return self.arguments


class ToolHandler(Protocol):
    """A declared tool: admit a request once, wait beside the lane (``prepare``, only when
    ``prepares``), run it."""

    @property
    def name(self) -> str: ...

    @property
    def prepares(self) -> bool:
        """Whether ``prepare`` has anything to do (the searches' catch-up wait)."""
        ...

    def admit(
        self,
        request_id: str,
        execution: Execution,
        arguments: Mapping[str, Any],
        endpoint: Endpoint,
    ) -> Admitted[Any]:
        """Never raises: a refusal is carried in the value."""
        ...

    async def prepare(self, admitted: Admitted[Any], signal: ExecutionSignal) -> None:
        """What a request may need before it can run (the read-your-writes catch-up): the
        search lane runs it outside the exclusive lane, so one lagging caller cannot stall
        the others. Raises ToolError like ``run``."""
        ...

    async def run(self, admitted: Admitted[Any], signal: ExecutionSignal) -> str: ...


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: dict[str, Any]
    execution: ExecutionMode
    handler: ToolHandler
    read_only: bool = True
    # The partition whose subject this definition answers (None: the unpartitioned one).
    partition: int | None = None

    @property
    def address(self) -> Endpoint:
        return Endpoint(self.name, self.partition)

    @property
    def endpoint(self) -> str:
        """The service endpoint's name: the tool's, with ``-p<k>`` for a partition's."""
        return self.address.stats_key

    @property
    def prepares(self) -> bool:
        return self.handler.prepares

    def admit(
        self, request_id: str, execution: Execution, arguments: Mapping[str, Any]
    ) -> Admitted[Any]:
        return self.handler.admit(request_id, execution, arguments, self.address)

    async def run(
        self, arguments: Mapping[str, Any], execution: Execution, signal: ExecutionSignal
    ) -> str:
        """Admit and run in this process, without an envelope or a lane (tests, benches):
        the run does what a prepare step would have, once."""
        return await self.handler.run(self.admit(LOCAL_REQUEST_ID, execution, arguments), signal)


@dataclass(frozen=True, slots=True)
class ToolSet:
    tools: tuple[ToolDefinition, ...]
    prompt_section: str

    def get(self, name: str) -> ToolDefinition | None:
        return next((tool for tool in self.tools if tool.name == name), None)
