"""The five tools as declared objects: each admits a request once and runs what it admitted.

``admit`` validates the arguments into the tool's model and compiles a search's query,
without I/O; it never raises (a refusal rides in the ``Admitted`` value and is answered
where the run would start). ``prepare`` (the searches) waits for the caller's step beside
the lane; ``run`` is the workflow (``searches``, ``exact_tools``): its provider calls are
translated at the service boundary, and whatever else escapes is answered by the runtime's
executor, the one outer guard. Go-to-definition follows a request from here to the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from contracts.envelope import Execution
from worker.signals import ExecutionSignal
from worker.store import CompiledQuery
from worker.tools import exact_tools, filters, searches
from worker.tools import input as args_input
from worker.tools.context import ToolContext
from worker.tools.definitions import Admitted, Endpoint, ToolError

ArgsT = TypeVar("ArgsT")


@dataclass(frozen=True, slots=True)
class _ToolAdmission(Generic[ArgsT]):
    """The admission every tool shares: ``parse``, then ``compiled`` (a search's query)."""

    ctx: ToolContext
    name: ClassVar[str]
    prepares: ClassVar[bool] = False

    def admit(
        self,
        request_id: str,
        execution: Execution,
        arguments: Mapping[str, Any],
        endpoint: Endpoint,
    ) -> Admitted[ArgsT]:
        try:
            args = self.parse(arguments)
            query = self.compiled(args)
        except ToolError as refusal:
            return Admitted(request_id, execution, endpoint, None, refusal)
        except Exception as exc:
            failed = self.ctx.boundary.translate(self.name, None, exc)
            return Admitted(request_id, execution, endpoint, None, failed)
        return Admitted(request_id, execution, endpoint, args, query=query)

    def parse(self, arguments: Mapping[str, Any]) -> ArgsT:
        raise NotImplementedError

    def compiled(self, args: ArgsT) -> CompiledQuery | None:
        return None

    async def prepare(self, admitted: Admitted[ArgsT], signal: ExecutionSignal) -> None:
        """Only called when ``prepares``: the searches' catch-up wait."""
        await self.ctx.prepare_search(admitted, signal)

    async def run(self, admitted: Admitted[ArgsT], signal: ExecutionSignal) -> str:
        raise NotImplementedError


class SessionSearch(_ToolAdmission[filters.SessionSearchRequest]):
    name = "session_search"
    prepares = True

    def parse(self, arguments: Mapping[str, Any]) -> filters.SessionSearchRequest:
        model = args_input.SessionSearchArguments
        return filters.session_search_request(
            args_input.parse_arguments(self.name, model, arguments)
        )

    def compiled(self, args: filters.SessionSearchRequest) -> CompiledQuery:
        return self.ctx.compile_query(args.query)

    async def run(
        self, admitted: Admitted[filters.SessionSearchRequest], signal: ExecutionSignal
    ) -> str:
        return await searches.session_search(self.ctx, admitted, signal)


class SessionEventSearch(_ToolAdmission[args_input.SessionEventSearchArguments]):
    name = "session_event_search"
    prepares = True

    def parse(self, arguments: Mapping[str, Any]) -> args_input.SessionEventSearchArguments:
        return args_input.parse_arguments(
            self.name, args_input.SessionEventSearchArguments, arguments
        )

    def compiled(self, args: args_input.SessionEventSearchArguments) -> CompiledQuery:
        return self.ctx.compile_query(args.query)

    async def run(
        self, admitted: Admitted[args_input.SessionEventSearchArguments], signal: ExecutionSignal
    ) -> str:
        return await searches.session_event_search(self.ctx, admitted, signal)


class SessionTrace(_ToolAdmission[args_input.SessionTraceArguments]):
    name = "session_trace"

    def parse(self, arguments: Mapping[str, Any]) -> args_input.SessionTraceArguments:
        return args_input.parse_arguments(self.name, args_input.SessionTraceArguments, arguments)

    async def run(
        self, admitted: Admitted[args_input.SessionTraceArguments], signal: ExecutionSignal
    ) -> str:
        return await exact_tools.session_trace(self.ctx, admitted, signal)


class SessionEventTrace(_ToolAdmission[args_input.SessionEventTraceArguments]):
    name = "session_event_trace"

    def parse(self, arguments: Mapping[str, Any]) -> args_input.SessionEventTraceArguments:
        return args_input.parse_arguments(
            self.name, args_input.SessionEventTraceArguments, arguments
        )

    async def run(
        self, admitted: Admitted[args_input.SessionEventTraceArguments], signal: ExecutionSignal
    ) -> str:
        return await exact_tools.session_event_trace(self.ctx, admitted, signal)


class SessionEventRead(_ToolAdmission[args_input.SessionEventReadArguments]):
    name = "session_event_read"

    def parse(self, arguments: Mapping[str, Any]) -> args_input.SessionEventReadArguments:
        return args_input.parse_arguments(
            self.name, args_input.SessionEventReadArguments, arguments
        )

    async def run(
        self, admitted: Admitted[args_input.SessionEventReadArguments], signal: ExecutionSignal
    ) -> str:
        return await exact_tools.session_event_read(self.ctx, admitted, signal)
