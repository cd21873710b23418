"""The search endpoints' side of the lane: each request put on the work queue, or answered.

A request goes on the work-queue stream (``Nats-Msg-Id``: a digest of the caller and the
request id, so a resent request is not run twice) as one versioned document with the
requester's reply subject and the effective deadline (``queue_encoding``); a request that
cannot be queued (expired, too large, the stream unavailable, a duplicate id) is answered
here. What was admitted is handed to this process's lane (``admitted_handoff``), so a
search fetched by the worker that queued it is not parsed again.
"""

from __future__ import annotations

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.subjects import Subjects
from worker.serving import lane_decisions as decide
from worker.serving import queue_encoding, replies
from worker.serving.admitted_handoff import AdmittedHandoff
from worker.serving.cancellation import CancellationRegistry
from worker.serving.deadlines import effective_deadline_ms, now_ms
from worker.serving.execution import Executor, admit
from worker.serving.lane_decisions import MSG_ID_HEADER
from worker.serving.search_queue import SearchQueue, failure_of
from worker.tools import ToolDefinition

log = structlog.get_logger("worker.serving.search_lane")


class SearchIntake:
    """The two search endpoints' handler: ``enqueue`` is what their subscriptions run."""

    def __init__(
        self,
        nc: NATS,
        subjects: Subjects,
        queue: SearchQueue,
        executor: Executor,
        registry: CancellationRegistry,
        handoff: AdmittedHandoff,
        *,
        default_timeout_ms: int | None,
    ) -> None:
        self._nc = nc
        self._subjects = subjects
        self._queue = queue
        self._executor = executor
        self._registry = registry
        self._handoff = handoff
        self._default_timeout_ms = default_timeout_ms

    async def enqueue(self, tool: ToolDefinition, msg: Msg) -> None:
        """The endpoint handler: put the request on the work queue, or answer at once."""
        admitted = await admit(self._executor, self._registry, tool, msg)
        if admitted is None or not msg.reply:
            return
        rid = admitted.request_id
        bound = log.bind(request_id=rid, tool=tool.name)
        deadline_ms = effective_deadline_ms(
            admitted.execution, default_timeout_ms=self._default_timeout_ms
        )
        headers = decide.queue_headers(admitted)
        data = queue_encoding.encode(msg.data, msg.reply, deadline_ms)
        size = self._queue.counted_size(data, headers)
        refusal = decide.enqueue_refusal(
            rid, deadline_ms, size, self._nc.max_payload, now_ms=now_ms()
        )
        if refusal is not None:
            bound.info("search answered before queueing", size=len(msg.data))
            await self._answer(msg.reply, refusal, rid, tool)
            return
        subject = self._subjects.search_queue_subject(tool.name, tool.partition)
        msg_id = headers[MSG_ID_HEADER]
        # Before publishing: this process's lane may fetch the message before the ack.
        self._handoff.put(msg_id, data, admitted)
        try:
            ack = await self._queue.publish(subject, data, headers, deadline_ms)
        except Exception as exc:
            self._handoff.forget(msg_id, admitted)
            failure = failure_of(exc)
            bound.warning("enqueue failed", failure=failure, exc_info=failure == "failed")
            expired = decide.expired_at(deadline_ms, now_ms())
            reply = decide.enqueue_failure_reply(rid, failure, expired=expired)
            await self._answer(msg.reply, reply, rid, tool)
            return
        if ack.duplicate:
            self._handoff.forget(msg_id, admitted)
            bound.info("duplicate request id refused")
            await self._answer(msg.reply, decide.duplicate_reply(rid), rid, tool)
            return
        bound.debug("search enqueued", stream_seq=ack.seq)

    async def _answer(
        self, subject: str, reply: replies.EncodedReply, rid: str, tool: ToolDefinition
    ) -> None:
        await self._executor.answer_tool(tool, subject, reply, rid)
