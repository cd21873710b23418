"""Rows to results, read by column name.

A statement's result comes with its column positions by name (``Columns``, from the
cursor's description, resolved once per statement); a mapper reads each value by the name
``sql`` gives it. ``sqlite3.Row`` would read by name too, but its lookup compares names
case-insensitively on every access: ~0.4 us a value measured, ~5x a dict lookup, which a
101-event window pays 1,500 times.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from worker.store.protocol import (
    EventRef,
    EventSummary,
    Generation,
    LinkedEvent,
    SessionHeader,
    StoredEvent,
)
from worker.store.sqlite.sql import EVENT_NAMES, HEADER_NAMES

PREVIEW_CHARS: Final = 240
_WS: Final = re.compile(r"\s+")

Row = Sequence[Any]
# Column name -> position in the statement's rows.
Columns = Mapping[str, int]

# The columns of a bare header or event row, as ``sql.HEADER_COLS``/``EVENT_COLS`` list them.
HEADER_AT: Final[Columns] = {name: i for i, name in enumerate(HEADER_NAMES)}
EVENT_AT: Final[Columns] = {name: i for i, name in enumerate(EVENT_NAMES)}


def columns(description: Sequence[Sequence[Any]]) -> dict[str, int]:
    """Positions by name, from a cursor's ``description`` (the first of a repeated name)."""
    at: dict[str, int] = {}
    for i, column in enumerate(description):
        at.setdefault(column[0], i)
    return at


def header(row: Row, at: Columns = HEADER_AT) -> SessionHeader:
    return SessionHeader(
        session_id=row[at["session_id"]],
        # An empty cwd is no cwd (the session sees only itself), whatever index recorded it:
        # every header is read here, so "" never becomes a workspace shared by such sessions.
        cwd=row[at["cwd"]] or None,
        parent_session_id=row[at["parent_session_id"]],
        availability=row[at["availability"]],
        created_ms=row[at["created_ms"]],
        updated_ms=row[at["updated_ms"]],
        last_seq=int(row[at["last_seq"]]),
        event_count=int(row[at["event_count"]]),
    )


def header_or_none(row: Row, at: Columns) -> SessionHeader | None:
    """The header of an outer-joined session; None when the join found none."""
    return None if row[at["session_id"]] is None else header(row, at)


def summary(row: Row, at: Columns = EVENT_AT) -> EventSummary:
    return EventSummary(
        session_id=row[at["event_session_id"]],
        seq=int(row[at["seq"]]),
        event_id=row[at["event_id"]],
        type=row[at["type"]],
        surface=row[at["surface"]],
        time_ms=int(row[at["time_ms"]]),
        preview=preview(row[at["body_start"]]),
    )


def summary_or_none(row: Row, at: Columns) -> EventSummary | None:
    """The summary of an outer-joined event; None when the join found none."""
    return None if row[at["event_session_id"]] is None else summary(row, at)


def stored_event(row: Row, at: Columns) -> StoredEvent:
    return StoredEvent(summary(row, at), row[at["raw_json"]])


def linked(row: Row, at: Columns) -> LinkedEvent:
    return LinkedEvent(
        ref=EventRef(row[at["rsid"]], int(row[at["rseq"]])),
        header=header_or_none(row, at),
        event=summary_or_none(row, at),
    )


def generation(row: Row, at: Columns) -> Generation:
    return Generation(epoch=int(row[at["epoch"]] or 0), seq=int(row[at["seq"]] or 0))


def preview(body: str) -> str:
    """The start of an event's searchable text, whitespace collapsed, bounded."""
    text = _WS.sub(" ", body).strip()
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
