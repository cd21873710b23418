"""The SQL text of the store's reads, and the one builder of their filter clauses.

Every column a result is read by carries an ``AS`` name (SQLite leaves a result column's
name unspecified without one), and every reader, the search (``search_ops``, through
``worker.store.results``) included, reads rows by those names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import orjson

# A preview's source (``events.preview_key`` is its digest): defined beside the digest.
from worker.store.event_codec import PREVIEW_SOURCE_BYTES as PREVIEW_SOURCE_BYTES
from worker.store.event_codec import PREVIEW_SOURCE_CHARS as PREVIEW_SOURCE_CHARS
from worker.store.protocol import EventFilter, SessionFilter
from worker.store.tables import EVENT_NAMES, HEADER_NAMES, TYPE_INDEXES

HEADER_COLS: Final = ", ".join(f"s.{name} AS {name}" for name in HEADER_NAMES)
# (name, expression), in EVENT_NAMES order.
_EVENT_COLUMNS: Final = tuple(
    zip(
        EVENT_NAMES,
        (
            "e.session_id",
            "e.seq",
            "e.event_id",
            "e.type",
            "e.surface",
            "e.time_ms",
            f"substr(event_text(e.doc, e.type, {PREVIEW_SOURCE_BYTES}), 1, {PREVIEW_SOURCE_CHARS})",
        ),
        strict=True,
    )
)
EVENT_COLS: Final = ", ".join(f"{expr} AS {name}" for name, expr in _EVENT_COLUMNS)
# The same but the preview, and the row's ``doc`` in its place, decoded in Python by the
# connection's codec (``results.WINDOW_NAMES``): one call a row instead of SQL function
# calls per column, the text passed through SQLite.
DOC_COLS: Final = ", ".join(
    [*(f"{expr} AS {name}" for name, expr in _EVENT_COLUMNS[:-1]), "e.doc AS doc"]
)

GENERATION: Final = (
    "SELECT (SELECT value FROM meta WHERE key = 'epoch') AS epoch,"
    " (SELECT value FROM meta WHERE key = 'stream_seq') AS seq"
)

# By type: a type with an index of its own is named in the statement (a partial index is
# used for a literal, never for a parameter); None: any other type, a parameter.
LATEST_SEQ_OF_TYPE: Final[dict[str | None, str]] = {
    **{
        kind: f"SELECT max(seq) AS seq FROM events WHERE session_id = ? AND type = '{kind}'"
        for kind in TYPE_INDEXES
    },
    None: "SELECT max(seq) AS seq FROM events WHERE session_id = ? AND type = ?",
}

# A session without a title: the text of its first few message/user events (a JSON array,
# kept by the writer), from which the tools derive one.
_TITLE_COLS: Final = (
    f"{HEADER_COLS}, s.title AS title,"
    " CASE WHEN trim(coalesce(s.title, '')) = '' THEN s.prompts END AS prompts"
)
TITLES_BY_JSON: Final = (
    f"SELECT {_TITLE_COLS} FROM sessions s WHERE s.session_id IN (SELECT value FROM json_each(?))"
)
# A few ids (a direct tool's caller and target): plain key lookups, about half the cost of
# json_each for one id.
TITLES_BY_KEYS: Final = tuple(
    f"SELECT {_TITLE_COLS} FROM sessions s WHERE s.session_id "
    + ("= ?" if n == 1 else "IN (" + ", ".join("?" * n) + ")")
    for n in range(1, 9)
)

# The header (with the title) and the window in ONE statement (one consistent
# read, no BEGIN/COMMIT): a row per event, the header repeated; one row of NULL events when none.
# The event's ``doc`` is decoded in Python (``reads.event_window``): its JSON and preview
# from one call instead of two SQL function calls a row.
EVENT_WINDOW: Final = (
    f"SELECT {_TITLE_COLS}, {DOC_COLS} FROM sessions s"
    " LEFT JOIN events e"
    " ON e.session_id = s.session_id AND e.seq BETWEEN ? AND ?"
    " WHERE s.session_id = ? ORDER BY e.seq"
)

# Whether the session holds ``seq`` (its header says so), and that event's row id.
SEQ_HELD: Final = (
    "SELECT s.last_seq >= :seq AS held, s.cwd AS cwd, (SELECT id FROM events"
    " WHERE session_id = :sid AND seq = :seq) AS event_id FROM sessions s"
    " WHERE s.session_id = :sid"
)

# UNION (not UNION ALL) discards a session already reached, so a cycle ends; the order is
# restored by following parent ids from the target. Both walks in ONE statement (one
# consistent read, no BEGIN/COMMIT); kind 0 rows are the chain (in no particular order), kind 1
# rows the tree in creation order. ``:cap`` -1 is no LIMIT. Each row carries its session's
# title: the trace shows them without reading them again.
LINEAGE: Final = f"""
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
    SELECT 0 AS kind, chain.sid AS sid, {_TITLE_COLS}
    FROM chain LEFT JOIN sessions s ON s.session_id = chain.sid
    UNION ALL
    SELECT 1, tree.sid, {_TITLE_COLS}
    FROM tree JOIN sessions s ON s.session_id = tree.sid
    ORDER BY kind, created_ms, session_id
    """

# The header (with the title) and the event itself (LEFT JOIN: the event may be missing).
HEADER_AND_EVENT: Final = (
    f"SELECT {_TITLE_COLS}, {EVENT_COLS} FROM sessions s"
    " LEFT JOIN events e ON e.session_id = s.session_id AND e.seq = ?"
    " WHERE s.session_id = ?"
)

HEADER_AND_WORKSPACE: Final = (
    f"SELECT {HEADER_COLS}, s.ws AS ws FROM sessions s WHERE s.session_id = ?"
)


def replacements(*, backward: bool) -> str:
    """Positional replacements of an event, transitively, nearest first. Parameters: seq,
    session id, session id, seq, seq."""
    # UNION (not UNION ALL) discards a position already reached, so a cycle ends.
    step_from, step_to = ("seq", "replaced_seq") if backward else ("replaced_seq", "seq")
    return f"""
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
        """


REPLACES: Final = replacements(backward=True)
REPLACED_BY: Final = replacements(backward=False)


def _linked(refs_sql: str) -> str:
    """The events at the other end of a relation, each with its session's header."""
    return f"""
        WITH refs(rsid, rseq) AS ({refs_sql})
        SELECT refs.rsid AS rsid, refs.rseq AS rseq, {HEADER_COLS}, {EVENT_COLS}
        FROM refs
        LEFT JOIN sessions s ON s.session_id = refs.rsid
        LEFT JOIN events e ON e.session_id = refs.rsid AND e.seq = refs.rseq
        ORDER BY refs.rsid, refs.rseq
        """


