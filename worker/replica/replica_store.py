"""The store the tools and the operator reads hold: the replica's current index file.

A rebuild swaps the file under running requests. ``ReplicaStore`` is the seam: it
implements ``SessionQueryService`` and ``OperatorReads`` method by method (so ``mypy
--strict`` checks the protocol where the tools receive it) and forwards each call to the
``SqliteSessionStore`` of the file being served now. ``swap`` replaces it under a lock and
closes the old one, which waits for the reads still running on it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

from contracts.partitions import PartitionScope
from worker.signals import ExecutionSignal
from worker.store.operator import (
    DeadLetter,
    EventChunk,
    EventText,
    SessionListFilter,
    SessionListPage,
    SessionSort,
    TimelinePage,
    WorkspaceSummary,
)
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
from worker.store.sqlite import SqliteSessionStore


class ReplicaStore:
    """``SessionQueryService`` and ``OperatorReads`` over whichever file is served now."""

    def __init__(self, store: SqliteSessionStore) -> None:
        self.current = store
        self._swapping = asyncio.Lock()

    async def swap(self, store: SqliteSessionStore) -> None:
        """Serve ``store`` from now on; the old one closes once its reads are done."""
        async with self._swapping:
            old, self.current = self.current, store
            with contextlib.suppress(Exception):
                await old.close()

    async def close(self) -> None:
        await self.current.close()

    # -- what the replica tells the current file -----------------------------------------

    def notify_commit(self) -> None:
        self.current.notify_commit()

    def search_indexed_through(self) -> int | None:
        return self.current.search_indexed_through()

    def warm_semantic(self) -> int:
        return self.current.warm_semantic()

    # -- SessionQueryService ------------------------------------------------------------

    @property
    def limits(self) -> ServiceLimits:
        return self.current.limits

    async def generation(self, *, signal: ExecutionSignal) -> Generation:
        return await self.current.generation(signal=signal)

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
        return await self.current.search_sessions(
            query,
            cwd=cwd,
            sessions=sessions,
            events=events,
            cursor=cursor,
            page_size=page_size,
            signal=signal,
        )

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
        return await self.current.search_events(
            query,
            session_id=session_id,
            events=events,
            cursor=cursor,
            page_size=page_size,
            signal=signal,
            scope_to_seq=scope_to_seq,
        )

    async def latest_seq_of_type(
        self, session_id: str, event_type: str, *, signal: ExecutionSignal
    ) -> int | None:
        return await self.current.latest_seq_of_type(session_id, event_type, signal=signal)

    async def lineage(self, session_id: str, *, signal: ExecutionSignal) -> Lineage | None:
        return await self.current.lineage(session_id, signal=signal)

    async def event_relations(
        self, session_id: str, seq: int, *, signal: ExecutionSignal
    ) -> EventRelations | None:
        return await self.current.event_relations(session_id, seq, signal=signal)

    async def read_event(
        self, session_id: str, seq: int, *, before: int, after: int, signal: ExecutionSignal
    ) -> EventWindow | None:
        return await self.current.read_event(
            session_id, seq, before=before, after=after, signal=signal
        )

    async def read_titles(
        self, session_ids: Sequence[str], *, signal: ExecutionSignal
    ) -> Mapping[str, TitleObservation]:
        return await self.current.read_titles(session_ids, signal=signal)

    async def wait_for_seq(
        self,
        session_id: str,
        seq: int,
        *,
        signal: ExecutionSignal,
        scope: PartitionScope | None = None,
    ) -> None:
        await self.current.wait_for_seq(session_id, seq, signal=signal, scope=scope)

    # -- OperatorReads --------------------------------------------------------------------

    async def workspaces(self, *, signal: ExecutionSignal) -> tuple[WorkspaceSummary, ...]:
        return await self.current.workspaces(signal=signal)

    async def list_sessions(
        self,
        cwd: str | None,
        *,
        filters: SessionListFilter,
        sort: SessionSort,
        descending: bool,
        offset: int,
        limit: int,
        signal: ExecutionSignal,
    ) -> SessionListPage:
        return await self.current.list_sessions(
            cwd,
            filters=filters,
            sort=sort,
            descending=descending,
            offset=offset,
            limit=limit,
            signal=signal,
        )

    async def timeline(
        self, session_id: str, *, from_seq: int, limit: int, cut: int, signal: ExecutionSignal
    ) -> TimelinePage | None:
        return await self.current.timeline(
            session_id, from_seq=from_seq, limit=limit, cut=cut, signal=signal
        )

    async def event_chunk(
        self, session_id: str, seq: int, *, offset: int, size: int, signal: ExecutionSignal
    ) -> EventChunk | None:
        return await self.current.event_chunk(
            session_id, seq, offset=offset, size=size, signal=signal
        )

    async def event_text(
        self,
        session_id: str,
        seq: int,
        *,
        query: str | None,
        offset: int | None,
        size: int,
        signal: ExecutionSignal,
    ) -> EventText | None:
        return await self.current.event_text(
            session_id, seq, query=query, offset=offset, size=size, signal=signal
        )

    async def dead_letters(self, *, limit: int, signal: ExecutionSignal) -> tuple[DeadLetter, ...]:
        return await self.current.dead_letters(limit=limit, signal=signal)
