"""The search work queue on JetStream: the stream, its one durable consumer, the publish.

Every worker shares one work-queue stream (``SESSIONQUERY_SEARCH``); the workers that hold
the same partitions share one durable pull consumer (``<search_consumer>`` for those that
hold all, ``<search_consumer>-<label>`` filtering the set's partition subjects for a
shard; shards must not overlap, which the work-queue stream enforces). ``ensure`` creates
whichever is missing (the first worker of a shard sets the consumer's settings; the others
adopt them), ``publish`` puts a search on the queue within
a bound that outlasts a leader election, and ``subscribe`` binds the pull subscription.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Final

import nats.errors
import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext, api
from nats.js.errors import (
    APIError,
    BadRequestError,
    NoStreamResponseError,
    NotFoundError,
    ServiceUnavailableError,
)

from contracts.partitions import MAX_PARTITION_COUNT, PartitionSet
from contracts.subjects import Subjects
from worker.failures import RuntimeFailure
from worker.retry import ENQUEUE, JETSTREAM, retry
from worker.serving.deadlines import loop_time_of
from worker.serving.lane_decisions import EXPECTED_STREAM_HEADER, EnqueueFailure, encoded_size
from worker.transport.pending import PendingLimits, pending_kwargs

# A lost cluster node can leave the work-queue stream leaderless for a Raft election
# (nats-server waits 4-9 s before calling one; measured 7.4 s on the local cluster), so
# the enqueue waits out an election, within the request's own deadline.
ENQUEUE_TIMEOUT_S: Final = 15.0
# One attempt's wait for its PubAck: a publish sent to a leader that just died is retried.
PUBLISH_ATTEMPT_S: Final = 2.0
# A search consumer no worker has pulled from for this long is removed by the server, so
# the partition sets of workers that stopped do not hold the queue's layout for ever.
CONSUMER_IDLE_S: Final = 120.0
# How long the consumer's creation waits for a stream a fresh cluster has not placed yet.
STREAM_PLACED_S: Final = 15.0

log = structlog.get_logger("worker.serving.search_queue")


def _not_placed(exc: Exception, failures: int, wait: float) -> None:
    log.warning("search queue stream not placed yet; retrying", failures=failures, wait_s=wait)


@dataclasses.dataclass(frozen=True, slots=True)
class QueueSettings:
    """The consumer's and the stream's settings, as this worker would create them."""

    max_ack_pending: int
    max_deliver: int
    ack_wait_s: float
    queue_max_msgs: int = -1
    replicas: int = 1


class SearchQueue:
    def __init__(
        self,
        nc: NATS,
        subjects: Subjects,
        settings: QueueSettings,
        pending: PendingLimits | None = None,
        partitions: PartitionSet | None = None,
    ) -> None:
        self._js: JetStreamContext = nc.jetstream()
        self._subjects = subjects
        self._settings = settings
        self._pending = pending
        self._partitions = partitions
        if partitions is None or partitions.is_all:
            self.consumer = subjects.search_consumer
            self._filters: list[str] | None = None
        else:
            self.consumer = f"{subjects.search_consumer}-{partitions.label}"
            self._filters = [subjects.search_queue_filter(k) for k in partitions]
        # The shared consumer's, once ``ensure`` has looked (whoever created it set these).
        self.max_deliver = settings.max_deliver
        self.ack_wait_s = settings.ack_wait_s

    async def ensure(self) -> None:
        """Create the work-queue stream and the durable consumer when missing."""
        stream = self._subjects.search_stream
        settings = self._settings
        try:
            await self._js.stream_info(stream)
        except NotFoundError:
            config = api.StreamConfig(
                name=stream,
                subjects=[self._subjects.search_queue + ".>"],
                retention=api.RetentionPolicy.WORK_QUEUE,
                storage=api.StorageType.FILE,
                max_msgs=settings.queue_max_msgs,
                discard=api.DiscardPolicy.NEW,
                num_replicas=settings.replicas,
            )
            with contextlib.suppress(BadRequestError):  # created concurrently
                await self._js.add_stream(config)
        consumer = self.consumer
        try:
            info = await self._js.consumer_info(stream, consumer)
        except NotFoundError:
            wanted = api.ConsumerConfig(
                durable_name=consumer,
                ack_policy=api.AckPolicy.EXPLICIT,
                deliver_policy=api.DeliverPolicy.ALL,
                max_ack_pending=settings.max_ack_pending,
                max_deliver=settings.max_deliver,
                ack_wait=settings.ack_wait_s,
                filter_subjects=self._filters,
                inactive_threshold=CONSUMER_IDLE_S,
            )
            try:
                # The stream exists (it was just looked up or made), but a fresh cluster
                # may not have placed it yet: "stream not found" is waited out, bounded.
                info = await retry(
                    JETSTREAM.within(STREAM_PLACED_S),
                    lambda: self._js.add_consumer(stream, wanted),
                    on=lambda exc: isinstance(exc, NotFoundError),
                    log=_not_placed,
                )
            except BadRequestError as exc:
                holders = await self._overlapping()
                raise OverlappingShards(self._overlap_message(exc, holders)) from None
        if info.config.max_deliver is not None:
            self.max_deliver = info.config.max_deliver
        if info.config.ack_wait is not None:
            self.ack_wait_s = info.config.ack_wait

    async def _overlapping(self) -> list[tuple[str, str]]:
        """The queue's other consumers that hold some of this worker's partitions, each as
        (name, partition set); best effort: the refusal is told without them."""
        mine = self._partitions.members if self._partitions is not None else None
        count = self._partitions.count if self._partitions is not None else MAX_PARTITION_COUNT
        try:
            consumers = await self._js.consumers_info(self._subjects.search_stream)
        except Exception:
            return []
        found: list[tuple[str, str]] = []
        for info in consumers:
            name = info.name or info.config.durable_name or "?"
            if name == self.consumer:
                continue
            theirs = self._held_by(info.config)
            if mine is None or theirs is None or mine & theirs:
                held = "all" if theirs is None else str(PartitionSet(count, theirs))
                found.append((name, held))
        return sorted(found)

    def _held_by(self, config: api.ConsumerConfig) -> frozenset[int] | None:
        """The partitions a search consumer filters on (None: unfiltered, all of them)."""
        filters = list(config.filter_subjects or [])
        if config.filter_subject:
            filters.append(config.filter_subject)
        if not filters:
            return None
        # Each filter is ``search_queue_filter(k)``: ``<queue>.p<k>.>``.
        head = self._subjects.search_queue + ".p"
        held: set[int] = set()
        for subject in filters:
            token = subject.removeprefix(head).removesuffix(".>")
            if subject.startswith(head) and token.isdigit():
                held.add(int(token))
        return frozenset(held)

    def _overlap_message(self, exc: BadRequestError, holders: list[tuple[str, str]]) -> str:
        """One line: what overlaps, the rule, and what to do."""
        held = "all" if self._partitions is None else str(self._partitions)
        stream = self._subjects.search_stream
        named = (
            ", ".join(f"{name} (partitions {held})" for name, held in holders)
            if holders
            else "another partition set's consumer"
        )
        remove = " ".join(f"'nats consumer rm {stream} {name}'" for name, _ in holders)
        return (
            f"--partitions {held} overlaps search consumer {named}"
            f" ({stream}: {exc.description}): workers on different partition sets must hold"
            " disjoint sets (all partitions overlap every shard; a replica holds the same"
            " set). Start this worker with the same set or a disjoint one, or stop those"
            f" workers: their consumer is removed {CONSUMER_IDLE_S:g} s after the last one"
            " stops" + (f", or now with {remove}" if remove else "")
        )

    def counted_size(self, data: bytes, headers: dict[str, str]) -> int:
        """The bytes the server counts against max_payload for this publish: ``js.publish``
        adds the expected-stream header itself."""
        sent = {**headers, EXPECTED_STREAM_HEADER: self._subjects.search_stream}
        return encoded_size(data, sent)

    async def subscribe(self) -> JetStreamContext.PullSubscription:
        # One fetch at a time holds one message; the limits only make the bound explicit.
        return await self._js.pull_subscribe_bind(
            durable=self.consumer,
            stream=self._subjects.search_stream,
            **pending_kwargs(self._pending),
        )

    async def publish(
        self, subject: str, data: bytes, headers: dict[str, str], deadline_ms: int | None
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
                    data,
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
            return await retry(ENQUEUE.within(give_up - loop.time()), attempt, on=no_leader_yet)
        except (NoStreamResponseError, ServiceUnavailableError) as exc:
            if queue_full(exc):
                raise  # 503 too, but a full queue: answered OVERLOADED at once
            raise TimeoutError from None
        except nats.errors.TimeoutError:
            raise TimeoutError from None


class OverlappingShards(RuntimeFailure):
    """The search queue already has a consumer for some of this worker's partitions."""


def failure_of(exc: Exception) -> EnqueueFailure:
    """What a failed ``publish`` means for the requester."""
    if isinstance(exc, APIError):
        return "queue-full" if queue_full(exc) else "refused"
    if isinstance(exc, (TimeoutError, nats.errors.TimeoutError)):
        return "timed-out"
    return "failed"


def no_leader_yet(exc: Exception) -> bool:
    """No responders, 503 or an attempt timed out: the stream has no leader right now."""
    if isinstance(exc, (NoStreamResponseError, ServiceUnavailableError)):
        return not queue_full(exc)
    return isinstance(exc, (TimeoutError, nats.errors.TimeoutError))


def queue_full(exc: Exception) -> bool:
    return isinstance(exc, APIError) and "maximum" in (exc.description or "").lower()
