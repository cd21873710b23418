"""The two searches as functions of one read transaction: the snapshot and cursor around a
page of ``search_ops`` (which ranks and filters), and the page's result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from worker.store.files import schema
from worker.store.protocol import (
    EventFilter,
    EventSearchPage,
    Generation,
    SessionFilter,
    SessionSearchPage,
)

# A module import, not its names: search_ops imports this package (through
# worker.store.rows), so either may be imported first.
from worker.store.search import event_search, search_ops
from worker.store.search.hybrid import SemanticQuery
from worker.store.search.query import QueryPlan
from worker.store.search.search_reader import SearchIndexReader
from worker.store.sqlite import cursors, reads, rows, sql
from worker.store.sqlite.pool import Tx


@dataclass(frozen=True, slots=True)
class Paging:
    """What a search's page is bound to: its cursor, the binding it must carry, its size."""

    cursor: str | None
    binding: str
    size: int


def sessions_page(
    tx: Tx,
    index: Callable[[], SearchIndexReader],
    plan: QueryPlan,
    paging: Paging,
    *,
    cwd: str,
    sessions: SessionFilter,
    events: EventFilter,
    semantic: SemanticQuery | None = None,
) -> SessionSearchPage:
    start = _start(tx, paging)
    search = search_ops.SessionSearch(
        tx.fetch,
        index().view(),
        plan,
        cwd=cwd,
        ws=schema.workspace_token(cwd),
        sessions=sessions,
        events=events,
        snapshot_seq=start.generation.seq,
        semantic=semantic,
    )
    found = search.page(start.offset, paging.size, start.partial)
    return SessionSearchPage(
        hits=tuple(found.hits),
        next_cursor=_next_cursor(start, paging, more=found.more, partial=found.ranked_partial),
        generation=start.generation,
        filtered_out=found.filtered_out,
        partial=found.partial,
        unmatched=found.unmatched,
    )


def events_page(
    tx: Tx,
    index: Callable[[], SearchIndexReader],
    plan: QueryPlan,
    paging: Paging,
    *,
    session_id: str,
    events: EventFilter,
    scope_to_seq: int | None,
    semantic: SemanticQuery | None = None,
) -> EventSearchPage | None:
    found, at = tx.read(sql.HEADER_AND_WORKSPACE, (session_id,))
    if not found:
        return None
    header = rows.header(found[0], at)
    start = _start(tx, paging)
    search = event_search.EventSearch(
        tx.fetch,
        index().view(),
        plan,
        session_id=session_id,
        ws=found[0][at["ws"]],
        events=events,
        snapshot_seq=start.generation.seq,
        scope_to_seq=scope_to_seq,
        semantic=semantic,
    )
    page = search.page(start.offset, paging.size, start.partial)
    return EventSearchPage(
        header=header,
        hits=tuple(page.hits),
        next_cursor=_next_cursor(start, paging, more=page.more, partial=page.ranked_partial),
        generation=start.generation,
        filtered_out=page.filtered_out,
        partial=page.partial,
        unmatched=page.unmatched,
    )


@dataclass(frozen=True, slots=True)
class _Start:
    """Where a page starts: the snapshot it reads (the current epoch, and the first page's
    seq), its offset, and the first page's search mode (None on a first page)."""

    generation: Generation
    offset: int
    partial: bool | None


def _start(tx: Tx, paging: Paging) -> _Start:
    current = reads.generation(tx)
    start = cursors.resume(paging.cursor, paging.binding, current)
    if start is None:
        return _Start(current, 0, None)
    return _Start(Generation(current.epoch, start.snapshot_seq), start.offset, start.partial)


def _next_cursor(start: _Start, paging: Paging, *, more: bool, partial: bool) -> str | None:
    if not more:
        return None
    offset = start.offset + paging.size
    return cursors.encode(start.generation, offset, paging.binding, partial=partial)
