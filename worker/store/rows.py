"""Rows to results, and the SQL filter fragments shared by the store's reads.

Column lists and row mappers live together here, so a row is read in the order its
SELECT list names it in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from worker.store.protocol import EventFilter, EventSummary, SessionFilter, SessionHeader

PREVIEW_CHARS: Final = 240
# Enough of the body to fill a collapsed preview without pulling a 64 KiB body per row.
PREVIEW_SOURCE_CHARS: Final = 1000
_WS: Final = re.compile(r"\s+")

HEADER_COLS: Final = (
    "s.session_id, s.cwd, s.parent_session_id, s.availability, s.created_ms, s.updated_ms,"
    " s.last_seq, s.event_count"
)
HEADER_WIDTH: Final = 8
EVENT_COLS: Final = (
    f"e.session_id, e.seq, e.event_id, e.type, e.surface, e.time_ms,"
    f" substr(e.body, 1, {PREVIEW_SOURCE_CHARS})"
)
EVENT_WIDTH: Final = 7


def header(row: Sequence[Any]) -> SessionHeader:
    return SessionHeader(
        session_id=row[0],
        # An empty cwd is no cwd (the session sees only itself), whatever index recorded it:
        # every header is read here, so "" never becomes a workspace shared by such sessions.
        cwd=row[1] or None,
        parent_session_id=row[2],
        availability=row[3],
        created_ms=row[4],
        updated_ms=row[5],
        last_seq=int(row[6]),
        event_count=int(row[7]),
    )


def summary(row: Sequence[Any]) -> EventSummary:
    return EventSummary(
        session_id=row[0],
        seq=int(row[1]),
        event_id=row[2],
        type=row[3],
        surface=row[4],
        time_ms=int(row[5]),
        preview=preview(row[6]),
    )


def preview(body: str) -> str:
    """The start of an event's searchable text, whitespace collapsed, bounded."""
    text = _WS.sub(" ", body).strip()
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def event_filter_sql(events: EventFilter, params: dict[str, Any], *, with_seq: bool) -> str:
    sql = ""
    if events.types is not None:
        params["types"] = json_list(events.types)
        sql += " AND e.type IN (SELECT value FROM json_each(:types))"
    if events.surfaces is not None:
        params["surfaces"] = json_list(events.surfaces)
        sql += " AND e.surface IN (SELECT value FROM json_each(:surfaces))"
    if events.time_from_ms is not None:
        params["time_from"] = events.time_from_ms
        sql += " AND e.time_ms >= :time_from"
    if events.time_to_ms is not None:
        params["time_to"] = events.time_to_ms
        sql += " AND e.time_ms <= :time_to"
    if with_seq and events.seq_from is not None:
        params["seq_from"] = events.seq_from
        sql += " AND e.seq >= :seq_from"
    if with_seq and events.seq_to is not None:
        params["seq_to"] = events.seq_to
        sql += " AND e.seq <= :seq_to"
    return sql


def session_filter_sql(sessions: SessionFilter, params: dict[str, Any]) -> str:
    """Filters on the session header (``session_ids`` narrows the events instead)."""
    sql = ""
    if sessions.parent_session_ids is not None:
        clauses = []
        if sessions.parent_session_ids:
            params["parents"] = json_list(sessions.parent_session_ids)
            clauses.append("s.parent_session_id IN (SELECT value FROM json_each(:parents))")
        if sessions.include_roots:
            clauses.append("s.parent_session_id IS NULL")
        # No authorized parent and no root marker: the clause matches nothing, on purpose.
        sql += " AND (" + (" OR ".join(clauses) if clauses else "0") + ")"
    for column, key, op, value in (
        ("created_ms", "created_from", ">=", sessions.created_from_ms),
        ("created_ms", "created_to", "<=", sessions.created_to_ms),
        ("updated_ms", "updated_from", ">=", sessions.updated_from_ms),
        ("updated_ms", "updated_to", "<=", sessions.updated_to_ms),
    ):
        if value is not None:
            params[key] = value
            sql += f" AND s.{column} {op} :{key}"
    if sessions.availability is not None:
        params["availability"] = json_list(sessions.availability)
        sql += " AND s.availability IN (SELECT value FROM json_each(:availability))"
    return sql


def json_list(values: Iterable[object]) -> str:
    return orjson.dumps(list(values)).decode("utf-8")
