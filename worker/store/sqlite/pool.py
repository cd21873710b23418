"""Where a read transaction runs: the reader pool, its thread hops, interrupt and rollback.

Two ways to run ``work`` (a function of a ``Tx``) as ONE read transaction:

- ``run_inline``: on the event loop's own thread, now, on a connection of its own. For
  lookups by key whose size is bounded (headers and titles, an event window, an event's
  relations, a session's latest seq): there a hop to a reader thread costs several times
  the read itself (the executor round trip, plus GIL hand-offs that, with a few readers
  busy, delayed every socket write of the loop, ~1 ms each measured under 64 reads in
  flight). Nothing awaits inside, so the signal cannot fire mid-transaction; it is checked
  before, and a lookup never waits for a reader.
- ``run_on_reader``: the whole transaction in a single hop to a reader thread, for reads
  whose cost grows with the corpus or a chain (searches, long lineages). A hop per
  statement (aiosqlite's model) measured ~0.2 ms each on a loaded 2-core machine, five per
  search. Taking a reader waits when all are busy: that wait is the backpressure.

Cancellation: the signal is checked before taking a reader and before each statement; when
it fires mid-transaction, the running statement is interrupted (``sqlite3_interrupt``,
repeated until the hop settles, since an interrupt landing between statements is a no-op),
the hop is always awaited, the transaction is rolled back so the reader stays usable, and
the signal's own error is raised unchanged. An error never becomes an empty result.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

from worker.signals import ExecutionSignal
from worker.store.database import INDEX, INDEX_READER, Database, Params, Result
from worker.store.errors import StoreError
from worker.store.event_codec import EventCodec
from worker.store.files import schema

T = TypeVar("T")

# An interrupt that lands before the statement starts is a no-op in SQLite: repeat it
# until the statement settles.
_INTERRUPT_RETRY_S: Final = 0.02


class _Stopped(StoreError):
    """The signal fired between statements: the transaction starts nothing more."""


# The stop flag of a transaction run on the loop's thread: nothing can set it meanwhile.
_NEVER_STOPPED: Final = threading.Event()


class Tx:
    """The statements of one read transaction, run on the thread that runs the work."""

    __slots__ = ("_db", "_stop")

    def __init__(self, db: Database, stop: threading.Event) -> None:
        self._db = db
        self._stop = stop

    def read(self, sql: str, params: Params = ()) -> Result:
        """The rows with their columns by name (``worker.store.results`` reads them so)."""
        if self._stop.is_set():
            raise _Stopped
        return self._db.rows(sql, params)

    @property
    def codec(self) -> EventCodec:
        """The connection's frames reader (``event_codec``), for rows read as ``doc``."""
        return self._db.codec

    def run(self, sql: str) -> None:
        """A statement without rows (BEGIN, COMMIT)."""
        if self._stop.is_set():
            raise _Stopped
        self._db.run(sql)


