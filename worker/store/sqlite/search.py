"""The two searches as functions of one read transaction: the seq read as of and cursor around a
page of ``search_ops`` (which ranks and filters), the times the query names, and the
page's result.

A time the query names ("in January 2024", "last week"; ``worker.store.search.time_words``) is
favoured unless the request filters by time itself. A relative one ("yesterday", or a
month without its year) counts from the newest event of the caller's workspace in the
seq the page reads as of: the envelope carries no time of its own, and the clock of the replica
answering would make the reply differ between replicas and between a page and the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from worker.store import results, sql
from worker.store.files import schema
from worker.store.protocol import (
    EventFilter,
    EventSearchPage,
    Generation,
    SessionFilter,
    SessionSearchPage,
)
from worker.store.search import event_search, search_ops, time_words
from worker.store.search.hybrid import SemanticQuery
from worker.store.search.query import QueryPlan
from worker.store.search.search_reader import SearchIndexReader
from worker.store.sqlite import cursors, reads
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
    ws = schema.workspace_token(cwd)
    timed = _timed(events) or any(
        bound is not None
        for bound in (
            sessions.created_from_ms,
            sessions.created_to_ms,
            sessions.updated_from_ms,
            sessions.updated_to_ms,
        )
    )
    times = _times(tx, plan, ws, start.generation.seq, filtered=timed)
    search = search_ops.SessionSearchRun(
        tx.read,
        index().view(),
        plan,
        codec=tx.codec,
        cwd=cwd,
        ws=ws,
        sessions=sessions,
        events=events,
        as_of_seq=start.generation.seq,
        semantic=semantic,
        favour=times.favour,
    )
    found = search.page(start.offset, paging.size, start.partial)
    return SessionSearchPage(
        hits=tuple(found.hits),
        next_cursor=_next_cursor(start, paging, more=found.more, partial=found.ranked_partial),
        generation=start.generation,
        filtered_out=found.filtered_out,
        partial=found.partial,
        unmatched=found.unmatched,
        time_readings=times.readings if start.offset == 0 else (),
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
    header = results.header(found[0], at)
    start = _start(tx, paging)
    times = _times(tx, plan, found[0][at["ws"]], start.generation.seq, filtered=_timed(events))
    search = event_search.EventSearchRun(
        tx.read,
        index().view(),
        plan,
        codec=tx.codec,
        session_id=session_id,
        ws=found[0][at["ws"]],
        events=events,
        as_of_seq=start.generation.seq,
        scope_to_seq=scope_to_seq,
        semantic=semantic,
        favour=times.favour,
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
        time_readings=times.readings if start.offset == 0 else (),
    )


@dataclass(frozen=True, slots=True)
class _Times:
    """The query's times as read (for the reply) and the ranges the ranking favours."""

    readings: tuple[str, ...] = ()
    favour: tuple[time_words.TimeRange, ...] = ()


# The newest event of a workspace as of a seq: what relative times count from. Per session
# of the workspace (its events by the session index): as a join, SQLite drove it from
# ``events`` and walked every event of the archive (290 ms at 1M events, 8 ms so).
_NEWEST_EVENT_MS = (
    "SELECT max((SELECT max(e.time_ms) FROM events e"
    " WHERE e.session_id = s.session_id AND e.stream_seq <= ?2))"
    " FROM sessions s WHERE s.ws = ?1"
)


def _timed(events: EventFilter) -> bool:
    return events.time_from_ms is not None or events.time_to_ms is not None


def _times(tx: Tx, plan: QueryPlan, ws: str, as_of_seq: int, *, filtered: bool) -> _Times:
    """How the query's times read, and what to favour: nothing when the request gives its
    own time filter (``filtered``)."""
    if not plan.times:
        return _Times()
    reference: int | None = None
    if any(t.needs_reference for t in plan.times):
        newest, _ = tx.read(_NEWEST_EVENT_MS, (ws, as_of_seq))
        reference = newest[0][0] if newest else None
    read = [r for t in plan.times if (r := time_words.resolve(t, reference)) is not None]
    if filtered:  # the model's own filter decides; the reading is still said
        return _Times(tuple(f"{r.describe()}; the time filter given decides" for r in read))
    return _Times(tuple(r.describe() for r in read), tuple(r.span for r in read))


@dataclass(frozen=True, slots=True)
class _Start:
    """Where a page starts: what it reads as of (the current epoch, and the first page's
    seq), its offset, and the first page's search mode (None on a first page)."""

    generation: Generation
    offset: int
    partial: bool | None


def _start(tx: Tx, paging: Paging) -> _Start:
    current = reads.generation(tx)
    start = cursors.resume(paging.cursor, paging.binding, current)
    if start is None:
        return _Start(current, 0, None)
    return _Start(Generation(current.epoch, start.as_of_seq), start.offset, start.partial)


def _next_cursor(start: _Start, paging: Paging, *, more: bool, partial: bool) -> str | None:
    if not more:
        return None
    offset = start.offset + paging.size
    return cursors.encode(start.generation, offset, paging.binding, partial=partial)
