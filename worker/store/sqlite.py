"""The SQLite FTS5 provider of ``SessionQueryService``: a pool of reader connections.

Every operation runs as ONE read transaction (or one SELECT, which reads one snapshot),
returning the session header read in that same transaction with every payload. Searches
take a reader from the pool (waiting is the backpressure). Searches and lineage (whose
cost grows with the corpus or a chain) run the whole transaction in a single hop to a
reader thread: a hop per statement (aiosqlite's model) measured ~0.2 ms each on a loaded
2-core machine, five per search, which alone put the provider at ~2x a raw FTS5 query on
a mid-sized index. Lookups by key whose size is
bounded (headers and titles, an event window, an event's relations, a session's latest
seq) run on the event loop's thread instead, on a connection of their own, where they
cost less than the hop would.

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
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

from worker.signals import ExecutionSignal
from worker.store import cursors, schema
from worker.store import rows as rowmap
from worker.store.errors import StoreError
from worker.store.protocol import (
    EventFilter,
    EventRef,
    EventRelations,
    EventSearchPage,
    EventSummary,
    EventWindow,
    Generation,
    Lineage,
    LineageNode,
    LinkedEvent,
    ServiceLimits,
    SessionFilter,
    SessionHeader,
    SessionSearchPage,
    StoredEvent,
    TitleObservation,
)
from worker.store.query import compile_query
from worker.store.rows import EVENT_COLS, EVENT_WIDTH, HEADER_COLS, HEADER_WIDTH
from worker.store.rows import PREVIEW_CHARS as PREVIEW_CHARS  # re-exported for tests
from worker.store.search_index import SearchIndexReader
from worker.store.search_ops import SessionSearch, search_session_events

T = TypeVar("T")
Row = tuple[Any, ...]

# Another process may commit (no in-process notification), so waiting also polls.
WAIT_POLL_S: Final = 0.05
# An interrupt that lands before the statement starts is a no-op in SQLite: repeat it
# until the statement settles.
_INTERRUPT_RETRY_S: Final = 0.02
# Chain or tree rows a lineage walks on the event loop's thread before it is read again on
# a reader thread (a hop measured ~0.1 ms of a ~0.3 ms session_trace).
LOOP_LINEAGE_ROWS: Final = 64


_TITLES_BY_JSON: Final = (
    f"SELECT {HEADER_COLS}, s.title FROM sessions s"
    " WHERE s.session_id IN (SELECT value FROM json_each(?))"
)
_TITLES_BY_KEYS: Final = tuple(
    f"SELECT {HEADER_COLS}, s.title FROM sessions s WHERE s.session_id "
    + ("= ?" if n == 1 else "IN (" + ", ".join("?" * n) + ")")
    for n in range(1, 9)
)


class _Truncated:
    """A lineage walk that reached its cap on the loop thread."""


_TRUNCATED: Final = _Truncated()


class SqliteSessionStore:
    """``SessionQueryService`` over one SQLite index file. Safe for concurrent use."""

    def __init__(
        self,
        *,
        readers: Sequence[sqlite3.Connection],
        limits: ServiceLimits,
        loop_reader: sqlite3.Connection,
        location: str,
    ) -> None:
        self._limits = limits
        self._location = location
        self._search: SearchIndexReader | None = None
        self._readers = tuple(readers)
        # The key lookups run on the event loop's thread, one at a time (nothing awaits
        # inside them), so one connection of their own serves them all: no pool round
        # trip per lookup, no wait behind a search that holds every reader, and one
        # connection's caches stay warm instead of four taking turns.
        self._loop_reader = loop_reader
        self._pool: asyncio.Queue[sqlite3.Connection] = asyncio.Queue()
        for conn in self._readers:
            self._pool.put_nowait(conn)
        # One thread per reader: a reader is used by one operation at a time, so a hop
        # never queues behind another.
        self._threads = ThreadPoolExecutor(
            max_workers=len(self._readers), thread_name_prefix="sessionquery-reader"
        )
        self._loop = asyncio.get_running_loop()
        self._committed = asyncio.Event()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        readers: int = 4,
        limits: ServiceLimits = ServiceLimits(),  # noqa: B008 - frozen, shared safely
    ) -> SqliteSessionStore:
        if readers < 1:
            raise ValueError("readers must be at least 1")
        location = str(path)
        conns = await asyncio.to_thread(_connect_readers, location, readers + 1)
        return cls(readers=conns[:-1], limits=limits, loop_reader=conns[-1], location=location)

    async def close(self) -> None:
        """Close every reader once it is back in the pool (running reads finish first)."""
        if self._closed:
            return
        self._closed = True
        for _ in self._readers:
            conn = await self._pool.get()
            await self._loop.run_in_executor(self._threads, conn.close)
        self._loop_reader.close()  # no lookup can be running: they never await
        self._threads.shutdown(wait=False)

    async def __aenter__(self) -> SqliteSessionStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def limits(self) -> ServiceLimits:
        return self._limits

    def notify_commit(self) -> None:
        """Wake ``wait_for_seq`` waiters now; the in-process writer calls this on commit."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake()
        else:
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        # Waiters hold the previous event; a fresh one serves the next round.
        self._committed.set()
        self._committed = asyncio.Event()

    # -- simple reads ------------------------------------------------------------------

    async def generation(self, *, signal: ExecutionSignal) -> Generation:
        def work(tx: _Tx) -> Generation:
            return _generation(tx)

        return await self._read_now(signal, work, one_statement=True)

    async def latest_seq_of_type(
        self, session_id: str, event_type: str, *, signal: ExecutionSignal
    ) -> int | None:
        def work(tx: _Tx) -> int | None:
            rows = tx.fetch(
                "SELECT max(seq) FROM events WHERE session_id = ? AND type = ?",
                (session_id, event_type),
            )
            value = rows[0][0]
            return int(value) if value is not None else None

        return await self._read_now(signal, work, one_statement=True)

    async def read_titles(
        self, session_ids: Sequence[str], *, signal: ExecutionSignal
    ) -> Mapping[str, TitleObservation]:
        ids = list(dict.fromkeys(session_ids))

        def work(tx: _Tx) -> dict[str, TitleObservation]:
            if not ids:
                return {}
            if len(ids) <= len(_TITLES_BY_KEYS):
                # A few ids (a direct tool's caller and target): plain key lookups, about
                # half the cost of json_each for one id.
                rows = tx.fetch(_TITLES_BY_KEYS[len(ids) - 1], ids)
            else:
                # One JSON parameter instead of an IN list: no host-parameter limit.
                rows = tx.fetch(_TITLES_BY_JSON, (rowmap.json_list(ids),))
            found: dict[str, TitleObservation] = {}
            for row in rows:
                header = rowmap.header(row)
                found[header.session_id] = TitleObservation(header, row[HEADER_WIDTH])
            return found

        return await self._read_now(signal, work, one_statement=True)

    async def read_event(
        self,
        session_id: str,
        seq: int,
        *,
        before: int,
        after: int,
        signal: ExecutionSignal,
    ) -> EventWindow | None:
        cap = self._limits.max_event_window
        before = max(0, min(before, cap))
        after = max(0, min(after, cap))

        def work(tx: _Tx) -> EventWindow | None:
            # The header and the window in ONE statement (one snapshot, no BEGIN/COMMIT):
            # a row per event, the header repeated; one row of NULL events when none.
            rows = tx.fetch(
                f"SELECT {HEADER_COLS}, {EVENT_COLS}, e.raw_json FROM sessions s"
                " LEFT JOIN events e"
                " ON e.session_id = s.session_id AND e.seq BETWEEN ? AND ?"
                " WHERE s.session_id = ? ORDER BY e.seq",
                (seq - before, seq + after, session_id),
            )
            if not rows:
                return None
            header = rowmap.header(rows[0])
            events = [
                StoredEvent(rowmap.summary(row[HEADER_WIDTH:]), row[HEADER_WIDTH + EVENT_WIDTH])
                for row in rows
                if row[HEADER_WIDTH] is not None
            ]
            target = next((ev for ev in events if ev.summary.seq == seq), None)
            return EventWindow(
                header=header,
                target=target,
                before=tuple(ev for ev in events if ev.summary.seq < seq),
                after=tuple(ev for ev in events if ev.summary.seq > seq),
            )

        return await self._read_now(signal, work, one_statement=True)

    async def wait_for_seq(self, session_id: str, seq: int, *, signal: ExecutionSignal) -> None:
        """Until the store holds ``session_id`` through ``seq``, and the search index has
        taken that event too (read-your-writes covers searches)."""

        def work(tx: _Tx) -> int | None:
            found = tx.fetch(
                "SELECT s.last_seq >= :seq, (SELECT id FROM events"
                " WHERE session_id = :sid AND seq = :seq) FROM sessions s"
                " WHERE s.session_id = :sid",
                {"sid": session_id, "seq": seq},
            )
            if not found or not found[0][0]:
                return None
            return int(found[0][1] or 0)

        while True:
            signal.raise_if_aborted()
            # Taken before the read, so a commit between the read and the wait still wakes.
            committed = self._committed
            event_id = await self._read_now(signal, work, one_statement=True)
            if event_id is not None and self._search_has(event_id):
                return
            aborted = asyncio.ensure_future(signal.wait())
            woken = asyncio.ensure_future(committed.wait())
            try:
                await asyncio.wait(
                    {aborted, woken}, timeout=WAIT_POLL_S, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                aborted.cancel()
                woken.cancel()

    def search_indexed_through(self) -> int | None:
        """The stream sequence the search index is complete through (None: not built)."""
        if self._search is None:
            self._search = SearchIndexReader.open(self._location)
            if self._search is None:
                return None
        return self._search.refresh().stream_seq

    def _search_has(self, event_id: int) -> bool:
        if self._search is None:
            self._search = SearchIndexReader.open(self._location)
            if self._search is None:
                return False
        return self._search.refresh().event_id >= event_id

    # -- lineage and relations ---------------------------------------------------------

    async def lineage(self, session_id: str, *, signal: ExecutionSignal) -> Lineage | None:
        """Ancestors and descendant trees. A lineage of up to ``LOOP_LINEAGE_ROWS`` chain
        and tree rows (nearly all) is read on the loop's thread like a key lookup; the walk
        is capped there, and one that reaches the cap is read again whole on a reader."""

        def work(tx: _Tx, cap: int) -> Lineage | _Truncated | None:
            # UNION (not UNION ALL) discards a session already reached, so a cycle ends;
            # the order is restored below by following parent ids from the target.
            # Both walks in ONE statement (one snapshot, no BEGIN/COMMIT); kind 0 rows are
            # the chain (in no particular order), kind 1 rows the tree in creation order.
            rows = tx.fetch(
                f"""
                WITH RECURSIVE chain(sid) AS (
                    SELECT :sid
                    UNION
                    SELECT p.parent_session_id
                    FROM chain JOIN sessions p ON p.session_id = chain.sid
                    WHERE p.parent_session_id IS NOT NULL
                    LIMIT :cap
                ),
                tree(sid) AS (
                    SELECT :sid
                    UNION
                    SELECT c.session_id FROM tree JOIN sessions c ON c.parent_session_id = tree.sid
                    LIMIT :cap
                )
                SELECT 0 AS kind, chain.sid, {HEADER_COLS}
                FROM chain LEFT JOIN sessions s ON s.session_id = chain.sid
                UNION ALL
                SELECT 1, tree.sid, {HEADER_COLS}
                FROM tree JOIN sessions s ON s.session_id = tree.sid
                ORDER BY kind, created_ms, session_id
                """,
                {"sid": session_id, "cap": cap},
            )
            chain = [row[1:] for row in rows if row[0] == 0]
            tree = [row[2:] for row in rows if row[0] == 1]
            if len(chain) == cap or len(tree) == cap:
                return _TRUNCATED
            known = {row[0]: rowmap.header(row[1:]) for row in chain if row[1] is not None}
            target = known.get(session_id)
            if target is None:
                return None
            placed = {target.session_id}
            ancestors: list[SessionHeader] = []
            missing: str | None = None
            parent = target.parent_session_id
            while parent is not None and parent not in placed:  # placed again: a cycle
                header = known.get(parent)
                if header is None:
                    missing = parent
                    break
                ancestors.append(header)
                placed.add(parent)
                parent = header.parent_session_id
            descendants = _descendant_trees(
                target.session_id, [rowmap.header(r) for r in tree], placed
            )
            return Lineage(
                target=target,
                ancestors=tuple(ancestors),
                missing_ancestor_id=missing,
                descendants=descendants,
            )

        found = await self._read_now(
            signal, lambda tx: work(tx, LOOP_LINEAGE_ROWS), one_statement=True
        )
        if isinstance(found, _Truncated):
            found = await self._read(signal, lambda tx: work(tx, -1))  # -1: no LIMIT
        assert not isinstance(found, _Truncated)
        return found

    async def event_relations(
        self, session_id: str, seq: int, *, signal: ExecutionSignal
    ) -> EventRelations | None:
        def work(tx: _Tx) -> EventRelations | None:
            # The header with the event itself (LEFT JOIN: the event may be missing).
            found = tx.fetch(
                f"SELECT {HEADER_COLS}, {EVENT_COLS} FROM sessions s"
                " LEFT JOIN events e ON e.session_id = s.session_id AND e.seq = ?"
                " WHERE s.session_id = ?",
                (seq, session_id),
            )
            if not found:
                return None
            header = rowmap.header(found[0])
            target = found[0][HEADER_WIDTH:]
            replaces = self._replacements(tx, session_id, seq, backward=True)
            replaced_by = self._replacements(tx, session_id, seq, backward=False)
            cites = _linked(
                tx,
                "SELECT c.cited_session_id, c.cited_seq FROM citations c"
                " WHERE c.session_id = ? AND c.seq = ?",
                session_id,
                seq,
            )
            cited_by = _linked(
                tx,
                "SELECT c.session_id, c.seq FROM citations c"
                " WHERE c.cited_session_id = ? AND c.cited_seq = ?",
                session_id,
                seq,
            )
            return EventRelations(
                header=header,
                event=rowmap.summary(target) if target[0] is not None else None,
                replaces=replaces,
                replaced_by=replaced_by,
                cites=cites,
                cited_by=cited_by,
            )

        return await self._read_now(signal, work)

    @staticmethod
    def _replacements(
        tx: _Tx, session_id: str, seq: int, *, backward: bool
    ) -> tuple[EventSummary, ...]:
        # UNION (not UNION ALL) discards a position already reached, so a cycle ends.
        step_from, step_to = ("seq", "replaced_seq") if backward else ("replaced_seq", "seq")
        rows = tx.fetch(
            f"""
            WITH RECURSIVE reach(pos) AS (
                SELECT ?
                UNION
                SELECT r.{step_to} FROM reach
                JOIN replacements r ON r.session_id = ? AND r.{step_from} = reach.pos
            )
            SELECT {EVENT_COLS} FROM reach
            JOIN events e ON e.session_id = ? AND e.seq = reach.pos
            WHERE reach.pos <> ?
            ORDER BY abs(reach.pos - ?), reach.pos
            """,
            (seq, session_id, session_id, seq, seq),
        )
        return tuple(rowmap.summary(row) for row in rows)

    # -- search ------------------------------------------------------------------------

    def check_query(self, query: str) -> None:
        compile_query(query)

    def _search_index(self) -> SearchIndexReader:
        """The search index as of its latest commit (opened on first use: the writer
        creates it)."""
        if self._search is None:
            self._search = SearchIndexReader.open(self._location)
            if self._search is None:
                raise StoreError("the search index is not built yet")
        self._search.refresh()
        return self._search

    async def search_sessions(
        self,
        query: str,
        *,
        cwd: str,
        sessions: SessionFilter,
        events: EventFilter,
        cursor: str | None,
        page_size: int,
        signal: ExecutionSignal,
    ) -> SessionSearchPage:
        """Cross-session search. ``events.seq_from/seq_to`` only apply to one session, so
        they are ignored here."""
        signal.raise_if_aborted()
        plan = compile_query(query)
        size = self._page_size(page_size)
        binding = cursors.binding("sessions", query, cwd, sessions, events)

        def work(tx: _Tx) -> SessionSearchPage:
            current = _generation(tx)
            start = cursors.resume(cursor, binding, current)
            snap = current.seq if start is None else start.snapshot_seq
            search = SessionSearch(
                tx.fetch,
                self._search_index().view(),
                plan,
                cwd=cwd,
                ws=schema.workspace_token(cwd),
                sessions=sessions,
                events=events,
                snapshot_seq=snap,
            )
            offset = 0 if start is None else start.offset
            found = search.page(offset, size, None if start is None else start.partial)
            generation = Generation(current.epoch, snap)
            return SessionSearchPage(
                hits=tuple(found.hits),
                next_cursor=cursors.encode(
                    generation, offset + size, binding, partial=found.ranked_partial
                )
                if found.more
                else None,
                generation=generation,
                filtered_out=found.filtered_out,
                partial=found.partial,
                unmatched=found.unmatched,
            )

        return await self._read(signal, work)

    async def search_events(
        self,
        query: str,
        *,
        session_id: str,
        events: EventFilter,
        cursor: str | None,
        page_size: int,
        signal: ExecutionSignal,
        scope_to_seq: int | None = None,
    ) -> EventSearchPage | None:
        signal.raise_if_aborted()
        plan = compile_query(query)
        size = self._page_size(page_size)
        scope = session_id if scope_to_seq is None else f"{session_id}:{scope_to_seq}"
        binding = cursors.binding("events", query, scope, None, events)

        def work(tx: _Tx) -> EventSearchPage | None:
            found = tx.fetch(
                f"SELECT {rowmap.HEADER_COLS}, s.ws FROM sessions s WHERE s.session_id = ?",
                (session_id,),
            )
            if not found:
                return None
            header = rowmap.header(found[0])
            current = _generation(tx)
            start = cursors.resume(cursor, binding, current)
            snap = current.seq if start is None else start.snapshot_seq
            offset = 0 if start is None else start.offset
            page = search_session_events(
                tx.fetch,
                self._search_index().view(),
                plan,
                session_id=session_id,
                ws=found[0][rowmap.HEADER_WIDTH],
                events=events,
                snapshot_seq=snap,
                scope_to_seq=scope_to_seq,
                offset=offset,
                size=size,
                partial=None if start is None else start.partial,
            )
            generation = Generation(current.epoch, snap)
            return EventSearchPage(
                header=header,
                hits=tuple(page.hits),
                next_cursor=cursors.encode(
                    generation, offset + size, binding, partial=page.ranked_partial
                )
                if page.more
                else None,
                generation=generation,
                filtered_out=page.filtered_out,
                partial=page.partial,
                unmatched=page.unmatched,
            )

        return await self._read(signal, work)

    def _page_size(self, page_size: int) -> int:
        return max(1, min(page_size, self._limits.max_page_size))

    # -- transactions ------------------------------------------------------------------

    async def _read_now(
        self, signal: ExecutionSignal, work: Callable[[_Tx], T], *, one_statement: bool = False
    ) -> T:
        """Run a short, index-bounded ``work`` as one read transaction on the event loop's
        own thread. For a lookup by key a hop to a reader thread costs several times the
        read itself: the executor round trip, plus GIL hand-offs between the reader and the
        loop that, with a few readers busy, delayed every socket write of the loop (~1 ms
        each measured under 64 reads in flight). Nothing awaits inside, so the signal
        cannot fire mid-transaction; it is checked before. These reads have a connection
        of their own (``_loop_reader``), so they never wait for a reader.

        ``one_statement``: ``work`` runs a single SELECT, which SQLite already reads from
        one snapshot, so no explicit BEGIN/COMMIT is spent on it."""
        signal.raise_if_aborted()
        if self._closed:
            raise StoreError("the session store is closed")
        conn = self._loop_reader
        try:
            if one_statement:
                if conn.in_transaction:  # a rollback that failed earlier: do not read in it
                    conn.execute("ROLLBACK")
                return work(_Tx(conn, _NEVER_STOPPED))
            return _transaction(conn, work, _NEVER_STOPPED)
        except sqlite3.Error as exc:
            _rollback(conn)
            raise StoreError(f"index read failed: {exc}") from exc
        except BaseException:
            _rollback(conn)
            raise

    async def _read(self, signal: ExecutionSignal, work: Callable[[_Tx], T]) -> T:
        """Run ``work`` as one read transaction on a reader, bounded by ``signal``."""
        async with self._reader(signal) as conn:
            stop = threading.Event()
            running = self._loop.run_in_executor(self._threads, _transaction, conn, work, stop)
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
                await self._run(_rollback, conn)
            if signal.aborted:
                if not running.cancelled():
                    running.exception()  # retrieved: the abort, not 'interrupted', answers
                assert signal.error is not None
                raise signal.error
            try:
                return running.result()
            except sqlite3.Error as exc:
                raise StoreError(f"index read failed: {exc}") from exc

    async def _abandon(
        self, conn: sqlite3.Connection, running: asyncio.Future[Any], stop: threading.Event
    ) -> None:
        """Stop the transaction: no new statement starts, the running one is interrupted
        until the hop has settled, then the transaction is rolled back."""
        stop.set()
        while not running.done():
            conn.interrupt()
            await asyncio.wait({running}, timeout=_INTERRUPT_RETRY_S)
        if not running.cancelled():
            running.exception()  # retrieved: 'interrupted' is expected here, not news
        await self._run(_rollback, conn)

    async def _run(self, fn: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
        return await self._loop.run_in_executor(self._threads, fn, conn)

    @contextlib.asynccontextmanager
    async def _reader(self, signal: ExecutionSignal) -> AsyncIterator[sqlite3.Connection]:
        signal.raise_if_aborted()
        if self._closed:
            raise StoreError("the session store is closed")
        conn = await self._take(signal)
        try:
            yield conn
        finally:
            self._pool.put_nowait(conn)

    async def _take(self, signal: ExecutionSignal) -> sqlite3.Connection:
        with contextlib.suppress(asyncio.QueueEmpty):
            return self._pool.get_nowait()
        getter = asyncio.ensure_future(self._pool.get())
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

    def _drop(self, getter: asyncio.Future[sqlite3.Connection]) -> None:
        """Give up a pending pool get; a reader it already obtained goes straight back."""
        if not getter.done():
            getter.cancel()
        elif not getter.cancelled() and getter.exception() is None:
            self._pool.put_nowait(getter.result())


class _Stopped(StoreError):
    """The signal fired between statements: the transaction starts nothing more."""


# The stop flag of a transaction run on the loop's thread: nothing can set it meanwhile.
_NEVER_STOPPED: Final = threading.Event()


class _Tx:
    """The statements of one read transaction, run on the reader's thread."""

    __slots__ = ("_conn", "_stop")

    def __init__(self, conn: sqlite3.Connection, stop: threading.Event) -> None:
        self._conn = conn
        self._stop = stop

    def fetch(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Row]:
        if self._stop.is_set():
            raise _Stopped
        # No row factory is set, so rows are plain tuples.
        return self._conn.execute(sql, params).fetchall()


def _transaction(conn: sqlite3.Connection, work: Callable[[_Tx], T], stop: threading.Event) -> T:
    """BEGIN, the work, COMMIT. On failure the caller rolls back (after any interrupt)."""
    tx = _Tx(conn, stop)
    if conn.in_transaction:  # a rollback that failed earlier must not poison the reader
        conn.execute("ROLLBACK")
    tx.fetch("BEGIN")
    result = work(tx)
    tx.fetch("COMMIT")
    return result


def _rollback(conn: sqlite3.Connection) -> None:
    # No transaction may be open (BEGIN failed, or COMMIT ended it): nothing to undo then.
    with contextlib.suppress(sqlite3.Error):
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def _create_schema(path: str) -> None:
    conn = schema.connect(path)
    try:
        schema.create(conn)
    finally:
        conn.close()


def _connect_readers(path: str, count: int) -> list[sqlite3.Connection]:
    _create_schema(path)  # a short-lived connection, so readers never write
    conns: list[sqlite3.Connection] = []
    try:
        for _ in range(count):
            conn = schema.connect(path)  # isolation_level=None: BEGIN/COMMIT are explicit
            conns.append(conn)
            conn.execute("PRAGMA query_only = 1")
    except BaseException:
        for conn in conns:
            conn.close()
        raise
    return conns


# -- statements shared by several operations -----------------------------------------------


def _generation(tx: _Tx) -> Generation:
    rows = tx.fetch(
        "SELECT (SELECT value FROM meta WHERE key = 'epoch'),"
        " (SELECT value FROM meta WHERE key = 'stream_seq')"
    )
    epoch, seq = rows[0]
    return Generation(epoch=int(epoch or 0), seq=int(seq or 0))


def _linked(tx: _Tx, refs_sql: str, session_id: str, seq: int) -> tuple[LinkedEvent, ...]:
    rows = tx.fetch(
        f"""
        WITH refs(rsid, rseq) AS ({refs_sql})
        SELECT refs.rsid, refs.rseq, {HEADER_COLS}, {EVENT_COLS}
        FROM refs
        LEFT JOIN sessions s ON s.session_id = refs.rsid
        LEFT JOIN events e ON e.session_id = refs.rsid AND e.seq = refs.rseq
        ORDER BY refs.rsid, refs.rseq
        """,
        (session_id, seq),
    )
    linked = []
    for row in rows:
        head, ev = row[2 : 2 + HEADER_WIDTH], row[2 + HEADER_WIDTH :]
        linked.append(
            LinkedEvent(
                ref=EventRef(row[0], int(row[1])),
                header=rowmap.header(head) if head[0] is not None else None,
                event=rowmap.summary(ev) if ev[0] is not None else None,
            )
        )
    return tuple(linked)


# -- rows to results -----------------------------------------------------------------------


def _descendant_trees(
    root: str, headers: Iterable[SessionHeader], placed: set[str]
) -> tuple[LineageNode, ...]:
    """Trees under ``root``; each session appears once, none of ``placed`` again.

    Built without recursion (a chain may be thousands deep): first choose each session's
    place breadth-first, then assemble nodes from the deepest level up.
    """
    children: dict[str, list[SessionHeader]] = {}
    for header in headers:
        if header.parent_session_id is not None:
            children.setdefault(header.parent_session_id, []).append(header)
    seen = set(placed)
    levels: list[list[tuple[str, list[SessionHeader]]]] = []  # (parent id, placed children)
    frontier = [root]
    while frontier:
        level: list[tuple[str, list[SessionHeader]]] = []
        for parent in frontier:
            kids = [h for h in children.get(parent, ()) if h.session_id not in seen]
            seen.update(h.session_id for h in kids)
            level.append((parent, kids))
        levels.append(level)
        frontier = [h.session_id for _, kids in level for h in kids]
    built: dict[str, tuple[LineageNode, ...]] = {}  # parent id -> its finished subtrees
    for level in reversed(levels):
        for parent, kids in level:
            built[parent] = tuple(LineageNode(h, built.pop(h.session_id, ())) for h in kids)
    return built.get(root, ())