class ReaderPool:
    """Reader connections (each with its own thread) and the loop thread's connection."""

    def __init__(self, readers: Sequence[Database], loop_reader: Database) -> None:
        self.readers = tuple(readers)
        # The key lookups run on the event loop's thread, one at a time (nothing awaits
        # inside them), so one connection of their own serves them all: no pool round
        # trip per lookup, no wait behind a search that holds every reader, and one
        # connection's caches stay warm instead of four taking turns.
        self._loop_reader = loop_reader
        self._idle: asyncio.Queue[Database] = asyncio.Queue()
        for conn in self.readers:
            self._idle.put_nowait(conn)
        # One thread per reader: a reader is used by one operation at a time, so a hop
        # never queues behind another.
        self._threads = ThreadPoolExecutor(
            max_workers=len(self.readers), thread_name_prefix="sessionquery-reader"
        )
        self._loop = asyncio.get_running_loop()
        self._closed = False

    @classmethod
    async def open(cls, path: str, readers: int) -> ReaderPool:
        if readers < 1:
            raise ValueError("readers must be at least 1")
        conns = await asyncio.to_thread(_connect_readers, path, readers + 1)
        return cls(conns[:-1], conns[-1])

    async def close(self) -> None:
        """Close every reader once it is back in the pool (running reads finish first)."""
        if self._closed:
            return
        self._closed = True
        for _ in self.readers:
            conn = await self._idle.get()
            await self._loop.run_in_executor(self._threads, conn.close)
        self._loop_reader.close()  # no lookup can be running: they never await
        self._threads.shutdown(wait=False)

    def qsize(self) -> int:
        """Readers idle in the pool now."""
        return self._idle.qsize()

    # -- the two ways to run a read ------------------------------------------------------

    def run_inline(
        self, signal: ExecutionSignal, work: Callable[[Tx], T], *, one_statement: bool = False
    ) -> T:
        """Run a short, index-bounded ``work`` as one read transaction on the event loop's
        own thread (see the module docstring for when).

        ``one_statement``: ``work`` runs a single SELECT, which SQLite already reads from
        one snapshot, so no explicit BEGIN/COMMIT is spent on it."""
        signal.raise_if_aborted()
        self._check_open()
        conn = self._loop_reader
        try:
            if one_statement:
                if conn.in_transaction:  # a rollback that failed earlier: do not read in it
                    conn.run("ROLLBACK")
                return work(Tx(conn, _NEVER_STOPPED))
            return _transaction(conn, work, _NEVER_STOPPED)
        except sqlite3.Error as exc:
            conn.rollback()
            raise StoreError(f"index read failed: {exc}") from exc
        except BaseException:
            conn.rollback()
            raise

    async def run_on_reader(self, signal: ExecutionSignal, work: Callable[[Tx], T]) -> T:
        """Run ``work`` as one read transaction on a reader's thread, bounded by ``signal``."""
        async with self._reader(signal) as conn:
            stop = threading.Event()
            running = self._loop.run_in_executor(self._threads, _transaction, conn, work, stop)
            await self._settle(signal, conn, running, stop)
            if signal.aborted:
                if not running.cancelled():
                    running.exception()  # retrieved: the abort, not 'interrupted', answers
                assert signal.error is not None
                raise signal.error
            try:
                return running.result()
            except sqlite3.Error as exc:
                raise StoreError(f"index read failed: {exc}") from exc

    # -- hops, interrupt and rollback ----------------------------------------------------

    async def _settle(
        self,
        signal: ExecutionSignal,
        conn: Database,
        running: asyncio.Future[Any],
        stop: threading.Event,
    ) -> None:
        """Until the hop has ended or the signal fired; then the reader is left with no
        transaction open unless the work committed."""
        # Woken by whichever comes first, the hop's end or the signal, through plain
        # callbacks (a task per hop waiting on the signal cost more than a small read).
        woken: asyncio.Future[None] = self._loop.create_future()

        def wake(_: object) -> None:
            if not woken.done():
                woken.set_result(None)

        running.add_done_callback(wake)
        remove = signal.on_abort(wake)
        try:
            await woken
        except asyncio.CancelledError:
            await self._abandon(conn, running, stop)
            raise
        finally:
            remove()
        if not running.done():
            await self._abandon(conn, running, stop)
        elif signal.aborted or running.exception() is not None:
            await self._loop.run_in_executor(self._threads, conn.rollback)

    async def _abandon(
        self, conn: Database, running: asyncio.Future[Any], stop: threading.Event
    ) -> None:
        """Stop the transaction: no new statement starts, the running one is interrupted
        until the hop has settled, then the transaction is rolled back."""
        stop.set()
        while not running.done():
            conn.interrupt()
            await asyncio.wait({running}, timeout=_INTERRUPT_RETRY_S)
        if not running.cancelled():
            running.exception()  # retrieved: 'interrupted' is expected here, not news
        await self._loop.run_in_executor(self._threads, conn.rollback)

    # -- taking a reader -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the session store is closed")

    @contextlib.asynccontextmanager
    async def _reader(self, signal: ExecutionSignal) -> AsyncIterator[Database]:
        signal.raise_if_aborted()
        self._check_open()
        conn = await self._take(signal)
        try:
            yield conn
        finally:
            self._idle.put_nowait(conn)

    async def _take(self, signal: ExecutionSignal) -> Database:
        with contextlib.suppress(asyncio.QueueEmpty):
            return self._idle.get_nowait()
        getter = asyncio.ensure_future(self._idle.get())
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({getter, aborted}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            self._drop(getter)
            raise
        finally:
            aborted.cancel()
        if signal.aborted:
            self._drop(getter)
            assert signal.error is not None
            raise signal.error
        return getter.result()

    def _drop(self, getter: asyncio.Future[Database]) -> None:
        """Give up a pending pool get; a reader it already obtained goes straight back."""
        if not getter.done():
            getter.cancel()
        elif not getter.cancelled() and getter.exception() is None:
            self._idle.put_nowait(getter.result())


def _transaction(conn: Database, work: Callable[[Tx], T], stop: threading.Event) -> T:
    """BEGIN, the work, COMMIT. On failure the caller rolls back (after any interrupt)."""
    tx = Tx(conn, stop)
    if conn.in_transaction:  # a rollback that failed earlier must not poison the reader
        conn.run("ROLLBACK")
    tx.run("BEGIN")
    result = work(tx)
    tx.run("COMMIT")
    return result


def _connect_readers(path: str, count: int) -> list[Database]:
    _create_schema(path)  # a short-lived connection, so readers never write
    conns: list[Database] = []
    try:
        for _ in range(count):
            # Autocommit: BEGIN/COMMIT are explicit.
            conn = Database.open(path, pragmas=INDEX_READER, role="reader")
            conns.append(conn)
            schema.define_functions(conn)
    except BaseException:
        for conn in conns:
            conn.close()
        raise
    return conns


def _create_schema(path: str) -> None:
    conn = Database.open(path, pragmas=INDEX, role="schema")
    try:
        schema.create(conn)
    finally:
        conn.close()
