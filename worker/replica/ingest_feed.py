"""One feed of the events stream: a push consumer and its subscription, replaced whole.

``EventConsumer`` (worker.replica.ingest_consumer) opens a feed from the next stream
sequence to hand on, waits in ``watch`` until the feed may have lost a message, closes it,
and opens the next one from ``next_seq``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, Header

from contracts.subjects import Subjects
from worker.replica.feed_backlog import FeedBacklog
from worker.store.writer_protocol import IngestItem
from worker.tasks import cancel_and_wait

# What a feed holds at most beyond the mailbox (``EventFeed``); ``--ingest-backlog-mib``.
DEFAULT_MAX_BACKLOG_BYTES: Final = 8 * 2**20
# Why a feed whose backlog reached its bound ended (the pump opens the next one).
BACKLOG_FULL: Final = "backlog full"


class EventFeed:
    """One push consumer (flow control, heartbeats, no acks) and its subscription.

    Written out rather than nats-py's ordered consumer because that one, with a callback,
    answers a held-back flow-control request only on a 250 ms poll, which stalls ingestion
    whenever the mailbox is full. Here the request is answered as soon as every message
    before it has been handed to the actor. Any sign of a lost message (a consumer sequence
    gap, a heartbeat disagreeing on the last delivered sequence, silence) ends the feed; the
    pump then opens a new one from the next stream sequence.

    The message callback never waits: what arrives while the mailbox is full goes to a
    ``FeedBacklog`` (bytes, not nats-py's queued ``Msg`` objects: ``feed_backlog`` says why),
    and a drain task hands it on in order, answering each flow-control request when it
    reaches it, so backpressure holds the server as before.

    The server's flow-control window did not bound that backlog (measured on an archive
    import: 36 MB waiting in serve); ``max_backlog_bytes`` does. Once the backlog holds that
    much, the feed unsubscribes and takes nothing more (what was in flight is dropped, never
    accepted), hands on what it holds, then ends with ``BACKLOG_FULL``; the pump opens the
    next feed from ``next_seq``, so nothing is lost or fetched twice but what was in flight.
    """

    def __init__(
        self,
        nc: NATS,
        js: JetStreamContext,
        subjects: Subjects,
        mailbox: asyncio.Queue[IngestItem],
        *,
        start_seq: int,
        idle_heartbeat_s: float,
        filters: list[str] | None = None,
        max_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES,
    ) -> None:
        if max_backlog_bytes < 1:
            raise ValueError("max_backlog_bytes must be at least 1")
        self._nc = nc
        self._js = js
        self._subjects = subjects
        self._mailbox = mailbox
        self._heartbeat_s = idle_heartbeat_s
        self._filters = filters  # the held partitions' subjects; None: every event
        # The next stream sequence to hand on: where a replacement feed starts.
        self.next_seq = start_seq
        self._accepted_seq = start_seq  # the next stream sequence to accept from the server
        self._backlog = FeedBacklog()
        self._max_backlog = max_backlog_bytes
        # Set once the backlog reached its bound: nothing more is taken from this feed.
        self._full = False
        self._unsubscribing: asyncio.Task[None] | None = None
        self._drain: asyncio.Task[None] | None = None  # handing the backlog on, in order
        self._inbox = self._nc.new_inbox()
        self._sub: Subscription | None = None
        self._consumer: str | None = None
        self._dseq = 0  # last consumer sequence handed on
        self._ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        # Messages seen so far: ``watch`` compares it between heartbeat periods to notice
        # silence (a counter, since reading the clock for every message costs more).
        self._received = 0

    async def open(self) -> None:
        # Subscribe first, so nothing the new consumer sends is missed.
        self._sub = await self._nc.subscribe(self._inbox, cb=self._on_message)
        info = await self._js.add_consumer(
            self._subjects.events_stream,
            config=ConsumerConfig(
                deliver_subject=self._inbox,
                filter_subject=None if self._filters else self._subjects.events_wildcard,
                filter_subjects=self._filters,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self.next_seq,
                ack_policy=AckPolicy.NONE,
                max_deliver=1,
                flow_control=True,
                idle_heartbeat=self._heartbeat_s,
                inactive_threshold=max(30.0, self._heartbeat_s * 10),
                mem_storage=True,
                num_replicas=1,
            ),
        )
        self._consumer = info.name

    @property
    def backlog_size(self) -> int:
        """Messages (and deferred replies) received but not yet handed to the mailbox."""
        return len(self._backlog)

    async def watch(self) -> str:
        """Wait until the feed must be replaced; returns why."""
        loop = asyncio.get_running_loop()
        silence = self._heartbeat_s * 3
        seen, last_activity = self._received, loop.time()
        while not self._ended.done():
            await asyncio.wait({self._ended}, timeout=self._heartbeat_s)
            now = loop.time()
            # While a backlog waits for mailbox room the server is held back: silence then
            # is expected.
            if self._drain is not None or self._received != seen:
                seen, last_activity = self._received, now
            elif now - last_activity > silence:
                self._end("no messages or heartbeats from the consumer")
        return self._ended.result()

    def _end(self, reason: str) -> None:
        if not self._ended.done():
            self._ended.set_result(reason)

    async def close(self) -> None:
        """End the feed; what its backlog still held was not handed on (``next_seq``)."""
        self._end("closed")
        if self._drain is not None:
            await cancel_and_wait(self._drain)
        if self._unsubscribing is not None:
            await self._unsubscribing
        else:
            await self._unsubscribe()
        if self._consumer is not None:
            # Best effort: the server drops an inactive consumer by itself anyway.
            with contextlib.suppress(Exception):
                await self._js.delete_consumer(self._subjects.events_stream, self._consumer)

    async def _on_message(self, msg: Msg) -> None:
        # Runs for every message: kept to the few steps each one needs.
        if self._ended.done() or self._full:
            return  # a full feed ends once its backlog is handed on: the next one resends
        self._received += 1
        data = msg.data
        if not data:
            headers = msg.headers
            if headers and headers.get(Header.STATUS) == "100":
                await self._on_control(msg, headers)
                return
        sequences = _sequences(msg.reply)
        if sequences is None:
            return  # not a stream message
        stream_seq, consumer_seq = sequences
        if consumer_seq != self._dseq + 1:
            self._end(f"consumer sequence gap: expected {self._dseq + 1}, got {consumer_seq}")
            return
        self._dseq = consumer_seq
        if stream_seq < self._accepted_seq:
            return  # already handed on by an earlier feed
        self._accepted_seq = stream_seq + 1
        if self._drain is None:
            try:
                self._mailbox.put_nowait(IngestItem(stream_seq, data, msg.subject))
                self.next_seq = stream_seq + 1
                return
            except asyncio.QueueFull:
                pass
        self._backlog.add_message(stream_seq, msg.subject, data)
        if self._backlog.size_bytes >= self._max_backlog:
            self._full = True
            # Unsubscribed at once: what the server would send up to its window (tens of MB)
            # would only be dropped and sent again to the next feed.
            self._unsubscribing = asyncio.create_task(self._unsubscribe())
        self._start_drain()

    async def _unsubscribe(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _reply(self, subject: str) -> None:
        """Answer a control request once every message before it has been handed on."""
        if self._drain is None:
            await self._nc.publish(subject)
        else:
            self._backlog.add_reply(subject)

    def _start_drain(self) -> None:
        if self._drain is None:
            self._drain = asyncio.create_task(self._hand_on_backlog(), name="ingest-backlog")

    async def _hand_on_backlog(self) -> None:
        """Hand the backlog to the mailbox in order, waiting for room (backpressure)."""
        try:
            while self._backlog:
                entry = self._backlog.take()
                if isinstance(entry, str):
                    await self._nc.publish(entry)
                    continue
                await self._mailbox.put(entry)
                self.next_seq = entry.stream_seq + 1
            if self._full:
                self._end(BACKLOG_FULL)
        except Exception:
            # The connection closed under a reply: the pump opens a new feed from next_seq.
            self._end("a flow-control answer could not be sent")
        finally:
            self._drain = None

    async def _on_control(self, msg: Msg, headers: dict[str, str]) -> None:
        if msg.reply:
            # A flow-control request: answered once every message before it is handed on.
            await self._reply(msg.reply)
            return
        if stalled := headers.get(Header.CONSUMER_STALLED):
            await self._reply(stalled)
        last = headers.get(Header.LAST_CONSUMER)
        if last is not None and int(last) != self._dseq:
            self._end(f"heartbeat reports consumer sequence {last}, last received {self._dseq}")


def _sequences(reply: str) -> tuple[int, int] | None:
    """(stream, consumer) sequences from a JetStream delivery's ack subject, or None.

    ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>``, or the newer
    form with domain and account hash after ``ACK`` (and a trailing token). Parsed here
    rather than through ``msg.metadata``, which also builds a datetime: this is per message.
    """
    if not reply.startswith("$JS.ACK."):
        return None
    tokens = reply.split(".")
    try:
        if len(tokens) == 9:
            return int(tokens[5]), int(tokens[6])
        if len(tokens) >= 11:
            return int(tokens[7]), int(tokens[8])
    except ValueError:
        return None
    return None
