"""Formatting shared by every rendering: recalled-text quoting, times, titles, lines.

Text recalled from sessions (titles, excerpts, event previews, exact event JSON) is always
passed through ``quote_recalled``: it is data from past work, never instructions.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

from worker.store import EventSummary, SessionHeader
from worker.tools.titles import UNAVAILABLE, TitleInfo

_MAX_TITLE: Final = 200
# A title derived from the session's first prompt is cut to this many characters (a
# prompt can be pages long) and marked: it is not a title anyone gave the session.
DERIVED_TITLE_CHARS: Final = 80
DERIVED_MARK: Final = "(first prompt)"

# Recalled text is shown between these; the text itself can never contain them bare.
RECALLED_OPEN: Final = "\u27e6"  # ⟦
RECALLED_CLOSE: Final = "\u27e7"  # ⟧
_RECALLED_ESCAPES: Final = str.maketrans({RECALLED_OPEN: "\\u27e6", RECALLED_CLOSE: "\\u27e7"})


def quote_recalled(text: str) -> str:
    """``text`` from another session marked as quoted data: ``⟦text⟧``.

    A ⟦ or ⟧ inside the text is written as its JSON escape (``\\u27e6``, ``\\u27e7``),
    so the text cannot close the quote and continue as if it were the tool's own words.
    In exact event JSON the two characters can only stand inside strings, where the
    escape decodes to the same value: the JSON stays exact.
    """
    if RECALLED_OPEN in text or RECALLED_CLOSE in text:  # rare: a scan is cheaper than a map
        text = text.translate(_RECALLED_ESCAPES)
    return RECALLED_OPEN + text + RECALLED_CLOSE


def format_time(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    # The date from a cache of days, the time of day by arithmetic: datetime's strftime
    # cost ~2 us a call, several per event line. UTC has no leap seconds to skip.
    day, milli = divmod(ms, 86_400_000)
    hour, milli = divmod(milli, 3_600_000)
    minute, milli = divmod(milli, 60_000)
    second, milli = divmod(milli, 1000)
    return f"{_day(day)}T{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


@lru_cache(maxsize=1024)
def _day(day: int) -> str:
    """``YYYY-MM-DD`` of the day ``day`` days after 1970-01-01 (negative: before)."""
    return datetime.fromtimestamp(day * 86_400, tz=UTC).strftime("%Y-%m-%d")


def one_line(text: str) -> str:
    return " ".join(text.split())


def title_text(info: TitleInfo) -> str | None:
    """The title on one line, cut (a first prompt shorter than a title); None: untitled."""
    if not info.title or not info.title.strip():
        return None
    title = one_line(info.title)
    limit = DERIVED_TITLE_CHARS if info.derived else _MAX_TITLE
    return title[:limit].rstrip() + "…" if len(title) > limit else title


def format_title(info: TitleInfo) -> str:
    if not info.available:
        return "(title unavailable)"
    title = title_text(info)
    if title is None:
        return "(untitled)"
    return f"{quote_recalled(title)} {DERIVED_MARK}" if info.derived else quote_recalled(title)


def session_line(header: SessionHeader, titles: Mapping[str, TitleInfo]) -> str:
    title = format_title(titles.get(header.session_id, UNAVAILABLE))
    return (
        f"{header.session_id} {title} · {header.availability} · "
        f"created {format_time(header.created_ms)} · updated {format_time(header.updated_ms)}"
    )


def event_head(event: EventSummary, *, with_session: bool = False) -> str:
    where = f"{event.session_id} seq {event.seq}" if with_session else f"seq {event.seq}"
    return f"{where} · {event.type} · {event.surface} · {format_time(event.time_ms)}"


def event_line(event: EventSummary, *, with_session: bool = False) -> str:
    head = event_head(event, with_session=with_session)
    preview = one_line(event.preview)
    return f"{head} — {quote_recalled(preview)}" if preview else head


def count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def quote_query(text: str) -> str:
    flat = one_line(text)
    if len(flat) > 120:
        flat = flat[:120] + "…"
    return f'"{flat}"'
