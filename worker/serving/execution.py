"""Running one tool request: the same steps for both lanes.

Run the tool under its signal, map every outcome to a reply (the runtime's own abort
through the tools' abort table, ``abort_error``, a cancel with its exact reason; anything
else through the tools' one error table, ``model_error``: a ToolError as it is, a bug as
the fixed TOOL_FAILED, logged with its cause), and pass a success through the spill step.
Internal error text never reaches a reply.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import MaxPayloadError

from contracts.envelope import ToolRequest
from worker.logs import get_logger, request_context
from worker.serving import replies
from worker.serving.cancellation import CancellationRegistry
from worker.serving.replies import EncodedReply
from worker.serving.reply_stats import ReplyStats
from worker.serving.spill import Spiller
from worker.signals import DeadlineExceeded, ExecutionAborted, ExecutionCancelled, ExecutionSignal
from worker.tools import Admitted, ToolDefinition, ToolError

log = get_logger("worker.serving.execution")


@dataclass(frozen=True, slots=True)
class Executor:
    spiller: Spiller
    stats: ReplyStats = field(default_factory=ReplyStats)

    async def execute(
        self, tool: ToolDefinition, admitted: Admitted[Any], signal: ExecutionSignal
    ) -> EncodedReply:
        """The reply for ``admitted``. Never raises (except task cancellation)."""
        # Every line logged while serving it, in any layer, carries request_id and tool.
        runs = signal.error is None  # else it is answered without running
        started = time.perf_counter_ns()
        try:
            with request_context(request_id=admitted.request_id, tool=tool.name):
                return await self._execute(tool, admitted, signal)
        finally:
            if runs:
                self.stats.record_run(tool.endpoint, time.perf_counter_ns() - started)

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
            except ExecutionAborted as exc:
                log.info("prepare: aborted", ms=_ms(started))
                return replies.aborted(rid, exc, started=False)
            except Exception as exc:
                return _failed(rid, exc, started, "prepare: tool error", "prepare failed")
        return None

    async def _execute(
        self, tool: ToolDefinition, admitted: Admitted[Any], signal: ExecutionSignal
    ) -> EncodedReply:
        rid = admitted.request_id
        # request_context (execute) already tags these lines with request_id and tool.
        if signal.error is not None:
            log.info("not started", cancelled=not isinstance(signal.error, DeadlineExceeded))
            return replies.aborted(rid, signal.error, started=False)
        started = time.perf_counter()
        try:
            text = await tool.handler.run(admitted, signal)
        except ExecutionAborted as exc:
            # The reason is the requester's text: it goes to the reply, not to the log.
            log.info("aborted", deadline=isinstance(exc, DeadlineExceeded), ms=_ms(started))
            return replies.aborted(rid, exc, started=True)
        except Exception as exc:
            return _failed(rid, exc, started, "tool error", "tool failed")
        finally:
            signal.close()
        # A result that lands after a cancel is still a cancelled execution.
        if signal.error is not None and not isinstance(signal.error, DeadlineExceeded):
            return replies.aborted(rid, signal.error, started=True)
        try:
            reply = await self.spiller.reply(rid, text)
        except Exception:
            log.exception("spill failed")
            return replies.tool_failed(rid)
        log.info("ok", ms=_ms(started), spilled=reply.spilled)
        return reply


def _failed(
    request_id: str, exc: Exception, started: float, tool_error: str, bug: str
) -> EncodedReply:
    """A step's failure as the model sees it (the tools' table); a ToolError is logged as
    the model's news, anything else with its cause."""
    if isinstance(exc, ToolError):
        log.info(tool_error, code=exc.code.value, ms=_ms(started))
    else:
        log.exception(bug, ms=_ms(started))
    return replies.model_failure(request_id, exc)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


async def admit(
    nc: NATS,
    registry: CancellationRegistry,
    tool: ToolDefinition,
    msg: Msg,
    stats: ReplyStats | None = None,
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
        await send(nc, msg.reply, bad.reply(), request_id=bad.request_id, tool=tool, stats=stats)
        return None
    rid = admitted.request_id
    if (reason := registry.cancelled_reason(admitted.owner, rid)) is not None:
        reply = replies.aborted(rid, ExecutionCancelled(reason), started=False)
        await send(nc, msg.reply, reply, request_id=rid, tool=tool, stats=stats)
        return None
    return admitted


def admitted_from(tool: ToolDefinition, request: ToolRequest) -> Admitted[Any]:
    """``request`` (a validated envelope) admitted by ``tool``: the one admission of a
    request in this process."""
    return tool.admit(request.request_id, request.execution, request.arguments)


async def send(
    nc: NATS,
    subject: str,
    reply: EncodedReply,
    *,
    request_id: str,
    tool: ToolDefinition,
    stats: ReplyStats | None = None,
) -> None:
    """Publish ``reply``; on a payload the server refuses, send TOOL_FAILED instead. With
    ``stats``, an error reply is counted for ``tool``'s endpoint: the definition, not a
    name, is passed, so a partition's endpoint (``session_trace-p3``) is never counted
    under the bare tool name."""
    try:
        await nc.publish(subject, reply.data, headers=reply.headers)
    except MaxPayloadError:
        log.exception("reply too large to publish", request_id=request_id)
        reply = replies.tool_failed(request_id)
        await nc.publish(subject, reply.data, headers=reply.headers)
    if stats is not None:
        stats.record_reply(tool.endpoint, reply)
