"""A search fetched from the lane's work queue, admitted: a job for the lane (its message
held unacked, kept in progress by heartbeats until answered), or answered and terminated
without running (malformed, expired, cancelled, given up, queued in a newer format).

The lane (``search_lane``) decides when a job runs; this module decides what a fetched
message is. Which refusal applies is ``lane_decisions``' pure functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog
from nats.aio.msg import Msg

from contracts.subjects import Subjects
from worker.serving import lane_decisions as decide
from worker.serving import queue_encoding, replies
from worker.serving.admitted_handoff import AdmittedHandoff
from worker.serving.cancellation import CancellationRegistry
from worker.serving.deadlines import now_ms, signal_until
from worker.serving.execution import Executor, Route, admitted_from
from worker.serving.lane_decisions import MSG_ID_HEADER
from worker.serving.queue_encoding import NewerFormat, QueuedSearch
from worker.serving.queued_endpoint import QueuedEndpoint, QueuedEndpoints
from worker.serving.replies import BadEnvelope
from worker.serving.search_queue import SearchQueue
from worker.signals import ExecutionSignal
from worker.tools import ToolDefinition, ToolSet

# The lane's logger: these lines are the lane's, as an operator filters them.
log = structlog.get_logger("worker.serving.search_lane")

# A search queued in a newer format goes back for this long, for a worker that reads it.
NEWER_FORMAT_NAK_S: Final = 1.0


class FetchedAdmission:
    """Turns each fetched message into a job for the lane, or answers it unrun."""

    def __init__(
        self,
        *,
        toolsets: Mapping[int | None, ToolSet],
        queued: QueuedEndpoints,
        queue: SearchQueue,
        executor: Executor,
        registry: CancellationRegistry,
        handoff: AdmittedHandoff,
    ) -> None:
        # By the partition a search was addressed to (None: the unpartitioned subjects).
        self._toolsets = toolsets
        self._queued = queued
        self._queue = queue
        self._executor = executor
        self._registry = registry
        self._handoff = handoff

    async def admit(self, msg: Msg) -> AdmittedSearch | None:
        """A job for the lane, or None when the message was answered (or is malformed)
        and terminated."""
        queued = queue_encoding.decode(msg.data, msg.headers)
        partition, name = Subjects.search_queue_parts(msg.subject)
        other = self._queued.get(name)
        if other is not None:
            return await self._admit_queued(msg, queued, other)
        toolset = self._toolsets.get(partition)
        tool = toolset.get(name) if toolset is not None else None
        if queued is None or tool is None:
            log.error("malformed search queue message terminated", subject=msg.subject)
            await msg.term()
            return None
        delivered = msg.metadata.num_delivered or 1
        if isinstance(queued, NewerFormat):
            await self._newer_format(msg, queued, tool, delivered)
            return None
        reply_to = queued.reply_to
        admitted = self._handoff.take((msg.headers or {}).get(MSG_ID_HEADER, ""), msg.data)
        if admitted is None:
            # Queued by another process (or evicted here): admitted once, from its message.
            try:
                admitted = admitted_from(tool, replies.validate_request(queued.envelope))
            except BadEnvelope as bad:
                await self._answer(reply_to, bad.reply(), bad.request_id, tool)
                await msg.term()
                return None
        rid = admitted.request_id
        owner = admitted.owner
        reason = self._registry.cancelled_reason(owner, rid)
        refusal = decide.fetched_refusal(
            cancelled=reason is not None,
            deadline_ms=queued.deadline_ms,
            delivered=delivered,
            max_deliver=self._queue.max_deliver,
            now_ms=now_ms(),
        )
        if refusal is not None:
            # Given up: earlier deliveries died unanswered, which deserves an error line.
            report = log.error if refusal == "given-up" else log.info
            report("queued search answered unrun", request_id=rid, why=refusal, delivered=delivered)
            reply = decide.fetched_refusal_reply(rid, refusal, reason or "")
            await self._answer(reply_to, reply, rid, tool)
            await msg.term()
            return None
        signal = signal_until(queued.deadline_ms)
        return AdmittedSearch(
            msg=msg,
            route=self._executor.tool_route(tool),
            tool=tool,
            admitted=admitted,
            rid=rid,
            reply_to=reply_to,
            signal=signal,
            detach=self._registry.attach(owner, rid, signal),
            heartbeat=asyncio.create_task(self._heartbeat(msg), name=f"in-progress:{rid}"),
        )

    async def _newer_format(
        self, msg: Msg, queued: NewerFormat, tool: ToolDefinition, delivered: int
    ) -> None:
        """A search queued by a newer worker: left for one that reads it (a rolling
        upgrade), unless it expired or this is its last delivery."""
        refusal = decide.newer_format_refusal(
            deadline_ms=queued.deadline_ms,
            delivered=delivered,
            max_deliver=self._queue.max_deliver,
            now_ms=now_ms(),
        )
        if refusal is None:
            log.warning(
                "search queued in a newer format left for another worker",
                version=queued.version,
                delivered=delivered,
            )
            with contextlib.suppress(Exception):
                await msg.nak(delay=NEWER_FORMAT_NAK_S)
            return
        log.error(
            "search queued in a newer format answered unrun: upgrade this worker",
            version=queued.version,
            why=refusal,
            request_id=queued.request_id,
        )
        reply = decide.fetched_refusal_reply(queued.request_id, refusal, "")
        await self._answer(queued.reply_to, reply, queued.request_id, tool)
        await msg.term()

    async def _admit_queued(
        self, msg: Msg, queued: QueuedSearch | NewerFormat | None, endpoint: QueuedEndpoint
    ) -> AdmittedSearch | None:
        """A job for another endpoint's request (the operator's search), or None when it
        was answered (or is malformed) and terminated."""
        fetched = await self._queued.admit_fetched(msg, queued, endpoint)
        if fetched is None:
            return None
        return AdmittedSearch(
            msg=msg,
            route=endpoint.route,
            tool=None,
            admitted=fetched.admitted,
            rid="",
            reply_to=fetched.reply_to,
            signal=signal_until(fetched.deadline_ms),
            detach=_nothing_attached,
            heartbeat=asyncio.create_task(self._heartbeat(msg), name="in-progress"),
        )

    async def _heartbeat(self, msg: Msg) -> None:
        interval = max(0.05, self._queue.ack_wait_s / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                await msg.in_progress()
            except Exception:
                log.warning("in_progress heartbeat failed", exc_info=True)

    async def _answer(
        self, subject: str, reply: replies.EncodedReply, rid: str, tool: ToolDefinition
    ) -> None:
        await self._executor.answer_tool(tool, subject, reply, rid)


@dataclasses.dataclass(frozen=True, slots=True)
class AdmittedSearch:
    """A fetched search, admitted: it holds its unacked message until answered."""

    msg: Msg
    route: Route[Any, Any]  # what the executor runs: a tool's, or another endpoint's
    tool: ToolDefinition | None  # a tool's definition (its prepare step); None: another's
    admitted: Any
    rid: str
    reply_to: str
    signal: ExecutionSignal
    detach: Callable[[], None]
    heartbeat: asyncio.Task[None]


def _nothing_attached() -> None:
    """No cancel reaches another endpoint's request (it has no caller)."""
