"""The search lane: a JetStream work queue shared by the fleet, one search at a time.

The two search endpoints put each request on the work-queue stream (``Nats-Msg-Id`` = the
request id, so a resent request is not run twice) with the requester's reply subject and
the effective deadline in headers. One durable pull consumer is shared by every worker;
each worker fetches ONE message, runs it alone, answers the original requester, then acks.
``in_progress()`` heartbeats keep a long search from being redelivered mid-run; a worker
that dies mid-search leaves its message unacked, so after ``ack_wait`` another worker gets
it. Expired and cancelled requests are answered and terminated without running; on the
last delivery of a message that keeps killing its workers, it is answered TOOL_FAILED and
terminated.

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
import hashlib
from collections import deque
from collections.abc import Callable
from typing import Final

import nats.errors
import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.errors import (
    APIError,
    BadRequestError,
    NoStreamResponseError,
    NotFoundError,
    ServiceUnavailableError,
)

from contracts.envelope import ToolRequest, owner_key
from contracts.errors import ErrorCode
from contracts.subjects import Subjects
from worker.retry import ENQUEUE, retry
from worker.runtime import replies
from worker.runtime.cancellation import CancellationRegistry
from worker.runtime.deadlines import effective_deadline_ms, expired, loop_time_of, signal_until
from worker.runtime.execution import Executor, admit, send
from worker.runtime.replies import BadEnvelope, parse_request
from worker.runtime.slow_consumers import PendingLimits, pending_kwargs
from worker.signals import ExecutionSignal
from worker.tools import ToolDefinition, ToolSet

log = structlog.get_logger("worker.runtime.search_lane")

MSG_ID_HEADER: Final = "Nats-Msg-Id"
REQUEST_ID_HEADER: Final = "Sessionquery-Request-Id"
REPLY_HEADER: Final = "Sessionquery-Reply"
DEADLINE_HEADER: Final = "Sessionquery-Deadline-Ms"
# How long one pull request waits; also bounds how long stop() waits for an idle loop.
FETCH_POLL_S: Final = 0.5
# A lost cluster node can leave the work-queue stream leaderless for a Raft election
# (nats-server waits 4-9 s before calling one; measured 7.4 s on the local cluster), so
# the enqueue waits out an election, within the request's own deadline.
ENQUEUE_TIMEOUT_S: Final = 15.0
# One attempt's wait for its PubAck: a publish sent to a leader that just died is retried.
PUBLISH_ATTEMPT_S: Final = 2.0
ACTOR_NAME: Final = "search-fetch"
# How long the lane waits for a search's prepare step before setting it aside: an indexed
# caller's check is one quick read; a lagging caller's wait continues beside the lane.
PREPARE_GRACE_S: Final = 0.05
# While searches wait beside the lane, pulls are short so a ready one is taken soon.
READY_POLL_S: Final = 0.05
# At most this many fetched searches wait beside the lane (each holds one unacked message).
MAX_WAITING: Final = 32
TOO_LARGE_MESSAGE: Final = (
    "The request is too large to queue for a search; send a shorter query and fewer filters."
)


class SearchLane:
    def __init__(
        self,
        nc: NATS,
        *,
        subjects: Subjects,
        toolset: ToolSet,
        executor: Executor,
        registry: CancellationRegistry,
        default_timeout_ms: int | None,
        max_ack_pending: int,
        max_deliver: int,
        ack_wait_ms: int,
        queue_max_msgs: int = -1,
        replicas: int = 1,
        pending: PendingLimits | None = None,
    ) -> None:
        self._nc = nc
        self._js: JetStreamContext = nc.jetstream()
        self._subjects = subjects
        self._toolset = toolset
        self._executor = executor
        self._registry = registry
        self._default_timeout_ms = default_timeout_ms
        self._max_ack_pending = max_ack_pending
        self._max_deliver = max_deliver
        self._ack_wait_s = ack_wait_ms / 1000.0
        self._queue_max_msgs = queue_max_msgs
        self._replicas = replicas
        self._pending = pending
        self._stopping = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.running: str | None = None  # request id of the search running now
        self.completed = 0
        self._waiting: set[asyncio.Task[None]] = set()  # prepare steps beside the lane
        self._ready: deque[_Job] = deque()  # prepared, waiting for the lane
        self._wakeup = asyncio.Event()

    @property
    def waiting(self) -> int:
        """Searches fetched but waiting beside the lane (catch-up) or for it (ready)."""
        return len(self._waiting) + len(self._ready)

    # -- setup -------------------------------------------------------------------------

    async def ensure(self) -> None:
        """Create the work-queue stream and the durable consumer when missing."""
        stream = self._subjects.search_stream
        try:
            await self._js.stream_info(stream)
        except NotFoundError:
            config = api.StreamConfig(
                name=stream,
                subjects=[self._subjects.search_queue + ".>"],
                retention=api.RetentionPolicy.WORK_QUEUE,
                storage=api.StorageType.FILE,
                max_msgs=self._queue_max_msgs,
                discard=api.DiscardPolicy.NEW,
                num_replicas=self._replicas,
            )
            with contextlib.suppress(BadRequestError):  # created concurrently
                await self._js.add_stream(config)
        consumer = self._subjects.search_consumer
        try:
            info = await self._js.consumer_info(stream, consumer)
        except NotFoundError:
            info = await self._js.add_consumer(
                stream,
                api.ConsumerConfig(
                    durable_name=consumer,
                    ack_policy=api.AckPolicy.EXPLICIT,
                    deliver_policy=api.DeliverPolicy.ALL,
                    max_ack_pending=self._max_ack_pending,
                    max_deliver=self._max_deliver,
                    ack_wait=self._ack_wait_s,
                ),
            )
        # The fleet shares one consumer: whoever created it set these.
        if info.config.max_deliver is not None:
            self._max_deliver = info.config.max_deliver
        if info.config.ack_wait is not None:
            self._ack_wait_s = info.config.ack_wait

    # -- the endpoint side -------------------------------------------------------------

    async def enqueue(self, tool: ToolDefinition, msg: Msg) -> None:
        """The endpoint handler: put the request on the work queue, or answer at once."""
        request = await admit(self._nc, self._registry, tool, msg, self._executor.stats)
        if request is None or not msg.reply:
            return
        rid = request.request_id
        bound = log.bind(request_id=rid, tool=tool.name)
        deadline_ms = effective_deadline_ms(
            request.execution, default_timeout_ms=self._default_timeout_ms
        )
        if expired(deadline_ms):
            reply = replies.error(rid, ErrorCode.TIMEOUT, replies.QUEUE_TIMEOUT_MESSAGE)
            await self._answer(msg.reply, reply, rid, tool)
            return
        headers = {
            MSG_ID_HEADER: dedupe_id(request),
            REQUEST_ID_HEADER: rid,
            REPLY_HEADER: msg.reply,
        }
        if deadline_ms is not None:
            headers[DEADLINE_HEADER] = str(deadline_ms)
        # js.publish adds this header itself; it counts against max_payload too.
        sent = {**headers, "Nats-Expected-Stream": self._subjects.search_stream}
        if _encoded_size(msg.data, sent) > self._nc.max_payload:
            # nats-py checks only the payload against max_payload; the server counts the
            # headers too and closes the whole connection on a violation.
            bound.info("request too large to enqueue", size=len(msg.data))
            reply = replies.error(rid, ErrorCode.INVALID_ARGUMENTS, TOO_LARGE_MESSAGE)
            await self._answer(msg.reply, reply, rid, tool)
            return
        try:
            ack = await self._publish(
                self._subjects.search_queue_subject(tool.name), msg, headers, deadline_ms
            )
        except APIError as exc:
            full = _queue_full(exc)
            bound.warning("enqueue refused", overloaded=full, err_code=exc.err_code)
            reply = replies.overloaded(rid) if full else replies.tool_failed(rid)
            await self._answer(msg.reply, reply, rid, tool)
            return
        except (TimeoutError, nats.errors.TimeoutError):
            bound.warning("enqueue timed out")
            if expired(deadline_ms):
                reply = replies.error(rid, ErrorCode.TIMEOUT, replies.QUEUE_TIMEOUT_MESSAGE)
            else:
                reply = replies.overloaded(rid)
            await self._answer(msg.reply, reply, rid, tool)
            return
        except Exception:
            bound.exception("enqueue failed")
            await self._answer(msg.reply, replies.tool_failed(rid), rid, tool)
            return
        if ack.duplicate:
            bound.info("duplicate request id refused")
            reply = replies.error(rid, ErrorCode.INVALID_ARGUMENTS, replies.DUPLICATE_MESSAGE)
            await self._answer(msg.reply, reply, rid, tool)
            return
        bound.debug("search enqueued", stream_seq=ack.seq)

    async def _publish(
        self, subject: str, msg: Msg, headers: dict[str, str], deadline_ms: int | None
    ) -> api.PubAck:
        """Put one request on the work queue within ``ENQUEUE_TIMEOUT_S`` and its deadline.

        While the stream has no leader (a cluster node lost, an election: no responders,
        503 unavailable, or an attempt that times out) the publish is retried with the same
        ``Nats-Msg-Id``, which the stream deduplicates; past the bound it raises
        ``TimeoutError``. After a timed-out attempt the request may have landed with its
        ack lost, so a duplicate ack then means "ours", not a reused request id."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + ENQUEUE_TIMEOUT_S
        if deadline_ms is not None:
            give_up = min(give_up, loop_time_of(deadline_ms))
        maybe_landed = False

        async def attempt() -> api.PubAck:
            nonlocal maybe_landed
            try:
                ack = await self._js.publish(
                    subject,
                    msg.data,
                    headers=headers,
                    stream=self._subjects.search_stream,
                    timeout=max(0.05, min(PUBLISH_ATTEMPT_S, give_up - loop.time())),
                )
            except (TimeoutError, nats.errors.TimeoutError):
                maybe_landed = True
                raise
            if maybe_landed and ack.duplicate:
                return dataclasses.replace(ack, duplicate=False)
            return ack

        try:
            return await retry(ENQUEUE.within(give_up - loop.time()), attempt, on=_no_leader_yet)
        except (NoStreamResponseError, ServiceUnavailableError) as exc:
            if _queue_full(exc):
                raise  # 503 too, but a full queue: answered OVERLOADED at once
            raise TimeoutError from None
        except nats.errors.TimeoutError:
            raise TimeoutError from None

    # -- the fetch loop (an actor) -----------------------------------------------------

    async def run(self) -> None:
        """Fetch and run one search at a time until ``stop``. Supervised: errors restart it."""
        if self._stopping.is_set() and not self.waiting:
            return
        await self.ensure()
        sub = await self._subscribe()
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
                    await self.ensure()
                    sub = await self._subscribe()
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

    async def _subscribe(self) -> JetStreamContext.PullSubscription:
        # One fetch at a time holds one message; the limits only make the bound explicit.
        return await self._js.pull_subscribe_bind(
            durable=self._subjects.search_consumer,
            stream=self._subjects.search_stream,
            **pending_kwargs(self._pending),
        )

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
            await self._process_one(msg)
        finally:
            self.running = None
            self._settle_idle()

    async def _process_one(self, msg: Msg) -> None:
        """Answer at once, run in the lane now, or set aside while its prepare step waits."""
        job = await self._admit_fetched(msg)
        if job is None:
            return
        if job.tool.prepare is None:
            await self._run_job(job)
            return
        task = asyncio.create_task(self._prepare(job), name=f"prepare:{job.rid}")
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

    async def _admit_fetched(self, msg: Msg) -> _Job | None:
        headers = msg.headers or {}
        rid = headers.get(REQUEST_ID_HEADER, "")
        reply_to = headers.get(REPLY_HEADER)
        tool = self._toolset.get(msg.subject.rsplit(".", 1)[-1])
        bound = log.bind(request_id=rid, tool=tool.name if tool else msg.subject)
        if not reply_to or tool is None or not rid:
            bound.error("malformed search queue message terminated")
            await msg.term()
            return None
        try:
            request = parse_request(msg.data)
        except BadEnvelope as bad:
            await self._answer(reply_to, bad.reply(), rid, tool)
            await msg.term()
            return None
        deadline_ms = _int_or_none(headers.get(DEADLINE_HEADER))
        delivered = msg.metadata.num_delivered or 1
        owner = owner_key(request.execution.agent)
        if (reason := self._registry.cancelled_reason(owner, rid)) is not None:
            bound.info("queued search cancelled")
            await self._answer(reply_to, replies.error(rid, ErrorCode.CANCELLED, reason), rid, tool)
            await msg.term()
            return None
        if expired(deadline_ms):
            bound.info("queued search expired")
            reply = replies.error(rid, ErrorCode.TIMEOUT, replies.QUEUE_TIMEOUT_MESSAGE)
            await self._answer(reply_to, reply, rid, tool)
            await msg.term()
            return None
        if delivered > 1 and delivered >= self._max_deliver:
            # Earlier attempts died without answering: do not let it kill another worker.
            bound.error("search gave up after repeated failed deliveries", delivered=delivered)
            await self._answer(reply_to, replies.tool_failed(rid), rid, tool)
            await msg.term()
            return None
        signal = signal_until(deadline_ms)
        return _Job(
            msg=msg,
            tool=tool,
            request=request,
            rid=rid,
            reply_to=reply_to,
            signal=signal,
            detach=self._registry.attach(owner, rid, signal),
            heartbeat=asyncio.create_task(self._heartbeat(msg), name=f"in-progress:{rid}"),
        )

    async def _prepare(self, job: _Job) -> None:
        """The prepare step, outside the lane: ready for the lane, or answered now."""
        try:
            reply = await self._executor.prepare(job.tool, job.request, job.signal)
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

    async def _run_job(self, job: _Job) -> None:
        self._idle.clear()
        self.running = job.rid
        try:
            reply = await self._executor.execute(job.tool, job.request, job.signal)
            await self._finish(job, reply)
            self.completed += 1
        finally:
            self.running = None
            self._settle_idle()

    async def _finish(self, job: _Job, reply: replies.EncodedReply) -> None:
        job.heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job.heartbeat
        job.detach()
        job.signal.close()
        await self._answer(job.reply_to, reply, job.rid, job.tool)
        # Ack only after the reply is on the wire: a crash before here means redelivery.
        await job.msg.ack()

    async def _heartbeat(self, msg: Msg) -> None:
        interval = max(0.05, self._ack_wait_s / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                await msg.in_progress()
            except Exception:
                log.warning("in_progress heartbeat failed", exc_info=True)

    async def _answer(
        self, subject: str, reply: replies.EncodedReply, rid: str, tool: ToolDefinition
    ) -> None:
        stats = self._executor.stats
        await send(self._nc, subject, reply, request_id=rid, tool=tool.name, stats=stats)


@dataclasses.dataclass(frozen=True, slots=True)
class _Job:
    """A fetched search, admitted: it holds its unacked message until answered."""

    msg: Msg
    tool: ToolDefinition
    request: ToolRequest
    rid: str
    reply_to: str
    signal: ExecutionSignal
    detach: Callable[[], None]
    heartbeat: asyncio.Task[None]


def dedupe_id(request: ToolRequest) -> str:
    """The work queue's ``Nats-Msg-Id``: the caller identity and request id together, so
    de-duplication is scoped to the caller (ids are only unique per caller)."""
    owner = owner_key(request.execution.agent)
    key = orjson.dumps(
        [owner[0] if owner else None, owner[1] if owner else None, request.request_id]
    )
    return hashlib.sha256(key).hexdigest()


def _no_leader_yet(exc: Exception) -> bool:
    """No responders, 503 or an attempt timed out: the stream has no leader right now."""
    if isinstance(exc, (NoStreamResponseError, ServiceUnavailableError)):
        return not _queue_full(exc)
    return isinstance(exc, (TimeoutError, nats.errors.TimeoutError))


def _queue_full(exc: Exception) -> bool:
    return isinstance(exc, APIError) and "maximum" in (exc.description or "").lower()


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


async def _quiet_unsubscribe(sub: JetStreamContext.PullSubscription) -> None:
    with contextlib.suppress(Exception):
        await sub.unsubscribe()


def _encoded_size(data: bytes, headers: dict[str, str]) -> int:
    """Bytes the server counts against max_payload: the header block plus the payload."""
    block = b"NATS/1.0\r\n" + b"".join(
        f"{key}: {value}\r\n".encode() for key, value in headers.items()
    )
    return len(block) + 2 + len(data)
