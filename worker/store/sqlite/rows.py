"""Rows to results, read by column name.

A statement's result comes with its ``Columns``: positions by name, resolved once per
statement text from the cursor's description; a mapper reads each value by the name ``sql``
gives it. The header's and the event's names are resolved to one ``itemgetter`` each, so a
row's eight header values cost one C call rather than eight lookups (read_titles of 20
sessions measured ~5% slower with a lookup per value). ``sqlite3.Row`` would read by name
too, but it compares names case-insensitively on every access: ~0.4 us a value measured,
which a 101-event window pays 1,500 times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from operator import itemgetter
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
# The prefix a preview is collapsed from first (twice the preview: most bodies fill it).
_PREFIX_CHARS: Final = 2 * PREVIEW_CHARS

Row = Sequence[Any]
_Values = Callable[[Row], tuple[Any, ...]]


class Columns(Mapping[str, int]):
    """Column positions by name (the first of a repeated name), in column order."""

    __slots__ = ("_at", "event_values", "header_values")

    def __init__(self, names: Iterable[str]) -> None:
        self._at: dict[str, int] = {}
        for i, name in enumerate(names):
            self._at.setdefault(name, i)
        # The values of the header's and the event's columns, in HEADER_NAMES/EVENT_NAMES
        # order (raising KeyError when the statement does not select them all).
        self.header_values = self._values(HEADER_NAMES)
        self.event_values = self._values(EVENT_NAMES)

    def _values(self, names: Sequence[str]) -> _Values:
        missing = [name for name in names if name not in self._at]
        if missing:
            return partial(_not_selected, missing)
        return itemgetter(*(self._at[name] for name in names))

    def __getitem__(self, name: str) -> int:
        return self._at[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def _not_selected(missing: list[str], row: Row) -> tuple[Any, ...]:
    raise KeyError(f"the statement selects no {', '.join(missing)}")


# The columns of a bare header or event row, as ``sql.HEADER_COLS``/``EVENT_COLS`` list them.
HEADER_AT: Final = Columns(HEADER_NAMES)
EVENT_AT: Final = Columns(EVENT_NAMES)


def columns(description: Sequence[Sequence[Any]]) -> Columns:
    """The columns of a cursor's ``description``."""
    return Columns(column[0] for column in description)


def header(row: Row, at: Columns = HEADER_AT) -> SessionHeader:
    sid, cwd, parent, availability, created, updated, last_seq, count = at.header_values(row)
    # An empty cwd is no cwd (the session sees only itself), whatever index recorded it:
    # every header is read here, so "" never becomes a workspace shared by such sessions.
    # Positional arguments, in SessionHeader's field order: measurably cheaper per row.
    return SessionHeader(
        sid, cwd or None, parent, availability, created, updated, int(last_seq), int(count)
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
