"""The search lane: a JetStream work queue shared by the fleet, one search at a time.

The two search endpoints put each request on the work-queue stream (``search_intake``).
One durable pull consumer is shared by every worker; each worker fetches ONE message, runs
it alone, answers the original requester, then acks. ``in_progress()`` heartbeats keep a
long search from being redelivered mid-run; a worker that dies mid-search leaves its
message unacked, so after ``ack_wait`` another worker gets it. Expired and cancelled
requests are answered and terminated without running; on the last delivery of a message
that keeps killing its workers, it is answered TOOL_FAILED and terminated (what a fetched
message becomes: ``fetched_search``; when it runs: here).

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
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import nats.errors
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts.partitions import PartitionSet
from contracts.subjects import Subjects
from worker.serving import replies
from worker.serving.admitted_handoff import AdmittedHandoff
from worker.serving.cancellation import CancellationRegistry
from worker.serving.execution import Executor
from worker.serving.fetched_search import AdmittedSearch, FetchedAdmission
from worker.serving.lane_decisions import MSG_ID_HEADER as MSG_ID_HEADER
from worker.serving.queued_endpoint import QueuedEndpoints
from worker.serving.search_intake import SearchIntake
from worker.serving.search_queue import QueueSettings, SearchQueue
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
        self._executor = executor
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
        self._ready: deque[AdmittedSearch] = deque()  # prepared, waiting
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
        self._admission = FetchedAdmission(
            toolsets=toolsets,
            queued=self.queued,
            queue=self._queue,
            executor=executor,
            registry=registry,
            handoff=self._handoff,
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
        job = await self._admission.admit(msg)
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

    async def _prepare(self, job: AdmittedSearch, tool: ToolDefinition) -> None:
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

    async def _run_job(self, job: AdmittedSearch) -> None:
        self._idle.clear()
        self.running = job.rid
        try:
            reply = await self._executor.run(job.route, job.rid, job.admitted, job.signal)
            await self._finish(job, reply)
            self.completed += 1
        finally:
            self.running = None
            self._settle_idle()

    async def _finish(self, job: AdmittedSearch, reply: replies.EncodedReply) -> None:
        await cancel_and_wait(job.heartbeat)
        job.detach()
        job.signal.close()
        route = job.route
        await self._executor.answer(job.reply_to, reply, job.rid, route.stats_key, route.presenter)
        # Ack only after the reply is on the wire: a crash before here means redelivery.
        await job.msg.ack()


async def _quiet_unsubscribe(sub: JetStreamContext.PullSubscription) -> None:
    with contextlib.suppress(Exception):
        await sub.unsubscribe()
