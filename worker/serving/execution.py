"""The executor: the one outer guard of every request, for both lanes and every endpoint.

An endpoint is declared once (``Declared``: its name, subject, metadata, the lane's intake
and its presenter) and ``Executor.subscriber`` wraps its intake: whatever escapes the
intake (a bug in admission, in a lane's hand-off) is answered there through the error
table and logged once with its cause. A request's run (``Executor.run``) is where the
rest is applied, once: the logging context, the deadline and cancellation (the fired
signal through the tools' abort table, ``abort_error``; a cancel with its exact reason),
every other failure through the tools' one error table (``model_error``: a ToolError as it
is, a bug as the fixed TOOL_FAILED, logged with its cause), the run's stats, and a success
through the presenter (the tools' spill step). Internal error text never reaches a reply.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import MaxPayloadError

from contracts.envelope import ToolRequest
from worker.logs import get_logger, request_context
from worker.serving import replies
from worker.serving.cancellation import CancellationRegistry
from worker.serving.presenters import TOOL_FAILURES, Failures, Presenter, ToolReplies
from worker.serving.replies import EncodedReply
from worker.serving.reply_stats import ReplyStats
from worker.serving.spill import Spiller
from worker.signals import DeadlineExceeded, ExecutionAborted, ExecutionCancelled, ExecutionSignal
from worker.tools import (
    Admitted,
    ToolDefinition,
    ToolError,
    abort_error,
    model_error,
    model_error_of,
    tool_failed,
)
from worker.transport.micro import EndpointSpec, MicroService
from worker.transport.pending import PendingLimits

log = get_logger("worker.serving.execution")

AdmittedT = TypeVar("AdmittedT")
AdmittedT_contra = TypeVar("AdmittedT_contra", contravariant=True)
ResultT = TypeVar("ResultT")
ResultT_co = TypeVar("ResultT_co", covariant=True)

# A subscription's callback: what the transport calls with each message.
Handler = Callable[[Msg], Awaitable[None]]


class Runs(Protocol[AdmittedT_contra, ResultT_co]):
    """A declared handler's run (a tool's ``ToolHandler``, an operator verb)."""

    async def run(self, admitted: AdmittedT_contra, signal: ExecutionSignal) -> ResultT_co: ...


@dataclass(frozen=True, slots=True)
class Declared:
    """One endpoint, declared once: its name (the stats key), subject and metadata, the
    lane's intake its messages go to, and the presenter its replies are written by. The
    queue group and the pending limits are the service's (``MicroService.add_endpoint``)."""

    name: str
    subject: str
    metadata: Mapping[str, str]
    intake: Handler
    presenter: Failures


@dataclass(frozen=True, slots=True)
class Route(Generic[AdmittedT, ResultT]):
    """What one run executes: the endpoint's stats key, its name in the log, the declared
    handler and the presenter of its outcome."""

    stats_key: str
    label: str
    handler: Runs[AdmittedT, ResultT]
    presenter: Presenter[ResultT]


class Executor:
    """Runs requests and answers them; never lets a failure past it."""

    def __init__(self, nc: NATS, spiller: Spiller, stats: ReplyStats | None = None) -> None:
        self.nc = nc
        self.stats = stats if stats is not None else ReplyStats()
        self.tool_replies = ToolReplies(spiller)

    async def serve(
        self, micro: MicroService, declared: Declared, pending: PendingLimits | None
    ) -> Subscription:
        """Subscribe ``declared`` on ``micro`` (its queue group, ``pending`` limits), its
        intake under this executor's guard."""
        spec = EndpointSpec(
            name=declared.name,
            subject=declared.subject,
            handler=self.subscriber(declared),
            metadata=dict(declared.metadata),
        )
        return await micro.add_endpoint(spec, pending)

    def subscriber(self, declared: Declared) -> Handler:
        """``declared``'s intake as the subscription's callback, under the outer guard."""

        async def handle(msg: Msg) -> None:
            try:
                await declared.intake(msg)
            except Exception as exc:
                await self._escaped(declared, msg, exc)

        return handle

    async def _escaped(self, declared: Declared, msg: Msg, exc: Exception) -> None:
        rid = replies.request_id_of(msg.data)
        log.exception("request failed before its run", endpoint=declared.name, request_id=rid)
        if not msg.reply:
            return
        reply = declared.presenter.failure(rid, model_error(exc))
        # The connection itself failing: nobody left to answer, and the cause is logged.
        with contextlib.suppress(Exception):
            await self.answer(msg.reply, reply, rid, declared.name, declared.presenter)

    async def answer(
        self, subject: str, reply: EncodedReply, request_id: str, stats_key: str, failures: Failures
    ) -> None:
        """Publish ``reply`` (``publish``), counted for its endpoint when it is an error."""
        sent = await publish(self.nc, subject, reply, request_id=request_id, failures=failures)
        self.stats.record_reply(stats_key, sent)

    async def answer_tool(
        self, tool: ToolDefinition, subject: str, reply: EncodedReply, request_id: str
    ) -> None:
        """A tool's ``reply``, counted under ``tool``'s endpoint: the definition, not a name,
        so a partition's endpoint (``session_trace-p3``) is never counted under the bare
        tool name."""
        await self.answer(subject, reply, request_id, tool.endpoint, TOOL_FAILURES)

    async def execute(
        self, tool: ToolDefinition, admitted: Admitted[Any], signal: ExecutionSignal
    ) -> EncodedReply:
        """A tool's reply for ``admitted``. Never raises (except task cancellation)."""
        return await self.run(self.tool_route(tool), admitted.request_id, admitted, signal)

    def tool_route(self, tool: ToolDefinition) -> Route[Admitted[Any], str]:
        """What a run of ``tool`` executes: its handler, its replies written for a tool."""
        return Route(tool.endpoint, tool.name, tool.handler, self.tool_replies)

    async def run(
        self,
        route: Route[AdmittedT, ResultT],
        request_id: str,
        admitted: AdmittedT,
        signal: ExecutionSignal,
    ) -> EncodedReply:
        """The reply for one admitted request. Never raises (except task cancellation)."""
        runs = signal.error is None  # else it is answered without running
        started = time.perf_counter_ns()
        # Every line logged while serving it, in any layer, carries request_id and tool.
        context = request_context(request_id=request_id, tool=route.label)
        try:
            with context:
                return await self._run(route, request_id, admitted, signal)
        finally:
            if runs:
                self.stats.record_run(route.stats_key, time.perf_counter_ns() - started)

    async def prepare(
        self, tool: ToolDefinition, admitted: Admitted[Any], signal: ExecutionSignal
    ) -> EncodedReply | None:
        """Run the tool's prepare step (a wait that must not hold a lane): None when the
        request may now run, else the reply that answers it. Never raises (except task
        cancellation). The signal stays open for the run."""
        if not tool.prepares or signal.error is not None:
            return None  # execute answers an aborted signal itself
        rid = admitted.request_id
        with request_context(request_id=rid, tool=tool.name):
            started = time.perf_counter()
            try:
                await tool.handler.prepare(admitted, signal)
            except Exception as exc:
                failed = _failure(exc, signal, started, ran=False, step="prepare: ")
                return self.tool_replies.failure(rid, failed)
        return None

    async def _run(
        self,
        route: Route[AdmittedT, ResultT],
        rid: str,
        admitted: AdmittedT,
        signal: ExecutionSignal,
    ) -> EncodedReply:
        presenter = route.presenter
        if signal.error is not None:
            log.info("not started", cancelled=not isinstance(signal.error, DeadlineExceeded))
            return presenter.failure(rid, abort_error(signal.error, started=False))
        started = time.perf_counter()
        try:
            result = await route.handler.run(admitted, signal)
        except Exception as exc:
            return presenter.failure(rid, _failure(exc, signal, started, ran=True, step=""))
        finally:
            signal.close()
        # A result that lands after a cancel is still a cancelled execution.
        if signal.error is not None and not isinstance(signal.error, DeadlineExceeded):
            return presenter.failure(rid, abort_error(signal.error, started=True))
        try:
            reply = await presenter.success(rid, result)
        except Exception:
            # The spill step or the encoding of a result: a bug or an outage, never news.
            log.exception("reply failed", ms=_ms(started))
            return presenter.failure(rid, tool_failed())
        log.info("ok", ms=_ms(started), spilled=reply.spilled)
        return reply


