"""The ingest actor: a bounded mailbox of stream messages, applied in batches.

Pure asyncio (no nats import): the JetStream binding in ``worker.replica.ingest_consumer``
feeds the mailbox and supplies the dead-letter sink. A batch is up to ``batch_size`` items
and ``batch_bytes`` of messages, or what arrived within ``batch_ms`` after its first item.
Every writer takes a batch the same way (``SessionIndexWriter.stage``: checked now, written
later, chained behind the batch in flight when it can be). A failed apply (the database was
busy, the disk was full) is retried with backoff: the writer rolled the batch back, and no
item may be skipped.

Dead letters are sent after their batch committed. A crash between the commit and the send
loses those dead letters (the index itself is exact); a replay never sends them twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

import structlog

from worker.memory import release_memory, rss_anon_kib
from worker.retry import INGEST_APPLY
from worker.store.writer_protocol import (
    ApplyResult,
    BatchNotAttempted,
    IndexWriteStopped,
    IngestItem,
    Rejected,
    SessionIndexWriter,
    Staged,
)
from worker.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

DeadLetterSink = Callable[[Rejected], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class IngestStats:
    applied: int = 0
    duplicates: int = 0
    dead_lettered: int = 0
    dead_letter_failures: int = 0
    batches: int = 0
    apply_failures: int = 0
    last_stream_seq: int = 0


class IngestActor:
    """Drains its mailbox into the writer. ``put`` waits for room (backpressure)."""

    def __init__(
        self,
        writer: SessionIndexWriter,
        *,
        dead_letter: DeadLetterSink,
        mailbox_size: int = 5000,
        batch_size: int = 500,
        batch_ms: int = 50,
        batch_bytes: int = 8 * 2**20,
        progress_every_s: float = 10.0,
    ) -> None:
        if batch_size < 1 or mailbox_size < 1 or batch_bytes < 1:
            raise ValueError("batch_size, batch_bytes and mailbox_size must be at least 1")
        self._writer = writer
        self._dead_letter = dead_letter
        self.mailbox: asyncio.Queue[IngestItem] = asyncio.Queue(maxsize=mailbox_size)
        self._batch_size = batch_size
        self._batch_s = batch_ms / 1000
        # A batch of big events (pasted logs, images) closes sooner: what one batch holds
        # in both processes is bounded in bytes, not only in events.
        self._batch_bytes = batch_bytes
        self._progress_every_s = progress_every_s
        self._stats = IngestStats()
        # Items taken into batches, and that count at the last release_memory: counted when
        # taken, so the burst's last batch (applied after the wait for the next began)
        # still earns the release at its end.
        self._taken = 0
        self._released = 0
        self._stopping = asyncio.Event()
        self._progress = asyncio.Condition()
        # Set by ``abandon``: a failed batch is no longer retried (nothing is lost: it was
        # rolled back, and the stream replays it on the next start), so a stop is never
        # held up by a write that keeps failing (disk full, a wrong schema).
        self._abandoned = asyncio.Event()

    @property
    def stats(self) -> IngestStats:
        return self._stats

    async def put(self, item: IngestItem) -> None:
        await self.mailbox.put(item)

    def stop(self) -> None:
        """Ask ``run`` to return once the mailbox is drained."""
        self._stopping.set()

    def abandon(self) -> None:
        """Stop retrying a failing batch: ``run`` then ends with its error."""
        self._stopping.set()
        self._abandoned.set()

    def reopen(self) -> None:
        """Allow ``run`` again after a stop (a supervisor restarting ingestion)."""
        self._stopping.clear()
        self._abandoned.clear()

    async def start_from_writer(self) -> int:
        """Adopt the writer's stored stream sequence; returns the next one to consume."""
        last = await self._writer.last_stream_seq()
        if last > self._stats.last_stream_seq:
            self._stats = replace(self._stats, last_stream_seq=last)
        return last + 1

    async def wait_applied(self, stream_seq: int) -> None:
        """Return once every stream sequence through ``stream_seq`` has been applied."""
        async with self._progress:
            await self._progress.wait_for(lambda: self._stats.last_stream_seq >= stream_seq)

    async def run(self) -> None:
        last_log = time.monotonic()
        logged = self._stats
        # Up to two batches in flight: the newest is chained behind the previous commit when
        # the writer can take it early, else it waits for it. Commits stay strictly in order
        # (a retried batch is never overtaken); the next batch's collection and parsing
        # overlap them.
        inflight: list[asyncio.Task[None]] = []
        self._released = self._taken
        try:
            batch = await self._next_batch(inflight)
            while batch:
                if self.mailbox.empty() and self._taken - self._released >= RELEASE_AFTER:
                    # A pause in a long burst (nothing waits): what it left is given back.
                    await asyncio.sleep(0)
                    self._release()
                previous = inflight[-1] if inflight else None
                staged = self._writer.stage(batch)
                task = asyncio.create_task(self._apply(batch, staged, previous))
                task.add_done_callback(self._stop_if_write_stopped)
                inflight.append(task)
                # Held by the task alone: nothing keeps the last batch alive while idle.
                del batch, staged
                batch = await self._next_batch(inflight)
                if len(inflight) > 1:
                    await inflight.pop(0)
                now = time.monotonic()
                if now - last_log >= self._progress_every_s:
                    rate = (self._stats.applied - logged.applied) / (now - last_log)
                    log.info("ingest progress", rate_per_s=round(rate), **_fields(self._stats))
                    last_log, logged = now, self._stats
        finally:
            for task in inflight:
                await task
        log.info("ingest stopped", **_fields(self._stats))

    def _stop_if_write_stopped(self, task: asyncio.Task[None]) -> None:
        # Noticed at once, not at the next batch: ``run`` ends with that error.
        if not task.cancelled() and isinstance(task.exception(), IndexWriteStopped):
            self._stopping.set()

    def _release(self) -> None:
        before = rss_anon_kib()
        release_memory()
        log.info(
            "ingest memory released",
            taken_since=self._taken - self._released,
            rss_anon_kib_before=before,
            rss_anon_kib=rss_anon_kib(),
        )
        self._released = self._taken

    async def _next_batch(self, inflight: Sequence[asyncio.Task[None]]) -> list[IngestItem]:
        if self._taken - self._released >= RELEASE_WHEN_IDLE_AFTER:
            first = await self._get(IDLE_RELEASE_S)
            if first is None and not self._stopping.is_set():
                # The burst ended (nothing came for a while): once its writes are done (they
                # hold their batches; waited for at most IDLE_RELEASE_S, since a failing
                # one is retried meanwhile), give back what it left.
                if inflight:
                    await asyncio.wait(inflight, timeout=IDLE_RELEASE_S)
                self._release()
                first = await self._get(None)
        else:
            first = await self._get(None)
        if first is None:
            return []
        batch = [first]
        size = len(first.data)
        deadline = asyncio.get_running_loop().time() + self._batch_s
        while len(batch) < self._batch_size and size < self._batch_bytes:
            try:
                item = self.mailbox.get_nowait()
                batch.append(item)
                size += len(item.data)
                continue
            except asyncio.QueueEmpty:
                pass
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or self._stopping.is_set():
                break
            got = await self._get(remaining)
            if got is None:
                break
            batch.append(got)
            size += len(got.data)
        self._taken += len(batch)
        return batch

    async def _get(self, wait_s: float | None) -> IngestItem | None:
        """The next item; None on timeout, or when stopping and the mailbox is empty."""
        try:
            return self.mailbox.get_nowait()
        except asyncio.QueueEmpty:
            if self._stopping.is_set():
                return None
        getter = asyncio.ensure_future(self.mailbox.get())
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait(
                {getter, stopper}, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopper.cancel()
            if not getter.done():
                # A cancelled get leaves its item in the queue.
                await cancel_and_wait(getter)
        if getter.done() and not getter.cancelled():
            return getter.result()
        return None

    async def _apply(
        self, batch: list[IngestItem], staged: Staged, previous: asyncio.Task[None] | None
    ) -> None:
        """Write ``batch`` after ``previous`` (or chained behind it while it is in flight),
        then send its dead letters and count it, in batch order."""
        chained = staged.apply_chained is not None and previous is not None and not previous.done()
        if previous is not None and not chained:
            await previous
        result = await self._write(batch, staged, previous, chained=chained)
        if previous is not None:
            await previous  # dead letters and stats in batch order, too
        sent, failed = await self._send_dead_letters(result.rejected)
        s = self._stats
        self._stats = IngestStats(
            applied=s.applied + result.applied,
            duplicates=s.duplicates + result.duplicates,
            dead_lettered=s.dead_lettered + sent,
            dead_letter_failures=s.dead_letter_failures + failed,
            batches=s.batches + 1,
            apply_failures=s.apply_failures,
            last_stream_seq=max(s.last_stream_seq, result.last_stream_seq),
        )
        async with self._progress:
            self._progress.notify_all()

    async def _write(
        self,
        batch: list[IngestItem],
        staged: Staged,
        previous: asyncio.Task[None] | None,
        *,
        chained: bool,
    ) -> ApplyResult:
        """The batch applied, retried until it is: a retry waits for the batch before it,
        a batch not attempted is retried at once, an abandoned run tries once more. The
        waits are the retry policy's."""
        failures = 0
        while True:
            try:
                if chained and staged.apply_chained is not None:
                    return await staged.apply_chained()
                return await staged.apply()
            except BatchNotAttempted:
                pass  # the batch before failed, so this one was not tried: after that one
            except IndexWriteStopped:
                raise  # the file is gone or replaced: no retry can write it
            except Exception:
                if self._abandoned.is_set():
                    raise  # a failing batch is replayed by the next run
                self._stats = replace(self._stats, apply_failures=self._stats.apply_failures + 1)
                failures += 1
                delay = INGEST_APPLY.wait(failures)
                log.exception(
                    "ingest batch failed; retrying",
                    first_stream_seq=batch[0].stream_seq,
                    size=len(batch),
                    retry_in_s=delay,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._abandoned.wait(), delay)
            chained = False
            if previous is not None:
                await previous  # a retry never overtakes the batch before it

    async def _send_dead_letters(self, rejected: Sequence[Rejected]) -> tuple[int, int]:
        """Each rejected message to the dead-letter sink; (sent, failed)."""
        sent = failed = 0
        for r in rejected:
            try:
                await self._dead_letter(r)
                sent += 1
            except Exception:
                failed += 1
                log.exception("dead letter not delivered", stream_seq=r.stream_seq, reason=r.reason)
            else:
                log.warning("event dead-lettered", stream_seq=r.stream_seq, reason=r.reason)
        return sent, failed


def _fields(stats: IngestStats) -> dict[str, int]:
    return {
        "applied": stats.applied,
        "duplicates": stats.duplicates,
        "dead_lettered": stats.dead_lettered,
        "last_stream_seq": stats.last_stream_seq,
    }


# Events taken into batches between two releases of the memory an ingest burst leaves, while
# the burst goes on; and, once no message came for IDLE_RELEASE_S, after at least
# RELEASE_WHEN_IDLE_AFTER (the end of every burst), each said in one info line with the
# process's RssAnon before and after.
RELEASE_AFTER: Final = 50_000
RELEASE_WHEN_IDLE_AFTER: Final = 1_000
IDLE_RELEASE_S: Final = 1.0
