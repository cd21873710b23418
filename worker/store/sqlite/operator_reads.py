"""The operator's reads (``worker.store.operator``), each a function of one read transaction."""

from __future__ import annotations

from functools import partial
from typing import Any, Final

from worker.signals import ExecutionSignal
from worker.store import results
from worker.store.database import Columns
from worker.store.operator import (
    DeadLetter,
    EventChunk,
    EventText,
    SessionListFilter,
    SessionListPage,
    SessionRow,
    SessionSort,
    TimelineEvent,
    TimelinePage,
    WorkspaceSummary,
)
from worker.store.protocol import ServiceLimits, SessionHeader
from worker.store.search.query import compile_query
from worker.store.search.readable import best_match, matches, part_bounds, part_of, readable
from worker.store.sql import HEADER_COLS
from worker.store.sqlite.pool import ReaderPool, Tx

WORKSPACES: Final = (
    "SELECT cwd AS cwd, count(*) AS sessions, sum(event_count) AS events,"
    " max(updated_ms) AS updated_ms FROM sessions GROUP BY cwd ORDER BY 4 DESC, 1"
)
# The sort keys a page may ask for, by name only (never SQL text from the request).
_SORT: Final[dict[str, str]] = {
    "updated": "s.updated_ms",
    "created": "s.created_ms",
    "events": "s.event_count",
    "title": "shown_title",
}
# The title a session is shown by: its own, else its first prompt (``first_prompt``, a
# function each reader connection defines), so the title filter and sort see what a
# person reads.
SHOWN_TITLE: Final = "coalesce(nullif(trim(coalesce(s.title, '')), ''), first_prompt(s.prompts))"
_ROW_COLS: Final = (
    f"{HEADER_COLS}, s.title AS title, {SHOWN_TITLE} AS shown_title,"
    " (SELECT json_extract(event_json(e.doc), '$.payload.source') FROM events e"
    "  WHERE e.session_id = s.session_id AND e.type = 'session/start'"
    "  ORDER BY e.seq LIMIT 1) AS source,"
    " (SELECT count(*) FROM sessions c WHERE c.parent_session_id = s.session_id"
    "  AND c.cwd IS s.cwd) AS children"
)
HEADER: Final = f"SELECT {HEADER_COLS} FROM sessions s WHERE s.session_id = ?"
TIMELINE: Final = (
    "SELECT e.seq AS seq, e.event_id AS event_id, e.type AS type, e.surface AS surface,"
    " e.time_ms AS time_ms, event_json(e.doc) AS raw_json"
    " FROM events e WHERE e.session_id = ? AND e.seq >= ? ORDER BY e.seq LIMIT ?"
)
REPLACED_BY: Final = (
    "SELECT replaced_seq AS replaced_seq, seq AS seq FROM replacements"
    " WHERE session_id = ? AND replaced_seq BETWEEN ? AND ? ORDER BY seq"
)
CHUNK: Final = (
    "SELECT length(event_json(doc)) AS size, substr(event_json(doc), ?, ?) AS text FROM events"
    " WHERE session_id = ? AND seq = ?"
)
RAW: Final = "SELECT event_json(doc) AS raw_json FROM events WHERE session_id = ? AND seq = ?"
DEAD_LETTERS: Final = (
    "SELECT stream_seq AS stream_seq, kind AS kind, reason AS reason FROM deadletters"
    " ORDER BY stream_seq DESC LIMIT ?"
)


def workspaces(tx: Tx) -> tuple[WorkspaceSummary, ...]:
    found, at = tx.read(WORKSPACES)
    return tuple(
        WorkspaceSummary(
            cwd=row[at["cwd"]],
            sessions=int(row[at["sessions"]]),
            events=int(row[at["events"]] or 0),
            updated_ms=row[at["updated_ms"]],
        )
        for row in found
    )


