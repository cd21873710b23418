"""Rows to results, read by column name.

A statement's result comes with its ``Columns`` (``worker.store.database``): positions by
name, resolved once per statement text from the cursor's description; a mapper reads each
value by the name ``sql`` gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import orjson

from worker.store.database import Columns
from worker.store.protocol import (
    EventRef,
    EventSummary,
    Generation,
    LinkedEvent,
    SessionHeader,
    StoredEvent,
    TitleObservation,
)
from worker.store.tables import EVENT_NAMES, HEADER_NAMES

PREVIEW_CHARS: Final = 240
# The prefix a preview is collapsed from first (twice the preview: most bodies fill it).
_PREFIX_CHARS: Final = 2 * PREVIEW_CHARS

Row = Sequence[Any]


# The columns of a bare header or event row, as ``sql.HEADER_COLS``/``EVENT_COLS`` list them.
HEADER_AT: Final = Columns(HEADER_NAMES)
EVENT_AT: Final = Columns(EVENT_NAMES)


def header(row: Row, at: Columns = HEADER_AT) -> SessionHeader:
    sid, cwd, parent, availability, created, updated, last_seq, count = at.header_values(row)
    # An empty cwd is no cwd (the session sees only itself), whatever index recorded it:
    # every header is read here, so "" never becomes a workspace shared by such sessions.
    # Positional arguments, in SessionHeader's field order: measurably cheaper per row.
    return SessionHeader(
        sid, cwd or None, parent, availability, created, updated, int(last_seq), int(count)
    )


def title_observation(row: Row, at: Columns) -> TitleObservation:
    """A header row with its title and (untitled) first prompts (``sql._TITLE_COLS``)."""
    prompts = row[at["prompts"]]
    return TitleObservation(
        header(row, at), row[at["title"]], tuple(orjson.loads(prompts)) if prompts else ()
    )


def header_or_none(row: Row, at: Columns) -> SessionHeader | None:
    """The header of an outer-joined session; None when the join found none."""
    return None if row[at["session_id"]] is None else header(row, at)


def summary(row: Row, at: Columns = EVENT_AT) -> EventSummary:
    sid, seq, event_id, kind, surface, time_ms, body_start = at.event_values(row)
    # Positional arguments, in EventSummary's field order.
    return EventSummary(sid, int(seq), event_id, kind, surface, int(time_ms), preview(body_start))


def summary_or_none(row: Row, at: Columns) -> EventSummary | None:
    """The summary of an outer-joined event; None when the join found none."""
    return None if row[at["event_session_id"]] is None else summary(row, at)


def stored_event(row: Row, at: Columns) -> StoredEvent:
    return StoredEvent(summary(row, at), row[at["raw_json"]])


# The columns of an event read with its ``doc`` (``sql.DOC_COLS``): ``EVENT_NAMES`` with
# the row's ``doc`` in place of the preview.
WINDOW_NAMES: Final = (*EVENT_NAMES[:-1], "doc")


def window_event(
    values: tuple[Any, ...], decode: Callable[[bytes, str], tuple[str, str]]
) -> StoredEvent:
    """A row of ``sql.EVENT_WINDOW`` (``WINDOW_NAMES``' values): its ``doc`` decoded to
    the JSON and the preview's source."""
    raw, source = decode(values[-1], values[3])
    return StoredEvent(summary_of(values, source), raw)


def summary_of(values: tuple[Any, ...], source: str) -> EventSummary:
    """The summary of a row read with ``sql.DOC_COLS`` (``WINDOW_NAMES``' values), its
    preview's ``source`` decoded from the row's ``doc``."""
    sid, seq, event_id, kind, surface, time_ms, _ = values
    return EventSummary(sid, int(seq), event_id, kind, surface, int(time_ms), preview(source))


def linked(row: Row, at: Columns) -> LinkedEvent:
    return LinkedEvent(
        ref=EventRef(row[at["rsid"]], int(row[at["rseq"]])),
        header=header_or_none(row, at),
        event=summary_or_none(row, at),
    )


def generation(row: Row, at: Columns) -> Generation:
    return Generation(epoch=int(row[at["epoch"]] or 0), seq=int(row[at["seq"]] or 0))


def preview(body: str) -> str:
    """The start of an event's searchable text, whitespace collapsed, bounded.

    Collapsed from a prefix first: the collapsed text of any prefix is a prefix of the
    whole body's collapsed text, so once it is longer than the preview the rest of the
    body cannot change it (a regex over the 1,000 characters read cost ~10-100 us per
    event). ``str.split`` and ``\\s`` agree on whitespace (both ``str.isspace``)."""
    text = " ".join(body[:_PREFIX_CHARS].split())
    if len(text) <= PREVIEW_CHARS and len(body) > _PREFIX_CHARS:
        text = " ".join(body.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