def _failure(
    exc: Exception, signal: ExecutionSignal, started: float, *, ran: bool, step: str
) -> ToolError:
    """A step's failure as the model sees it, logged once: an abort by the abort table
    (ours wins over whatever a provider raised while being stopped), a ToolError as the
    model's news, anything else by the error table and with its cause."""
    fired = exc if isinstance(exc, ExecutionAborted) else signal.error
    if fired is not None and not isinstance(exc, ToolError):
        # The reason is the requester's text: it goes to the reply, not to the log.
        log.info(f"{step}aborted", deadline=isinstance(fired, DeadlineExceeded), ms=_ms(started))
        return abort_error(fired, started=ran)
    if isinstance(exc, ToolError):
        log.info(f"{step}tool error", code=exc.code.value, ms=_ms(started))
        return exc
    if not model_error_of(exc).logged:
        # The requester's own mistake (a query with nothing searchable, raised by the store
        # in the operator's path): one line with its code, as the tools' path logs it, never
        # its text (the requester's query, which may hold anything) nor a traceback.
        error = model_error(exc)
        log.info(f"{step}tool error", code=error.code.value, ms=_ms(started))
        return error
    log.exception(f"{step}tool failed", ms=_ms(started))
    return model_error(exc)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


async def admit(
    executor: Executor, registry: CancellationRegistry, tool: ToolDefinition, msg: Msg
) -> Admitted[Any] | None:
    """The start every endpoint handler shares: the request admitted (its envelope parsed
    and its arguments by the tool, once), or None when it was already answered (bad
    envelope, cancelled before it arrived) or cannot be answered."""
    if not msg.reply:
        log.warning("request without a reply subject ignored", tool=tool.name)
        return None
    try:
        admitted = admitted_from(tool, replies.parse_request(msg.data))
    except replies.BadEnvelope as bad:
        await executor.answer_tool(tool, msg.reply, bad.reply(), bad.request_id)
        return None
    rid = admitted.request_id
    if (reason := registry.cancelled_reason(admitted.owner, rid)) is not None:
        reply = replies.aborted(rid, ExecutionCancelled(reason), started=False)
        await executor.answer_tool(tool, msg.reply, reply, rid)
        return None
    return admitted


def admitted_from(tool: ToolDefinition, request: ToolRequest) -> Admitted[Any]:
    """``request`` (a validated envelope) admitted by ``tool``: the one admission of a
    request in this process."""
    return tool.admit(request.request_id, request.execution, request.arguments)


async def publish(
    nc: NATS, subject: str, reply: EncodedReply, *, request_id: str, failures: Failures
) -> EncodedReply:
    """Publish ``reply``; on a payload the server refuses, the presenter's TOOL_FAILED
    instead. Returns the reply sent."""
    try:
        await nc.publish(subject, reply.data, headers=reply.headers)
    except MaxPayloadError:
        log.exception("reply too large to publish", request_id=request_id)
        reply = failures.failure(request_id, tool_failed())
        await nc.publish(subject, reply.data, headers=reply.headers)
    return reply