def _where(cwd: str | None, filters: SessionListFilter) -> tuple[str, list[Any]]:
    """The WHERE clause: the workspace first (exact, ``IS`` so a missing cwd is a
    workspace of its own), then the filters ANDed, every value a parameter."""
    clauses, params = ["s.cwd IS ?"], [cwd]

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        params.extend(values)

    if filters.availability is not None:
        add(f"s.availability IN ({', '.join('?' * len(filters.availability))})")
        params.extend(filters.availability)
    for column, low, high in (
        ("s.created_ms", filters.created_from_ms, filters.created_to_ms),
        ("s.updated_ms", filters.updated_from_ms, filters.updated_to_ms),
    ):
        if low is not None:
            add(f"{column} >= ?", low)
        if high is not None:
            add(f"{column} <= ?", high)
    parents = filters.parent_session_ids
    if parents or filters.roots_only:
        ors = ["s.parent_session_id IS NULL"] if filters.roots_only else []
        if parents:
            ors.append(f"s.parent_session_id IN ({', '.join('?' * len(parents))})")
            params.extend(parents)
        clauses.append("(" + " OR ".join(ors) + ")")
    if filters.title_contains:
        add(f"instr(lower(coalesce({SHOWN_TITLE}, '')), lower(?)) > 0", filters.title_contains)
    return " AND ".join(clauses), params


def _titled(title: object) -> bool:
    return isinstance(title, str) and bool(title.strip())


def list_sessions(
    tx: Tx,
    cwd: str | None,
    filters: SessionListFilter,
    sort: SessionSort,
    descending: bool,
    offset: int,
    limit: int,
) -> SessionListPage:
    where, params = _where(cwd, filters)
    counted, at = tx.read(f"SELECT count(*) AS total FROM sessions s WHERE {where}", params)
    total = counted[0][at["total"]]
    direction = "DESC" if descending else "ASC"
    found, at = tx.read(
        f"SELECT {_ROW_COLS} FROM sessions s WHERE {where}"
        f" ORDER BY {_SORT[sort]} {direction} NULLS LAST, s.session_id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    page = tuple(
        SessionRow(
            header=results.header(row, at),
            title=row[at["title"]],
            first_prompt=None if _titled(row[at["title"]]) else row[at["shown_title"]],
            source=row[at["source"]] if isinstance(row[at["source"]], str) else None,
            children=int(row[at["children"]]),
        )
        for row in found
    )
    return SessionListPage(page, int(total), offset)


def timeline(tx: Tx, session_id: str, from_seq: int, limit: int, cut: int) -> TimelinePage | None:
    found, at = tx.read(HEADER, (session_id,))
    if not found:
        return None
    header = results.header(found[0], at)
    # One more than the page: whether there is a next one.
    events, ev = tx.read(TIMELINE, (session_id, from_seq, limit + 1))
    more = len(events) > limit
    events = events[:limit]
    replaced: dict[int, list[int]] = {}
    if events:
        low, high = events[0][ev["seq"]], events[-1][ev["seq"]]
        pairs, pa = tx.read(REPLACED_BY, (session_id, low, high))
        for pair in pairs:
            replaced.setdefault(int(pair[pa["replaced_seq"]]), []).append(int(pair[pa["seq"]]))
    page = tuple(_timeline_event(session_id, row, ev, cut, replaced) for row in events)
    next_seq = page[-1].seq + 1 if more and page else None
    return TimelinePage(header, page, next_seq)


def _timeline_event(
    session_id: str, row: results.Row, at: Columns, cut: int, replaced: dict[int, list[int]]
) -> TimelineEvent:
    raw: str = row[at["raw_json"]]
    _, tool, text = readable(raw)
    seq = int(row[at["seq"]])
    return TimelineEvent(
        session_id=session_id,
        seq=seq,
        event_id=row[at["event_id"]],
        type=row[at["type"]],
        surface=row[at["surface"]],
        time_ms=int(row[at["time_ms"]]),
        size=len(raw),
        head=raw[:cut],
        replaced_by=tuple(replaced.get(seq, ())),
        text=text[:cut],
        text_size=len(text),
        tool=tool,
    )


def event_raw(tx: Tx, session_id: str, seq: int) -> tuple[SessionHeader | None, str | None]:
    """The session's header (None: no session) and the event's raw JSON (None: no event)."""
    found, at = tx.read(HEADER, (session_id,))
    if not found:
        return None, None
    raw, by = tx.read(RAW, (session_id, seq))
    return results.header(found[0], at), (str(raw[0][by["raw_json"]]) if raw else None)


