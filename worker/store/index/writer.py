"""The single writer of the index: one ``IndexWriter`` over a transport.

``IndexWriter[B]`` is what ingestion and the maintenance commands hold. It owns what every
writer shares: a batch is checked (``prepare``, CPU only, on the caller's thread) apart
from being written, so ingestion checks the next batch while the one before is written;
a batch may be sent while the one before it is still in flight (``apply_chained``: tried
only if that one committed); listeners hear of every commit; ``async with`` closes it.

The transport is where the ``WriterCore`` (``writer_core``) runs, one whole transaction
per call:

- ``ThreadTransport``: one dedicated thread of this process (not aiosqlite, whose
  one-hop-per-statement model left the SQLite thread idle while the event loop parsed the
  next batch: measured about half the throughput). ``SqliteIndexWriter`` opens it.
- ``writer_process.PipeTransport``: a child process, so ingestion uses two cores (the
  worker's default). ``ProcessIndexWriter`` opens it.

``B`` is the transport's checked batch: a ``PreparedBatch`` on the thread, the frame for
the pipe in the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

import structlog

from contracts.redaction import REDACTION_ON, RedactionSpec
from worker.store.index.batch import BatchChecker, PreparedBatch, reason_kind
from worker.store.index.writer_core import WriterCore
from worker.store.index.writer_limits import DEFAULT_LIMITS, WriterLimits
from worker.store.index.writer_open import IndexFileReplaced
from worker.store.protocol import Generation
from worker.store.writer_protocol import ApplyResult, IngestItem, SessionIndexWriter, Staged

__all__ = [
    "BatchChecker",
    "IndexFileReplaced",
    "IndexWriter",
    "PreparedBatch",
    "SqliteIndexWriter",
    "ThreadTransport",
    "WriterCore",
    "WriterTransport",
    "notify_listeners",
    "reason_kind",
]

log = structlog.get_logger(__name__)

_T = TypeVar("_T")


class CheckedBatch(Protocol):
    """What ``IndexWriter`` needs of a transport's batch: its messages (none: no write)."""

    @property
    def items(self) -> Sequence[object]: ...


B = TypeVar("B", bound=CheckedBatch)


class WriterTransport(Protocol[B]):
    """Where the ``WriterCore`` runs. Requests are carried out in the order they were
    made; each is whole (a cancelled caller cannot leave a transaction half-done)."""

    def prepare(self, items: Sequence[IngestItem]) -> B:
        """Check ``items`` on the caller's thread (CPU only, no database)."""
        ...

    async def apply(self, batch: B, *, chained: bool) -> ApplyResult:
        """``WriterCore.apply``: with ``chained``, only if the apply before committed."""
        ...

    async def purge(self, session_ids: tuple[str, ...], older_than_ms: int | None) -> int: ...

    async def generation(self) -> Generation: ...

    async def info(self) -> dict[str, object]: ...

    async def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]: ...

    async def sync_search(self) -> None:
        """``WriterCore.catch_up_search``: the search index up to the store, now."""
        ...

    async def close(self) -> None:
        """Finish the requests in flight, then release the index (idempotent)."""
        ...


class IndexWriter(SessionIndexWriter, Generic[B]):
    """The index's only writer, over a transport (see the module docstring)."""

    def __init__(self, transport: WriterTransport[B]) -> None:
        self._transport = transport
        self._listeners: list[Callable[[], None]] = []

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def add_commit_listener(self, callback: Callable[[], None]) -> None:
        """Called after every committed apply or purge (e.g. the readers' notify_commit)."""
        self._listeners.append(callback)

    async def last_stream_seq(self) -> int:
        return (await self._transport.generation()).seq

    async def generation(self) -> Generation:
        return await self._transport.generation()

    async def info(self) -> dict[str, object]:
        return await self._transport.info()

    async def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]:
        return await self._transport.bind_stream(name, created, first_seq, partitions)

    async def sync_search(self) -> None:
        """Bring the search index up to the store now (after writes made around the
        writer, e.g. a bulk load or a restore)."""
        await self._transport.sync_search()

    async def apply(self, items: Sequence[IngestItem]) -> ApplyResult:
        """``items`` checked and written at once (the maintenance commands, the tests)."""
        return await self.apply_prepared(self.prepare(items))

    def prepare(self, items: Sequence[IngestItem]) -> B:
        return self._transport.prepare(items)

    def stage(self, items: Sequence[IngestItem]) -> Staged:
        """Checked here, on the caller's thread; written by ``Staged.apply``, or sent behind
        the batch in flight by ``Staged.apply_chained`` (both transports chain)."""
        batch = self.prepare(items)
        return Staged(partial(self.apply_prepared, batch), partial(self.apply_chained, batch))

    async def apply_prepared(self, batch: B) -> ApplyResult:
        return await self._apply(batch, chained=False)

    async def apply_chained(self, batch: B) -> ApplyResult:
        """Apply ``batch`` only if the apply before it (already queued, or the last one)
        committed; ``BatchNotAttempted`` otherwise. Lets ingestion queue the next batch
        while the writer still works on the one before, so the writer never waits for it."""
        return await self._apply(batch, chained=True)

    async def _apply(self, batch: B, *, chained: bool) -> ApplyResult:
        if not batch.items:
            return ApplyResult(
                applied=0, duplicates=0, last_stream_seq=await self.last_stream_seq()
            )
        result = await self._transport.apply(batch, chained=chained)
        notify_listeners(self._listeners)
        return result

    async def purge(
        self, *, session_ids: Sequence[str] = (), older_than_ms: int | None = None
    ) -> int:
        """Remove sessions (see ``WriterCore.purge``); the epoch is bumped when any went."""
        if not session_ids and older_than_ms is None:
            return 0
        count = await self._transport.purge(tuple(session_ids), older_than_ms)
        if count:
            log.info("sessions purged", count=count)
            notify_listeners(self._listeners)
        return count


