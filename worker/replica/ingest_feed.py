"""One feed of the events stream: a push consumer and its subscription, replaced whole.

``EventConsumer`` (worker.replica.ingest_consumer) opens a feed from the next stream
sequence to hand on, waits in ``watch`` until the feed may have lost a message, closes it,
and opens the next one from ``next_seq``.
"""

from __future__ import annotations

import asyncio
import contextlib

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, Header

from contracts.subjects import Subjects
from worker.store.protocol import IngestItem


class EventFeed:
    """One push consumer (flow control, heartbeats, no acks) and its subscription.

    Written out rather than nats-py's ordered consumer because that one, with a callback,
    answers a held-back flow-control request only on a 250 ms poll, which stalls ingestion
    whenever the mailbox is full. Here the request is answered as soon as every message
    before it has been handed to the actor. Any sign of a lost message (a consumer sequence
    gap, a heartbeat disagreeing on the last delivered sequence, silence) ends the feed; the
    pump then opens a new one from the next stream sequence.
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
    ) -> None:
        self._nc = nc
        self._js = js
        self._subjects = subjects
        self._mailbox = mailbox
        self._heartbeat_s = idle_heartbeat_s
        self._filters = filters  # the held partitions' subjects; None: every event
        # The next stream sequence to hand on: where a replacement feed starts.
        self.next_seq = start_seq
        self._inbox = self._nc.new_inbox()
        self._sub: Subscription | None = None
        self._consumer: str | None = None
        self._dseq = 0  # last consumer sequence handed on
        self._ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        # Messages seen so far: ``watch`` compares it between heartbeat periods to notice
        # silence (a counter, since reading the clock for every message costs more).
        self._received = 0
        self._busy = False  # waiting for mailbox room: silence is then expected

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

    async def watch(self) -> str:
        """Wait until the feed must be replaced; returns why."""
        loop = asyncio.get_running_loop()
        silence = self._heartbeat_s * 3
        seen, last_activity = self._received, loop.time()
        while not self._ended.done():
            await asyncio.wait({self._ended}, timeout=self._heartbeat_s)
            now = loop.time()
            if self._busy or self._received != seen:
                seen, last_activity = self._received, now
            elif now - last_activity > silence:
                self._end("no messages or heartbeats from the consumer")
        return self._ended.result()

    def _end(self, reason: str) -> None:
        if not self._ended.done():
            self._ended.set_result(reason)

    async def close(self) -> None:
        self._end("closed")
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if self._consumer is not None:
            # Best effort: the server drops an inactive consumer by itself anyway.
            with contextlib.suppress(Exception):
                await self._js.delete_consumer(self._subjects.events_stream, self._consumer)

    async def _on_message(self, msg: Msg) -> None:
        # Runs for every message: kept to the few steps each one needs.
        if self._ended.done():
            return
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
        if stream_seq < self.next_seq:
            return  # already handed on by an earlier feed
        item = IngestItem(stream_seq, data, msg.subject)
        try:
            self._mailbox.put_nowait(item)
        except asyncio.QueueFull:
            self._busy = True
            try:
                # Waiting for room holds back the next flow-control answer: backpressure.
                await self._mailbox.put(item)
            finally:
                self._busy = False
        self.next_seq = stream_seq + 1

    async def _on_control(self, msg: Msg, headers: dict[str, str]) -> None:
        if msg.reply:
            # A flow-control request: every message before it has been handed on.
            await self._nc.publish(msg.reply)
            return
        if stalled := headers.get(Header.CONSUMER_STALLED):
            await self._nc.publish(stalled)
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
