"""``SqliteSessionStore``: the ``SessionQueryService`` over one SQLite index file.

Every operation runs as ONE read transaction (or one SELECT, which reads one snapshot),
returning the session header read in that same transaction with every payload. Each method
chooses where its transaction runs (``ReaderPool.run_inline`` for bounded key lookups,
``run_on_reader`` for reads whose cost grows with the corpus) and hands the pool a function
of ``reads`` or ``search``. The operator's reads are ``operator_reads.SqliteOperatorReads``,
which this class extends; the files its searches read, ``search_files.SearchFiles``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Final

from contracts.partitions import PartitionScope
from worker.signals import ExecutionSignal
from worker.store.protocol import (
    CompiledQuery,
    EventFilter,
    EventRelations,
    EventSearchPage,
    EventWindow,
    Generation,
    Lineage,
    ServiceLimits,
    SessionFilter,
    SessionSearchPage,
    TitleObservation,
)
from worker.store.search.semantic.model import SemanticModel
from worker.store.sqlite import cursors, reads, search
from worker.store.sqlite.lineage import Truncated
from worker.store.sqlite.operator_reads import SqliteOperatorReads
from worker.store.sqlite.pool import ReaderPool
from worker.store.sqlite.search_files import SearchFiles

# Another process may commit (no in-process notification), so waiting also polls.
WAIT_POLL_S: Final = 0.05
# Chain or tree rows a lineage walks on the event loop's thread before it is read again on
# a reader thread (a hop measured ~0.1 ms of a ~0.3 ms session_trace).
LOOP_LINEAGE_ROWS: Final = 64


class SqliteSessionStore(SqliteOperatorReads):
    """``SessionQueryService`` and ``OperatorReads`` over one SQLite index file. Safe for
    concurrent use."""

    def __init__(self, *, pool: ReaderPool, limits: ServiceLimits, location: str) -> None:
        self._pool = pool
        self._readers = pool.readers
        # read_titles runs on the loop's thread (run_inline): one observation for all ids.
        self._limits = replace(limits, title_read_workers=1)
        self._location = location
        self._search = SearchFiles(location)
        self._loop = asyncio.get_running_loop()
        self._committed = asyncio.Event()
        self._reopening = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        readers: int = 4,
        limits: ServiceLimits = ServiceLimits(),  # noqa: B008 - frozen, shared safely
    ) -> SqliteSessionStore:
        pool = await ReaderPool.open(str(path), readers)
        return cls(pool=pool, limits=limits, location=str(path))

    async def close(self) -> None:
        """Close every reader once it is back in the pool (running reads finish first)."""
        await self._pool.close()

    async def reopen(self) -> None:
        """Read the file now at this store's path from the next request on: a rebuild put a
        new one in its place (``worker.replica.rebuild``). A request holds the readers of the
        file it began on (its pool and search index are taken when it starts), and those
        close once the requests on them are done."""
        async with self._reopening:
            pool = await ReaderPool.open(self._location, len(self._pool.readers))
            old, self._pool, self._readers = self._pool, pool, pool.readers
            self._search = self._search.reopened()
            self._wake()  # a wait for a sequence may be answered by the new file
            with contextlib.suppress(Exception):
                await old.close()

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

    # -- reads by key (on the loop's thread) -------------------------------------------

    async def generation(self, *, signal: ExecutionSignal) -> Generation:
        return self._pool.run_inline(signal, reads.generation, one_statement=True)

    async def latest_seq_of_type(
        self, session_id: str, event_type: str, *, signal: ExecutionSignal
    ) -> int | None:
        work = partial(reads.latest_seq_of_type, session_id=session_id, event_type=event_type)
        return self._pool.run_inline(signal, work, one_statement=True)

    async def read_titles(
        self, session_ids: Sequence[str], *, signal: ExecutionSignal
    ) -> Mapping[str, TitleObservation]:
        work = partial(reads.titles, ids=list(dict.fromkeys(session_ids)))
        return self._pool.run_inline(signal, work, one_statement=True)

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
        work = partial(
            reads.event_window,
            session_id=session_id,
            seq=seq,
            before=max(0, min(before, cap)),
            after=max(0, min(after, cap)),
        )
        return self._pool.run_inline(signal, work, one_statement=True)

    async def event_relations(
        self, session_id: str, seq: int, *, signal: ExecutionSignal
    ) -> EventRelations | None:
        work = partial(reads.event_relations, session_id=session_id, seq=seq)
        return self._pool.run_inline(signal, work)

    async def lineage(self, session_id: str, *, signal: ExecutionSignal) -> Lineage | None:
        """Ancestors and descendant trees. A lineage of up to ``LOOP_LINEAGE_ROWS`` chain
        and tree rows (nearly all) is read on the loop's thread like a key lookup; the walk
        is capped there, and one that reaches the cap is read again whole on a reader."""
        pool = self._pool  # both reads of one file, even across a reopen
        work = partial(reads.lineage, session_id=session_id, cap=LOOP_LINEAGE_ROWS)
        found = pool.run_inline(signal, work, one_statement=True)
        if isinstance(found, Truncated):
            work = partial(reads.lineage, session_id=session_id, cap=-1)  # -1: no LIMIT
            found = await pool.run_on_reader(signal, work)
        assert not isinstance(found, Truncated)
        return found

    # -- waiting for the writer --------------------------------------------------------

    async def wait_for_seq(
        self,
        session_id: str,
        seq: int,
        *,
        signal: ExecutionSignal,
        scope: PartitionScope | None = None,
    ) -> None:
        """Until the store holds ``session_id`` through ``seq``, and the search index has
        taken that event too (read-your-writes covers searches). A session outside
        ``scope`` is never held (see the protocol)."""
        work = partial(reads.seq_held, session_id=session_id, seq=seq, scope=scope)
        while True:
            signal.raise_if_aborted()
            # Taken before the read, so a commit between the read and the wait still wakes.
            committed = self._committed
            event_id = self._pool.run_inline(signal, work, one_statement=True)
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
        reader = self._search.reader()
        return None if reader is None else reader.refresh().stream_seq

    def _search_has(self, event_id: int) -> bool:
        reader = self._search.reader()
        return reader is not None and reader.refresh().event_id >= event_id

    # -- search (on a reader) ----------------------------------------------------------

    def attach_semantic(self, embedder: SemanticModel) -> None:
        """Hybrid search from now on (issue 21): ``SearchFiles.attach_semantic``."""
        self._search.attach_semantic(embedder)

    def warm_semantic(self) -> int:
        """Load every workspace's vectors into memory (blocking; run it on a thread)."""
        return self._search.warm_semantic()

    async def search_sessions(
        self,
        query: CompiledQuery,
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
        text, plan = query.text, query.plan
        binding = cursors.binding("sessions", text, cwd, sessions, events)
        paging = search.Paging(cursor, binding, self._page_size(page_size))
        work = partial(
            search.sessions_page,
            index=self._search.latest,  # this file's, even across a reopen
            plan=plan,
            paging=paging,
            cwd=cwd,
            sessions=sessions,
            events=events,
            semantic=self._search.semantic_query(text, plan),
        )
        return await self._pool.run_on_reader(signal, work)

    async def search_events(
        self,
        query: CompiledQuery,
        *,
        session_id: str,
        events: EventFilter,
        cursor: str | None,
        page_size: int,
        signal: ExecutionSignal,
        scope_to_seq: int | None = None,
    ) -> EventSearchPage | None:
        signal.raise_if_aborted()
        text, plan = query.text, query.plan
        scope = session_id if scope_to_seq is None else f"{session_id}:{scope_to_seq}"
        binding = cursors.binding("events", text, scope, None, events)
        paging = search.Paging(cursor, binding, self._page_size(page_size))
        work = partial(
            search.events_page,
            index=self._search.latest,  # this file's, even across a reopen
            plan=plan,
            paging=paging,
            session_id=session_id,
            events=events,
            scope_to_seq=scope_to_seq,
            semantic=self._search.semantic_query(text, plan),
        )
        return await self._pool.run_on_reader(signal, work)
