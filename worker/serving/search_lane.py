"""The search lane: a JetStream work queue shared by the fleet, one search at a time.

Over 400 lines: one fetch loop (fetch, admit, prepare beside the lane, run, ack) on one state.

The two search endpoints put each request on the work-queue stream (``search_intake``).
One durable pull consumer is shared by every worker; each worker fetches ONE message, runs
it alone, answers the original requester, then acks. ``in_progress()`` heartbeats keep a
long search from being redelivered mid-run; a worker that dies mid-search leaves its
message unacked, so after ``ack_wait`` another worker gets it. Expired and cancelled
requests are answered and terminated without running; on the last delivery of a message
that keeps killing its workers, it is answered TOOL_FAILED and terminated.

De-duplication is per caller: the ``Nats-Msg-Id`` is a digest of the trusted caller
identity and the request id, so one caller's id can never refuse another's request.

No head-of-line blocking: a tool's ``prepare`` step (the read-your-writes catch-up wait)
runs outside the lane. When it does not finish at once, the message waits beside the lane
(kept in progress by heartbeats) and the lane serves the next search; the waiting request
takes the lane when its caller's events are indexed, or is answered TIMEOUT at its bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import nats.errors
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts.partitions import PartitionSet
from contracts.subjects import Subjects
from worker.serving import lane_decisions as decide
from worker.serving import queue_encoding, replies
from worker.serving.admitted_handoff import AdmittedHandoff
from worker.serving.cancellation import CancellationRegistry
from worker.serving.deadlines import now_ms, signal_until
from worker.serving.execution import Executor, Route, admitted_from
from worker.serving.lane_decisions import MSG_ID_HEADER as MSG_ID_HEADER
from worker.serving.queue_encoding import NewerFormat, QueuedSearch
from worker.serving.queued_endpoint import QueuedEndpoint, QueuedEndpoints
from worker.serving.replies import BadEnvelope
from worker.serving.search_intake import SearchIntake
from worker.serving.search_queue import QueueSettings, SearchQueue
from worker.signals import ExecutionSignal
from worker.tasks import cancel_and_wait
from worker.tools import ToolDefinition, ToolSet
from worker.transport.pending import PendingLimits

log = structlog.get_logger("worker.serving.search_lane")

# How long one pull request waits; also bounds how long stop() waits for an idle loop.
FETCH_POLL_S: Final = 0.5
ACTOR_NAME: Final = "search-fetch"
# How long the lane waits for a search's prepare step before setting it aside: an indexed
# caller's check is one quick read; a lagging caller's wait continues beside the lane.
PREPARE_GRACE_S: Final = 0.05
# While searches wait beside the lane, pulls are short so a ready one is taken soon.
READY_POLL_S: Final = 0.05
# At most this many fetched searches wait beside the lane (each holds one unacked message).
MAX_WAITING: Final = 32
# A search queued in a newer format goes back for this long, for a worker that reads it.
NEWER_FORMAT_NAK_S: Final = 1.0


class SearchLane:
    def __init__(
        self,
        nc: NATS,
        *,
        subjects: Subjects,
        toolsets: Mapping[int | None, ToolSet],
        executor: Executor,
        registry: CancellationRegistry,
        default_timeout_ms: int | None,
        max_ack_pending: int,
        max_deliver: int,
        ack_wait_ms: int,
        queue_max_msgs: int = -1,
        replicas: int = 1,
        pending: PendingLimits | None = None,
        partitions: PartitionSet | None = None,
    ) -> None:
        self._nc = nc
        self._subjects = subjects
        # By the partition a search was addressed to (None: the unpartitioned subjects).
        self._toolsets = toolsets
        self._executor = executor
        self._registry = registry
        settings = QueueSettings(
            max_ack_pending=max_ack_pending,
            max_deliver=max_deliver,
            ack_wait_s=ack_wait_ms / 1000.0,
            queue_max_msgs=queue_max_msgs,
            replicas=replicas,
        )
        self._queue = SearchQueue(nc, subjects, settings, pending, partitions)
        # The lane's endpoints besides the tools (the operator's search).
        self.queued = QueuedEndpoints(nc, subjects, self._queue, executor, partitions)
        self._stopping = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.running: str | None = None  # request id of the search running now
        self.completed = 0
        self._waiting: set[asyncio.Task[None]] = set()  # prepare steps beside the lane
        self._ready: deque[_AdmittedSearch] = deque()  # prepared, waiting
        self._wakeup = asyncio.Event()
        self._handoff = AdmittedHandoff()
        self._intake = SearchIntake(
            nc,
            subjects,
            self._queue,
            executor,
            registry,
            self._handoff,
            default_timeout_ms=default_timeout_ms,
        )
        # Awaited with each fetched search before it is handled (tracing, holding a fetch).
        self.on_fetched: Callable[[Msg], Awaitable[None]] | None = None

    @property
    def waiting(self) -> int:
        """Searches fetched but waiting beside the lane (catch-up) or for it (ready)."""
        return len(self._waiting) + len(self._ready)

    async def ensure(self) -> None:
        """Create the work-queue stream and the durable consumer when missing."""
        await self._queue.ensure()

    async def enqueue(self, tool: ToolDefinition, msg: Msg) -> None:
        """The endpoint handler (``search_intake``): queue the request, or answer at once."""
        await self._intake.enqueue(tool, msg)

    async def run(self) -> None:
        """Fetch and run one search at a time until ``stop``. Supervised: errors restart it."""
        if self._stopping.is_set() and not self.waiting:
            return
        await self._queue.ensure()
        sub = await self._queue.subscribe()
        reconnects = self._reconnects()
        try:
            while not self._stopping.is_set() or self.waiting:
                if self._ready:
                    await self._run_job(self._ready.popleft())
                    continue
                if self._stopping.is_set() or len(self._waiting) >= MAX_WAITING:
                    # Only searches set aside remain to be served: wait for one to be ready.
                    self._wakeup.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wakeup.wait(), FETCH_POLL_S)
                    continue
                if self._reconnects() != reconnects:
                    # After a reconnect the old pull subscription may be gone on the server.
                    log.info("re-creating the search pull subscription after a reconnect")
                    await _quiet_unsubscribe(sub)
                    await self._queue.ensure()
                    sub = await self._queue.subscribe()
                    reconnects = self._reconnects()
                poll = READY_POLL_S if self._waiting else FETCH_POLL_S
                try:
                    msgs = await sub.fetch(1, timeout=poll)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                for msg in msgs:
                    if self._stopping.is_set():
                        # Fetched as we stopped: hand it straight to another worker.
                        with contextlib.suppress(Exception):
                            await msg.nak()
                        continue
                    await self._process(msg)
        finally:
            await _quiet_unsubscribe(sub)

    async def stop(self) -> None:
        """Take no more searches; returns after the running one and those set aside are
        answered and acked."""
        self._stopping.set()
        self._wakeup.set()
        await self._idle.wait()

    def _reconnects(self) -> int:
        return int(self._nc.stats.get("reconnects", 0))

    def _settle_idle(self) -> None:
        if self.running is None and not self._waiting and not self._ready:
            self._idle.set()
        else:
            self._idle.clear()

    async def _process(self, msg: Msg) -> None:
        self._idle.clear()
        try:
            if self.on_fetched is not None:
                await self.on_fetched(msg)
            await self._process_one(msg)
        finally:
            self.running = None
            self._settle_idle()

    async def _process_one(self, msg: Msg) -> None:
        """Answer at once, run in the lane now, or set aside while its prepare step waits."""
        job = await self._admit_fetched(msg)
        if job is None:
            return
        if job.tool is None or not job.tool.prepares:
            await self._run_job(job)
            return
        task = asyncio.create_task(self._prepare(job, job.tool), name=f"prepare:{job.rid}")
        done, _ = await asyncio.wait({task}, timeout=PREPARE_GRACE_S)
        if task in done:
            await task
        else:
            self._waiting.add(task)
            task.add_done_callback(self._prepared)
        if self._ready and self._ready[-1] is job:
            # Prepared within the grace: it runs now, in fetch order.
            self._ready.pop()
            await self._run_job(job)

    async def _admit_fetched(self, msg: Msg) -> _AdmittedSearch | None:
        """A job for the lane, or None when the message was answered (or is malformed)
        and terminated."""
        queued = queue_encoding.decode(msg.data, msg.headers)
        partition, name = Subjects.search_queue_parts(msg.subject)
        other = self.queued.get(name)
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
        return _AdmittedSearch(
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
    ) -> _AdmittedSearch | None:
        """A job for another endpoint's request (the operator's search), or None when it
        was answered (or is malformed) and terminated."""
        fetched = await self.queued.admit_fetched(msg, queued, endpoint)
        if fetched is None:
            return None
        return _AdmittedSearch(
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

    async def _prepare(self, job: _AdmittedSearch, tool: ToolDefinition) -> None:
        """The prepare step, outside the lane: ready for the lane, or answered now."""
        try:
            reply = await self._executor.prepare(tool, job.admitted, job.signal)
        except BaseException:
            await self._finish(job, replies.tool_failed(job.rid))
            raise
        if reply is None:
            self._ready.append(job)
            self._wakeup.set()
        else:
            await self._finish(job, reply)

    def _prepared(self, task: asyncio.Task[None]) -> None:
        self._waiting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("search prepare step failed", exc_info=task.exception())
        self._wakeup.set()
        self._settle_idle()

    async def _run_job(self, job: _AdmittedSearch) -> None:
        self._idle.clear()
        self.running = job.rid
        try:
            reply = await self._executor.run(job.route, job.rid, job.admitted, job.signal)
            await self._finish(job, reply)
            self.completed += 1
        finally:
            self.running = None
            self._settle_idle()

    async def _finish(self, job: _AdmittedSearch, reply: replies.EncodedReply) -> None:
        await cancel_and_wait(job.heartbeat)
        job.detach()
        job.signal.close()
        route = job.route
        await self._executor.answer(job.reply_to, reply, job.rid, route.stats_key, route.presenter)
        # Ack only after the reply is on the wire: a crash before here means redelivery.
        await job.msg.ack()

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
class _AdmittedSearch:
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


async def _quiet_unsubscribe(sub: JetStreamContext.PullSubscription) -> None:
    with contextlib.suppress(Exception):
        await sub.unsubscribe()
