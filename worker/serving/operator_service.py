"""The operator subjects: ``<prefix>.operator.<verb>``, a micro service of their own.

``sessionquery ui`` (a person's browser, through the UI server) asks these; models never
do. They are registered like the tool endpoints (``worker.transport.micro``: queue group,
explicit pending limits, ``$SRV`` discovery under ``session-query-operator``) on subjects
apart from ``<prefix>.tool.>``, so a deployment grants them to operator credentials only
(docs/ui.md). Request body: ``{"arguments": {...}}``; reply: ``{"status": "ok",
"result": {...}}`` or ``{"status": "error", "error": {"code", "message"}}`` with the tools'
codes and fixed messages (``presenters.OperatorJson``; nothing internal reaches a reply).

The verbs are the tools' operator queries, each declared once (``worker.tools.OperatorVerb``),
plus ``operations``: the index against its stream (what ``status`` reports), the latest dead
letters and this worker's load. Each is an endpoint of the same pipeline as the tools':
declared once (``execution.Declared``), its intake under the executor's guard, its request
admitted once and run by the executor (deadline: the search deadline; the error table; the
logging context; the run's stats). The operator's search takes the search lane like every
other search (``queued_endpoint``): queued on the work queue and run one at a time with
the models' searches.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from nats.aio.msg import Msg

from contracts.subjects import OPERATOR_SERVICE_NAME, Subjects
from worker.serving.execution import Declared, Executor, Handler, Route
from worker.serving.presenters import OperatorJson
from worker.serving.queued_endpoint import QueuedEndpoint, body_arguments
from worker.serving.search_lane import SearchLane
from worker.signals import ExecutionSignal
from worker.tools import OperatorQueries, OperatorRequest, OperatorVerb, ToolError
from worker.transport.micro import MicroService
from worker.transport.pending import PendingLimits

OPERATIONS_VERB: Final = "operations"
DEAD_LETTERS_SHOWN: Final = 50
JSON: Final = OperatorJson()

Status = Callable[[], Awaitable[dict[str, Any]]]


class OperatorHandler(Protocol):
    """A verb as an endpoint runs it: admitted once, then run."""

    @property
    def name(self) -> str: ...

    @property
    def searches(self) -> bool: ...

    def admit(self, arguments: Mapping[str, Any]) -> OperatorRequest: ...

    async def run(self, request: OperatorRequest, signal: ExecutionSignal) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Operations:
    """``operations``: what the operations page shows (its arguments are not read)."""

    deadletters: OperatorVerb
    status: Status
    load: Callable[[], dict[str, Any]]
    name: str = OPERATIONS_VERB
    searches: bool = False

    def admit(self, arguments: Mapping[str, Any]) -> OperatorRequest:
        return self.deadletters.admit({"limit": DEAD_LETTERS_SHOWN})

    async def run(self, request: OperatorRequest, signal: ExecutionSignal) -> dict[str, Any]:
        status = await self.status()
        letters = await self.deadletters.run(request, signal)
        return {"index": status, **letters, "load": self.load()}


def operator_request(verb: OperatorHandler, data: bytes) -> OperatorRequest:
    """The body read and the verb's arguments admitted, once; a refusal rides in the value."""
    arguments = body_arguments(data)
    if isinstance(arguments, ToolError):
        return OperatorRequest(None, arguments)
    return verb.admit(arguments)


class OperatorEndpoints:
    """The operator verbs of one worker, answered over its connection by its executor."""

    def __init__(
        self,
        executor: Executor,
        queries: OperatorQueries,
        *,
        status: Status,
        load: Callable[[], dict[str, Any]],
        timeout_ms: int,
        search_lane: SearchLane,
    ) -> None:
        self._executor = executor
        operations = Operations(queries.verbs["deadletters"], status, load)
        self._verbs: tuple[OperatorHandler, ...] = (*queries.verbs.values(), operations)
        self._timeout_ms = timeout_ms
        self._search_lane = search_lane
        self.micro: MicroService | None = None

    async def start(self, subjects: Subjects, version: str, pending: PendingLimits | None) -> None:
        executor = self._executor
        micro = MicroService(
            executor.nc,
            name=OPERATOR_SERVICE_NAME,
            version=version,
            description="Operator queries over the session index, for sessionquery ui",
            metadata={"subject_prefix": subjects.operator(""), "protocol": "docs/ui.md"},
        )
        await micro.start()
        self.micro = micro
        for verb in self._verbs:
            declared = Declared(
                name=f"operator-{verb.name}",
                subject=subjects.operator(verb.name),
                metadata={"verb": verb.name, "read_only": "true"},
                intake=self._intake(verb),
                presenter=JSON,
            )
            await executor.serve(micro, declared, pending)
        await executor.nc.flush()

    def _intake(self, verb: OperatorHandler) -> Handler:
        """A searching verb takes the search lane like every search; the others are
        answered in their subscription's own turn."""
        name = f"operator-{verb.name}"
        route: Route[OperatorRequest, dict[str, Any]] = Route(name, name, verb, JSON)
        if not verb.searches:
            return functools.partial(self._answer, verb, route)
        queued = QueuedEndpoint(name, verb, route)
        self._search_lane.queued.serve(queued)
        return functools.partial(
            self._search_lane.queued.enqueue, queued, timeout_ms=self._timeout_ms
        )

    async def _answer(
        self, verb: OperatorHandler, route: Route[OperatorRequest, dict[str, Any]], msg: Msg
    ) -> None:
        """The lane of an operator verb: answered in the subscription's own turn."""
        if not msg.reply:
            return
        request = operator_request(verb, msg.data)
        signal = ExecutionSignal.after(self._timeout_ms / 1000.0)
        reply = await self._executor.run(route, "", request, signal)
        await self._executor.answer(msg.reply, reply, "", route.stats_key, JSON)

    async def stop(self) -> None:
        if self.micro is not None:
            await self.micro.stop()