def event_text(
    tx: Tx, session_id: str, seq: int, query: str | None, offset: int | None, size: int
) -> EventText | None:
    header, raw = event_raw(tx, session_id, seq)
    if header is None:
        return None
    if raw is None:
        return EventText(header, seq, found=False)
    kind, tool, text = readable(raw)
    found = matches(query, text) if query else []
    first = best_match(query, text) if query and found else None
    # The part holding ``offset``: parts never start where the caller says but where the
    # text's parts of ``size`` do, so every link to one lands on the same boundaries.
    at = offset if offset is not None else first if first is not None else 0
    start, end = part_bounds(text, part_of(text, at, size), size)
    inside = tuple(
        (max(s, start) - start, min(e, end) - start) for s, e in found if e > start and s < end
    )
    return EventText(
        header, seq, True, kind, tool, len(text), start, text[start:end], inside, first
    )


def event_chunk(tx: Tx, session_id: str, seq: int, offset: int, size: int) -> EventChunk | None:
    found, at = tx.read(HEADER, (session_id,))
    if not found:
        return None
    header = results.header(found[0], at)
    chunk, ch = tx.read(CHUNK, (offset + 1, size, session_id, seq))  # substr is 1-based
    if not chunk:
        return EventChunk(header, seq, 0, offset, "", found=False)
    row = chunk[0]
    return EventChunk(header, seq, int(row[ch["size"]]), offset, row[ch["text"]], found=True)


def dead_letters(tx: Tx, limit: int) -> tuple[DeadLetter, ...]:
    found, at = tx.read(DEAD_LETTERS, (limit,))
    return tuple(
        DeadLetter(int(r[at["stream_seq"]]), str(r[at["kind"]]), str(r[at["reason"]]))
        for r in found
    )


class SqliteOperatorReads:
    """``OperatorReads`` over one SQLite index file: ``SqliteSessionStore``'s operator
    methods, each choosing where its read runs and handing the pool one of the reads above
    (the function of the method's name: in a method's body a bare name is the module's)."""

    _pool: ReaderPool
    _limits: ServiceLimits

    async def workspaces(self, *, signal: ExecutionSignal) -> tuple[WorkspaceSummary, ...]:
        # Grows with the number of sessions: on a reader.
        return await self._pool.run_on_reader(signal, workspaces)

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
        work = partial(
            list_sessions,
            cwd=cwd,
            filters=filters,
            sort=sort,
            descending=descending,
            offset=max(0, offset),
            limit=self._page_size(limit),
        )
        return await self._pool.run_on_reader(signal, work)

    async def timeline(
        self, session_id: str, *, from_seq: int, limit: int, cut: int, signal: ExecutionSignal
    ) -> TimelinePage | None:
        work = partial(
            timeline,
            session_id=session_id,
            from_seq=from_seq,
            limit=self._page_size(limit),
            cut=max(1, cut),
        )
        # A page may hold long bodies (SQLite reads a value whole to cut it): on a reader.
        return await self._pool.run_on_reader(signal, work)

    async def event_chunk(
        self, session_id: str, seq: int, *, offset: int, size: int, signal: ExecutionSignal
    ) -> EventChunk | None:
        work = partial(
            event_chunk,
            session_id=session_id,
            seq=seq,
            offset=max(0, offset),
            size=max(1, size),
        )
        return self._pool.run_inline(signal, work)

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
        if query:
            compile_query(query)  # InvalidQuery before any read
        work = partial(
            event_text,
            session_id=session_id,
            seq=seq,
            query=query,
            offset=None if offset is None else max(0, offset),
            size=max(1, size),
        )
        # The whole event is parsed and scanned for matches: on a reader, off the loop.
        return await self._pool.run_on_reader(signal, work)

    async def dead_letters(self, *, limit: int, signal: ExecutionSignal) -> tuple[DeadLetter, ...]:
        work = partial(dead_letters, limit=self._page_size(limit))
        return self._pool.run_inline(signal, work, one_statement=True)

    def _page_size(self, page_size: int) -> int:
        return max(1, min(page_size, self._limits.max_page_size))
