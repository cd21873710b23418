"""Ingestion from JetStream: the SESSIONS stream into the index, exactly once.

The position lives in the index (``meta.stream_seq``, written in the same transaction as the
events), never on the server: each run creates an ephemeral push consumer (memory, no acks,
flow control, heartbeats) starting at the stored sequence + 1. When that consumer may have
lost a message (a sequence gap, a heartbeat that disagrees, silence after a server restart)
it is replaced by a new one from the next stream sequence to hand on; anything delivered
again below it is dropped here, and the writer skips any overlap that remains.
At start and after every reset the index is compared with the stream (its identity and
sequences, ``worker.replica.continuity``): a divergence or a lost index file ends ingestion
through ``on_fatal`` instead of being skipped.
Backpressure: the message callback waits for room in the actor's mailbox, which holds back
the flow-control answer, so the server pauses.

Run alone (the crash test does): ``python -m worker.replica.ingest_consumer --db PATH``.
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

import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from contracts.redaction import REDACTION_ON, RedactionSpec
from contracts.streams import ensure_events_stream as ensure_events_stream
from contracts.subjects import Subjects
from worker.replica.continuity import StreamDiverged, StreamState, bind, judge, stream_state
from worker.replica.ingest_actor import IngestActor
from worker.replica.ingest_feed import BACKLOG_FULL, DEFAULT_MAX_BACKLOG_BYTES, EventFeed
from worker.retry import JETSTREAM, retry
from worker.store.index.writer_process import WRITER_MODES, open_index_writer
from worker.store.writer_protocol import IndexWriteStopped, Rejected, SessionIndexWriter
from worker.tasks import cancel_and_wait, cancelled_from_outside

log = structlog.get_logger(__name__)

REASON_HEADER: Final = "Sessionquery-Reason"
STREAM_SEQ_HEADER: Final = "Sessionquery-Stream-Seq"
TRUNCATED_HEADER: Final = "Sessionquery-Truncated"


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
        batch_bytes: int = 8 * 2**20,
        mailbox_size: int = 5000,
        backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES,
        idle_heartbeat_s: float = 2.0,
        on_fatal: Callable[[Exception], None] | None = None,
        stop_drain_s: float = 5.0,
        partitions: str = "all",
        redaction: RedactionSpec = REDACTION_ON,
    ) -> None:
        self._nc = nc
        self._redactor = redaction.redactor()
        self._partitions = partitions  # the held partitions (the worker's setting)
        self._stop_drain_s = stop_drain_s
        self._writer = writer
        self._on_fatal = on_fatal
        # The stream's state at the last continuity check (for status).
        self.stream: StreamState | None = None
        self._subjects = subjects
        self._idle_heartbeat_s = idle_heartbeat_s
        self._backlog_bytes = backlog_bytes
        self.actor = IngestActor(
            writer,
            dead_letter=self._dead_letter,
            mailbox_size=mailbox_size,
            batch_size=batch_size,
            batch_ms=batch_ms,
            batch_bytes=batch_bytes,
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
        stream = await stream_state(
            js, self._subjects.events_stream, self._partitions, self._subjects
        )
        self.stream = stream
        verdict = judge(await self._writer.info(), stream)
        if verdict.action == "bind":
            await bind(self._writer, stream)
        elif verdict.action == "diverged":
            raise StreamDiverged(verdict.reason)

    async def _run(self) -> None:
        self.actor.reopen()
        js = self._nc.jetstream()
        await self._retrying(lambda: self._ensure_stream(js))
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
            try:
                # Re-raises when this run is itself being cancelled: the actor still ends.
                await cancel_and_wait(pump)
            finally:
                await self._finish(actor)

    async def _ensure_stream(self, js: JetStreamContext) -> None:
        if await ensure_events_stream(js, self._subjects):
            log.info("events stream created", stream=self._subjects.events_stream)

    async def _finish(self, actor: asyncio.Task[None]) -> None:
        """Apply what the mailbox holds; a batch that keeps failing is given up after
        ``stop_drain_s`` (the stream replays it next time), so a stop stays bounded. A run
        being cancelled (a start that failed) ends the actor at once, never leaves it
        running: the stream replays what the mailbox held."""
        self.actor.stop()
        if cancelled_from_outside():
            self.actor.abandon()
            await cancel_and_wait(actor)
            return
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

    def _filters(self) -> list[str] | None:
        """The held partitions' stored subjects; None: every event (all held)."""
        held = self.stream.held_set if self.stream is not None else None
        if held is None or held.is_all:
            return None
        return [self._subjects.stored_events(k) for k in held]

    async def _open_feed(self, js: JetStreamContext) -> EventFeed:
        feed = EventFeed(
            self._nc,
            js,
            self._subjects,
            self.actor.mailbox,
            start_seq=self._next_seq,
            idle_heartbeat_s=self._idle_heartbeat_s,
            filters=self._filters(),
            max_backlog_bytes=self._backlog_bytes,
        )
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
            finally:
                await feed.close()
            # Read once closed: its backlog is handed on until then.
            self._next_seq = feed.next_seq
            if reason == BACKLOG_FULL:
                # Backpressure, not a loss: the next feed goes on from where this one ended.
                log.debug("ingest feed backlog full", from_seq=self._next_seq)
                continue
            log.warning("ingest consumer reset", reason=reason, from_seq=self._next_seq)
            # A reset may be the stream replaced or cut under us: check before going on.
            await self._retrying(lambda: self.check_continuity(js))

    async def _dead_letter(self, rejected: Rejected) -> None:
        # Header values stay ASCII (a reason may quote a field name from the message).
        reason = rejected.reason.encode("ascii", "backslashreplace").decode("ascii")
        headers = {REASON_HEADER: reason, STREAM_SEQ_HEADER: str(rejected.stream_seq)}
        body = rejected.data
        if self._redactor is not None:
            # A refused message is republished as received: its credentials are not.
            text = body.decode("utf-8", "replace")
            cleaned = self._redactor.redact(text)
            if cleaned != text:
                body = cleaned.encode()
        room = self._nc.max_payload - 4096  # headers need their share of the message
        if len(body) > room:
            body = body[:room]
            headers[TRUNCATED_HEADER] = "true"
        await self._nc.publish(self._subjects.deadletter, body, headers=headers)


# -- module entry point -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from worker.config_flags import add_subject_arguments
    from worker.transport.flags import add_nats_arguments

    parser = argparse.ArgumentParser(
        prog="python -m worker.replica.ingest_consumer",
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


async def _main(args: argparse.Namespace) -> int:
    from worker.config_flags import subjects_from_args
    from worker.store.files.index_file import IndexLock
    from worker.transport.connection import connect
    from worker.transport.flags import options_from_args

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