CITES: Final = _linked(
    "SELECT c.cited_session_id, c.cited_seq FROM citations c WHERE c.session_id = ? AND c.seq = ?"
)
CITED_BY: Final = _linked(
    "SELECT c.session_id, c.seq FROM citations c WHERE c.cited_session_id = ? AND c.cited_seq = ?"
)


# -- filters ------------------------------------------------------------------------------


def json_list(values: Iterable[object]) -> str:
    """One JSON parameter instead of an IN list: no host-parameter limit."""
    return orjson.dumps(list(values)).decode("utf-8")


def _json_or_none(values: Iterable[object] | None) -> str | None:
    return None if values is None else json_list(values)


def filter_sql(params: dict[str, Any], clauses: Iterable[tuple[str, object, str]]) -> str:
    """`` AND clause`` for each (parameter name, value, clause) whose value is set; the
    value is bound under that name. The one place filters become SQL."""
    sql = ""
    for key, value, clause in clauses:
        if value is not None:
            params[key] = value
            sql += f" AND {clause}"
    return sql


def event_filter_sql(events: EventFilter, params: dict[str, Any], *, with_seq: bool) -> str:
    return filter_sql(
        params,
        (
            (
                "types",
                _json_or_none(events.types),
                "e.type IN (SELECT value FROM json_each(:types))",
            ),
            (
                "surfaces",
                _json_or_none(events.surfaces),
                "e.surface IN (SELECT value FROM json_each(:surfaces))",
            ),
            ("time_from", events.time_from_ms, "e.time_ms >= :time_from"),
            ("time_to", events.time_to_ms, "e.time_ms <= :time_to"),
            ("seq_from", events.seq_from if with_seq else None, "e.seq >= :seq_from"),
            ("seq_to", events.seq_to if with_seq else None, "e.seq <= :seq_to"),
        ),
    )


def session_filter_sql(sessions: SessionFilter, params: dict[str, Any]) -> str:
    """Filters on the session header (``session_ids`` narrows the events instead)."""
    sql = _parent_sql(sessions, params)
    return sql + filter_sql(
        params,
        (
            ("created_from", sessions.created_from_ms, "s.created_ms >= :created_from"),
            ("created_to", sessions.created_to_ms, "s.created_ms <= :created_to"),
            ("updated_from", sessions.updated_from_ms, "s.updated_ms >= :updated_from"),
            ("updated_to", sessions.updated_to_ms, "s.updated_ms <= :updated_to"),
            (
                "availability",
                _json_or_none(sessions.availability),
                "s.availability IN (SELECT value FROM json_each(:availability))",
            ),
        ),
    )


def _parent_sql(sessions: SessionFilter, params: dict[str, Any]) -> str:
    if sessions.parent_session_ids is None:
        return ""
    clauses = []
    if sessions.parent_session_ids:
        params["parents"] = json_list(sessions.parent_session_ids)
        clauses.append("s.parent_session_id IN (SELECT value FROM json_each(:parents))")
    if sessions.include_roots:
        clauses.append("s.parent_session_id IS NULL")
    # No authorized parent and no root marker: the clause matches nothing, on purpose.
    return " AND (" + (" OR ".join(clauses) if clauses else "0") + ")"
