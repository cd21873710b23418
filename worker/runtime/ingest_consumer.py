"""Ingestion from JetStream: the SESSIONS stream into the index, exactly once.

The position lives in the index (``meta.stream_seq``, written in the same transaction as the
events), never on the server: each run creates an ephemeral push consumer (memory, no acks,
flow control, heartbeats) starting at the stored sequence + 1. When that consumer may have
lost a message (a sequence gap, a heartbeat that disagrees, silence after a server restart)
it is replaced by a new one from the next stream sequence to hand on; anything delivered
again below it is dropped here, and the writer skips any overlap that remains.
At start and after every reset the index is compared with the stream (its identity and
sequences, ``worker.runtime.continuity``): a divergence or a lost index file ends ingestion
through ``on_fatal`` instead of being skipped.
Backpressure: the message callback waits for room in the actor's mailbox, which holds back
the flow-control answer, so the server pauses.

Run alone (the crash test does): ``python -m worker.runtime.ingest_consumer --db PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    Header,
    StorageType,
    StreamConfig,
)

from contracts.subjects import Subjects
from worker.retry import JETSTREAM, retry
from worker.runtime.continuity import StreamDiverged, StreamState, bind, judge, stream_state
from worker.store.ingest import IngestActor
from worker.store.protocol import IndexWriteStopped, IngestItem, Rejected, SessionIndexWriter
from worker.store.writer_process import WRITER_MODES, open_index_writer

log = structlog.get_logger(__name__)

REASON_HEADER: Final = "Sessionquery-Reason"
STREAM_SEQ_HEADER: Final = "Sessionquery-Stream-Seq"
TRUNCATED_HEADER: Final = "Sessionquery-Truncated"


async def ensure_events_stream(js: JetStreamContext, subjects: Subjects) -> None:
    """Create the events stream (file storage) when missing; an existing one is left as is."""
    try:
        await js.stream_info(subjects.events_stream)
        return
    except nats.js.errors.NotFoundError:
        pass
    config = StreamConfig(
        name=subjects.events_stream,
        subjects=[subjects.events_wildcard],
        storage=StorageType.FILE,
    )
    try:
        await js.add_stream(config)
        log.info("events stream created", stream=subjects.events_stream)
    except nats.js.errors.BadRequestError:
        # Another process created it between our look and our create: that one stands.
        await js.stream_info(subjects.events_stream)


class EventConsumer:
    """Feeds the ingest actor from the events stream until ``stop``."""

    def __init__(
        self,
        nc: NATS,
        writer: SessionIndexWriter,
        *,
        subjects: Subjects,
        batch_size: int = 500,
        batch_ms: int = 50,
        mailbox_size: int = 5000,
        idle_heartbeat_s: float = 2.0,
        on_fatal: Callable[[Exception], None] | None = None,
        stop_drain_s: float = 5.0,
    ) -> None:
        self._nc = nc
        self._stop_drain_s = stop_drain_s
        self._writer = writer
        self._on_fatal = on_fatal
        # The stream's state at the last continuity check (for status).
        self.stream: StreamState | None = None
        self._subjects = subjects
        self._idle_heartbeat_s = idle_heartbeat_s
        self.actor = IngestActor(
            writer,
            dead_letter=self._dead_letter,
            mailbox_size=mailbox_size,
            batch_size=batch_size,
            batch_ms=batch_ms,
        )
        self._stopping = asyncio.Event()
        self._next_seq = 0
        self.consumers_created = 0

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        """Consume until ``stop``; then apply what is in the mailbox and return.

        Safe to call again after a failure (a supervisor's restart): it resumes from the
        index's stored stream sequence.
        """
        if self._stopping.is_set():
            return
        try:
            await self._run()
        except (StreamDiverged, IndexWriteStopped) as exc:
            if self._on_fatal is None:
                raise
            log.error("ingestion stopped: " + str(exc))
            self._on_fatal(exc)

    async def check_continuity(self, js: JetStreamContext) -> None:
        """Compare the index with the stream (identity, sequences); binds an index that has
        no identity yet, raises ``StreamDiverged`` when they disagree."""
        stream = await stream_state(js, self._subjects.events_stream)
        self.stream = stream
        verdict = judge(await self._writer.info(), stream)
        if verdict.action == "bind":
            await bind(self._writer, stream)
        elif verdict.action == "diverged":
            raise StreamDiverged(verdict.reason)

    async def _run(self) -> None:
        self.actor.reopen()
        js = self._nc.jetstream()
        await self._retrying(lambda: ensure_events_stream(js, self._subjects))
        await self._retrying(lambda: self.check_continuity(js))
        self._next_seq = await self.actor.start_from_writer()
        log.info("ingest starting", stream=self._subjects.events_stream, from_seq=self._next_seq)
        actor = asyncio.create_task(self.actor.run(), name="ingest-actor")
        pump = asyncio.create_task(self._pump(js), name="ingest-pump")
        stopper = asyncio.create_task(self._stopping.wait())
        try:
            done, _ = await asyncio.wait(
                {actor, pump, stopper}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done & {actor, pump}:
                task.result()  # an actor or pump failure is this run's failure
        finally:
            stopper.cancel()
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            await self._finish(actor)

    async def _finish(self, actor: asyncio.Task[None]) -> None:
        """Apply what the mailbox holds; a batch that keeps failing is given up after
        ``stop_drain_s`` (the stream replays it next time), so a stop stays bounded."""
        self.actor.stop()
        try:
            await asyncio.wait_for(asyncio.shield(actor), self._stop_drain_s)
        except TimeoutError:
            log.warning("ingestion did not drain in time; leaving the rest to the next start")
            self.actor.abandon()
            with contextlib.suppress(Exception):
                await actor

    async def _retrying(self, step: Any) -> None:
        def unreachable(exc: Exception, failures: int, wait: float) -> None:
            log.warning("events stream not reachable; retrying", exc_info=exc)

        await retry(
            JETSTREAM,
            step,
            on=lambda exc: not isinstance(exc, (StreamDiverged, IndexWriteStopped)),
            log=unreachable,
        )

    async def _open_feed(self, js: JetStreamContext) -> _Feed:
        feed = _Feed(self, js)
        try:
            await feed.open()
        except Exception:
            await feed.close()
            raise
        return feed

    async def _pump(self, js: JetStreamContext) -> None:
        def not_created(exc: Exception, failures: int, wait: float) -> None:
            log.warning("ingest consumer not created; retrying", exc_info=exc)

        while True:
            feed = await retry(
                JETSTREAM, lambda: self._open_feed(js), on=lambda exc: True, log=not_created
            )
            self.consumers_created += 1
            try:
                reason = await feed.watch()
                log.warning("ingest consumer reset", reason=reason, from_seq=self._next_seq)
            finally:
                await feed.close()
            # A reset may be the stream replaced or cut under us: check before going on.
            await self._retrying(lambda: self.check_continuity(js))

    async def _dead_letter(self, rejected: Rejected) -> None:
        # Header values stay ASCII (a reason may quote a field name from the message).
        reason = rejected.reason.encode("ascii", "backslashreplace").decode("ascii")
        headers = {REASON_HEADER: reason, STREAM_SEQ_HEADER: str(rejected.stream_seq)}
        body = rejected.data
        room = self._nc.max_payload - 4096  # headers need their share of the message
        if len(body) > room:
            body = body[:room]
            headers[TRUNCATED_HEADER] = "true"
        await self._nc.publish(self._subjects.deadletter, body, headers=headers)


class _Feed:
    """One push consumer (flow control, heartbeats, no acks) and its subscription.

    Written out rather than nats-py's ordered consumer because that one, with a callback,
    answers a held-back flow-control request only on a 250 ms poll, which stalls ingestion
    whenever the mailbox is full. Here the request is answered as soon as every message
    before it has been handed to the actor. Any sign of a lost message (a consumer sequence
    gap, a heartbeat disagreeing on the last delivered sequence, silence) ends the feed; the
    pump then opens a new one from the next stream sequence.
    """

    def __init__(self, owner: EventConsumer, js: JetStreamContext) -> None:
        self._owner = owner
        self._js = js
        self._nc = owner._nc
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
        owner = self._owner
        # Subscribe first, so nothing the new consumer sends is missed.
        self._sub = await self._nc.subscribe(self._inbox, cb=self._on_message)
        info = await self._js.add_consumer(
            owner._subjects.events_stream,
            config=ConsumerConfig(
                deliver_subject=self._inbox,
                filter_subject=owner._subjects.events_wildcard,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=owner._next_seq,
                ack_policy=AckPolicy.NONE,
                max_deliver=1,
                flow_control=True,
                idle_heartbeat=owner._idle_heartbeat_s,
                inactive_threshold=max(30.0, owner._idle_heartbeat_s * 10),
                mem_storage=True,
                num_replicas=1,
            ),
        )
        self._consumer = info.name

    async def watch(self) -> str:
        """Wait until the feed must be replaced; returns why."""
        loop = asyncio.get_running_loop()
        silence = self._owner._idle_heartbeat_s * 3
        seen, last_activity = self._received, loop.time()
        while not self._ended.done():
            await asyncio.wait({self._ended}, timeout=self._owner._idle_heartbeat_s)
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
                await self._js.delete_consumer(self._owner._subjects.events_stream, self._consumer)

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
        owner = self._owner
        if stream_seq < owner._next_seq:
            return  # already handed on by an earlier feed
        item = IngestItem(stream_seq, data, msg.subject)
        try:
            owner.actor.mailbox.put_nowait(item)
        except asyncio.QueueFull:
            self._busy = True
            try:
                # Waiting for room holds back the next flow-control answer: backpressure.
                await owner.actor.mailbox.put(item)
            finally:
                self._busy = False
        owner._next_seq = stream_seq + 1

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


# -- module entry point -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from worker.runtime.connection import add_nats_arguments

    parser = argparse.ArgumentParser(
        prog="python -m worker.runtime.ingest_consumer",
        description="Ingest the events stream into an index file until SIGTERM.",
    )
    parser.add_argument("--db", required=True, help="index file (created when missing)")
    add_subject_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--batch-ms", type=int, default=50)
    parser.add_argument(
        "--writer",
        choices=WRITER_MODES,
        default=os.environ.get("SESSIONQUERY_INGEST_WRITER", "process"),
        help="where the index writer runs (env SESSIONQUERY_INGEST_WRITER, default process)",
    )
    add_nats_arguments(parser)
    return parser


def add_subject_arguments(parser: argparse.ArgumentParser) -> None:
    """Stream and subject names, for tests and deployments with their own names."""
    from worker.runtime.config_flags import add_flags

    add_flags(
        parser.add_argument_group("stream and subjects"),
        ("events_stream", "events_prefix", "deadletter"),
    )


def subjects_from_args(args: argparse.Namespace) -> Subjects:
    from worker.runtime.config_flags import config_from_args

    return config_from_args(args).subjects


async def _main(args: argparse.Namespace) -> int:
    from worker.runtime.connection import connect, options_from_args
    from worker.store.index_file import IndexLock

    lock = IndexLock(args.db).acquire()  # one writer per index file, as the worker
    options = options_from_args(args)
    nc = await connect(options.with_url(options.url or "nats://127.0.0.1:4222"))
    writer = await open_index_writer(args.db, mode=args.writer)
    consumer = EventConsumer(
        nc,
        writer,
        subjects=subjects_from_args(args),
        batch_size=args.batch_size,
        batch_ms=args.batch_ms,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, consumer.stop)
    try:
        await consumer.run()
    finally:
        await writer.close()
        await nc.drain()
        lock.release()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from worker.logs import configure_logging

    args = build_parser().parse_args(argv)
    configure_logging()
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