def notify_listeners(listeners: Iterable[Callable[[], None]]) -> None:
    for callback in listeners:
        try:
            callback()
        except Exception:
            # A listener's failure must not undo or fail a committed write.
            log.exception("commit listener failed")


class ThreadTransport:
    """``WriterTransport`` on one dedicated thread of this process. A whole transaction is
    one call: the thread never waits on the event loop between statements, and a cancelled
    caller cannot leave a transaction half-done (the call runs to its commit or rollback).
    The thread takes calls in order, so a chained batch queues behind the one before."""

    def __init__(self, core: WriterCore, executor: ThreadPoolExecutor) -> None:
        self._core = core  # used only on ``executor``'s one thread (``prepare`` aside)
        self._executor = executor
        self._closing = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        text_cap_bytes: int,
        max_event_bytes: int,
        redaction: RedactionSpec = REDACTION_ON,
        limits: WriterLimits = DEFAULT_LIMITS,
    ) -> ThreadTransport:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionquery-writer")
        opening = partial(
            WriterCore.open,
            path,
            text_cap_bytes=text_cap_bytes,
            max_event_bytes=max_event_bytes,
            redaction=redaction,
            limits=limits,
        )
        loop = asyncio.get_running_loop()
        try:
            core = await loop.run_in_executor(executor, opening)
            await loop.run_in_executor(executor, core.catch_up_search)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(core, executor)

    async def _run(self, fn: Callable[[], _T]) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def prepare(self, items: Sequence[IngestItem]) -> PreparedBatch:
        return self._core.prepare(items)  # the checker only: no database, no core state

    async def apply(self, batch: PreparedBatch, *, chained: bool) -> ApplyResult:
        # On this writer searches see each batch at once (one search commit per batch).
        return await self._run(
            partial(self._core.apply, batch, commit_search=True, chained=chained)
        )

    async def purge(self, session_ids: tuple[str, ...], older_than_ms: int | None) -> int:
        return await self._run(partial(self._core.purge, session_ids, older_than_ms))

    async def generation(self) -> Generation:
        return await self._run(self._core.generation)

    async def info(self) -> dict[str, object]:
        return await self._run(self._core.info)

    async def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]:
        return await self._run(
            partial(self._core.bind_stream, name, created, first_seq, partitions)
        )

    async def sync_search(self) -> None:
        await self._run(self._core.catch_up_search)

    async def close(self) -> None:
        async with self._closing:
            if self._closed:
                return
            self._closed = True
            await self._run(self._core.close)
        self._executor.shutdown(wait=True)


class SqliteIndexWriter(IndexWriter[PreparedBatch]):
    """The index's only writer, on a thread of this process. Use
    ``await SqliteIndexWriter.open(path)``. (The worker ingests through
    ``worker.store.index.writer_process.ProcessIndexWriter``, the same work in a child process.)"""

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        text_cap_bytes: int = 64 * 1024,
        max_event_bytes: int = 1024 * 1024,
        redaction: RedactionSpec = REDACTION_ON,
        limits: WriterLimits = DEFAULT_LIMITS,
    ) -> SqliteIndexWriter:
        transport = await ThreadTransport.open(
            path,
            text_cap_bytes=text_cap_bytes,
            max_event_bytes=max_event_bytes,
            redaction=redaction,
            limits=limits,
        )
        return cls(transport)
