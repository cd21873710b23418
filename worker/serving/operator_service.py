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
logging context; the run's stats). An operator search takes the search lane's turn, so it
never runs beside a model's search in this worker.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson
from nats.aio.msg import Msg

from contracts.errors import ErrorCode
from contracts.subjects import OPERATOR_SERVICE_NAME, Subjects
from worker.serving.execution import Declared, Executor, Route
from worker.serving.presenters import OperatorJson
from worker.serving.slow_consumers import PendingLimits
from worker.signals import ExecutionSignal
from worker.tools import OperatorQueries, OperatorRequest, OperatorVerb, ToolError
from worker.transport.micro import MicroService

OPERATIONS_VERB: Final = "operations"
DEAD_LETTERS_SHOWN: Final = 50
NOT_JSON_MESSAGE: Final = "The body is not JSON."
NOT_ARGUMENTS_MESSAGE: Final = 'The body must be {"arguments": {...}}.'
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


@dataclass(frozen=True, slots=True)
class InSearchTurn:
    """A searching verb, run in the search lane's turn: the lane holds it around each of its
    searches, so one search at a time runs in this worker, whoever asked."""

    verb: OperatorHandler
    turn: asyncio.Lock

    async def run(self, request: OperatorRequest, signal: ExecutionSignal) -> dict[str, Any]:
        async with self.turn:
            return await self.verb.run(request, signal)


def operator_request(verb: OperatorHandler, data: bytes) -> OperatorRequest:
    """The body read and the verb's arguments admitted, once; a refusal rides in the value."""
    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        return OperatorRequest(None, ToolError(ErrorCode.INVALID_ARGUMENTS, NOT_JSON_MESSAGE))
    arguments = body.get("arguments", {}) if isinstance(body, dict) else None
    if not isinstance(arguments, dict):
        return OperatorRequest(None, ToolError(ErrorCode.INVALID_ARGUMENTS, NOT_ARGUMENTS_MESSAGE))
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
        search_turn: asyncio.Lock,
    ) -> None:
        self._executor = executor
        operations = Operations(queries.verbs["deadletters"], status, load)
        self._verbs: tuple[OperatorHandler, ...] = (*queries.verbs.values(), operations)
        self._timeout_s = timeout_ms / 1000.0
        self._search_turn = search_turn
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
                intake=functools.partial(self._answer, verb, self._route(verb)),
                presenter=JSON,
            )
            await executor.serve(micro, declared, pending)
        await executor.nc.flush()

    def _route(self, verb: OperatorHandler) -> Route[OperatorRequest, dict[str, Any]]:
        runs = InSearchTurn(verb, self._search_turn) if verb.searches else verb
        name = f"operator-{verb.name}"
        return Route(name, name, runs, JSON)

    async def _answer(
        self, verb: OperatorHandler, route: Route[OperatorRequest, dict[str, Any]], msg: Msg
    ) -> None:
        """The lane of an operator verb: answered in the subscription's own turn."""
        if not msg.reply:
            return
        request = operator_request(verb, msg.data)
        signal = ExecutionSignal.after(self._timeout_s)
        reply = await self._executor.run(route, "", request, signal)
        await self._executor.answer(msg.reply, reply, "", route.stats_key, JSON)

    async def stop(self) -> None:
        if self.micro is not None:
            await self.micro.stop()
