"""Ingestion from JetStream: the SESSIONS stream into the index, exactly once.

The position lives in the index (``meta.stream_seq``, written in the same transaction as the
events), never on the server: each run creates an ephemeral pull consumer starting at the
stored sequence + 1, with no acks. When the consumer is lost (a server restart, a long
disconnect) a new one is created from the last sequence handed to the actor, and anything
redelivered below it is dropped here; the writer skips any overlap that remains.

Run alone (the crash test does): ``python -m worker.runtime.ingest_consumer --db PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from typing import Any, Final

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig

from contracts.subjects import Subjects
from worker.store.ingest import IngestActor
from worker.store.protocol import IngestItem, Rejected
from worker.store.writer import SqliteIndexWriter

log = structlog.get_logger(__name__)

REASON_HEADER: Final = "Sessionquery-Reason"
STREAM_SEQ_HEADER: Final = "Sessionquery-Stream-Seq"
TRUNCATED_HEADER: Final = "Sessionquery-Truncated"
# Idle fetches before checking that the consumer still exists on the server.
_IDLE_FETCHES_BEFORE_CHECK: Final = 5
_RETRY_MAX_S: Final = 5.0


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
        writer: SqliteIndexWriter,
        *,
        subjects: Subjects,
        batch_size: int = 500,
        batch_ms: int = 50,
        mailbox_size: int = 5000,
        fetch_batch: int = 500,
        fetch_timeout_s: float = 1.0,
    ) -> None:
        self._nc = nc
        self._subjects = subjects
        self._fetch_batch = fetch_batch
        self._fetch_timeout_s = fetch_timeout_s
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
        """Consume until ``stop``; then apply what is in the mailbox and return."""
        js = self._nc.jetstream()
        await self._retrying(lambda: ensure_events_stream(js, self._subjects))
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
            self.actor.stop()
            await actor

    async def _retrying(self, step: Any) -> None:
        delay = 0.1
        while True:
            try:
                await step()
                return
            except Exception:
                log.warning("events stream not reachable; retrying", exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)

    async def _pump(self, js: JetStreamContext) -> None:
        delay = 0.1
        while True:
            try:
                psub = await js.pull_subscribe(
                    self._subjects.events_wildcard,
                    stream=self._subjects.events_stream,
                    config=ConsumerConfig(
                        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                        opt_start_seq=self._next_seq,
                        ack_policy=AckPolicy.NONE,
                        inactive_threshold=60.0,
                        mem_storage=True,
                    ),
                )
            except Exception:
                log.warning("ingest consumer not created; retrying", exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)
                continue
            self.consumers_created += 1
            delay = 0.1
            try:
                await self._drain(psub)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning(
                    "ingest consumer lost; recreating", from_seq=self._next_seq, exc_info=True
                )
                await asyncio.sleep(delay)
            finally:
                await _discard(js, psub)

    async def _drain(self, psub: JetStreamContext.PullSubscription) -> None:
        idle = 0
        while True:
            try:
                msgs = await psub.fetch(self._fetch_batch, timeout=self._fetch_timeout_s)
            except nats.errors.TimeoutError:
                idle += 1
                if idle >= _IDLE_FETCHES_BEFORE_CHECK:
                    idle = 0
                    await psub.consumer_info()  # raises when the server forgot it
                continue
            idle = 0
            for msg in msgs:
                seq = msg.metadata.sequence.stream
                if seq < self._next_seq:
                    continue  # delivered again by a recreated consumer
                await self.actor.put(IngestItem(stream_seq=seq, data=msg.data, subject=msg.subject))
                self._next_seq = seq + 1

    async def _dead_letter(self, rejected: Rejected) -> None:
        headers = {REASON_HEADER: rejected.reason, STREAM_SEQ_HEADER: str(rejected.stream_seq)}
        body = rejected.data
        room = self._nc.max_payload - 4096  # headers need their share of the message
        if len(body) > room:
            body = body[:room]
            headers[TRUNCATED_HEADER] = "true"
        await self._nc.publish(self._subjects.deadletter, body, headers=headers)


async def _discard(js: JetStreamContext, psub: JetStreamContext.PullSubscription) -> None:
    # Best effort: the server drops an idle ephemeral consumer by itself anyway.
    with contextlib.suppress(Exception):
        info = await psub.consumer_info()
        await js.delete_consumer(info.stream_name, info.name)
    with contextlib.suppress(Exception):
        await psub.unsubscribe()


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
    add_nats_arguments(parser)
    return parser


def add_subject_arguments(parser: argparse.ArgumentParser) -> None:
    """Stream and subject names, for tests and deployments with their own names."""
    defaults = Subjects()
    group = parser.add_argument_group("stream and subjects")
    group.add_argument("--stream", default=defaults.events_stream, help="events stream name")
    group.add_argument(
        "--events-prefix", default=defaults.events_prefix, help="events subject prefix"
    )
    group.add_argument("--deadletter", default=defaults.deadletter, help="dead-letter subject")


def subjects_from_args(args: argparse.Namespace) -> Subjects:
    return Subjects(
        events_stream=args.stream, events_prefix=args.events_prefix, deadletter=args.deadletter
    )


async def _main(args: argparse.Namespace) -> int:
    from worker.runtime.connection import connect, options_from_args

    nc = await connect(options_from_args(args).with_url(args.nats_url or "nats://127.0.0.1:4222"))
    writer = await SqliteIndexWriter.open(args.db)
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
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from worker.runtime.logs import configure_logging

    args = build_parser().parse_args(argv)
    configure_logging()
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
