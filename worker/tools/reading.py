"""Rendering of ``session_event_read``: the exact event JSON, its multi-line text made
readable, and the neighbouring events as one-line summaries."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic_core import from_json

from worker.store import EventWindow, StoredEvent
from worker.tools.formatting import count, event_line, format_time, format_title, quote_recalled
from worker.tools.titles import UNAVAILABLE, TitleInfo


def render_event_read(
    window: EventWindow,
    target: StoredEvent,
    titles: Mapping[str, TitleInfo],
    *,
    before: int,
    after: int,
) -> str:
    header = window.header
    summary = target.summary
    title = format_title(titles.get(header.session_id, UNAVAILABLE))
    lines = [
        f"Event seq {summary.seq} of session {header.session_id} {title} "
        f"({summary.type} · {summary.surface} · {format_time(summary.time_ms)})",
        "",
        "Exact event JSON:",
        quote_recalled(target.raw_json),
    ]
    lines.extend(_readable_text_fields(target.raw_json))
    if before:
        lines.extend(_neighbours("Before", window.before, "none (no earlier events)"))
    if after:
        lines.extend(_neighbours("After", window.after, "none (no later events)"))
    return "\n".join(lines)


def _neighbours(label: str, events: Sequence[StoredEvent], none: str) -> list[str]:
    lines = ["", f"{label} ({count(len(events), 'event')}, oldest first):"]
    lines.extend(f"  {event_line(e.summary)}" for e in events)
    if not events:
        lines.append(f"  {none}")
    return lines


# Multi-line payload strings rendered below the exact JSON, at most this many.
_MAX_READABLE_FIELDS: Final = 20
_QUOTE_PREFIX: Final = "> "


def _readable_text_fields(raw_json: str) -> list[str]:
    """The payload's multi-line strings again, readable: the JSON above shows them as one
    string full of \\n escapes. Every line is prefixed, so the text cannot end the quote."""
    if "\\n" not in raw_json:  # no escaped newline: nothing to render (the common case)
        return []
    try:
        payload = _parsed(raw_json).get("payload")
    except (ValueError, AttributeError):
        return []
    fields = [(path, text) for path, text in _strings("payload", payload) if "\n" in text]
    if not fields:
        return []
    lines = [
        "",
        f"Multi-line text of the payload, rendered (each line prefixed with "
        f'"{_QUOTE_PREFIX.strip()}"; the exact JSON above is authoritative):',
    ]
    for path, text in fields[:_MAX_READABLE_FIELDS]:
        lines.append(f"{path}:")
        lines.extend(
            _QUOTE_PREFIX + line if line else _QUOTE_PREFIX.strip()
            for line in quote_recalled(text).splitlines()
        )
    if len(fields) > _MAX_READABLE_FIELDS:
        lines.append(f"({len(fields) - _MAX_READABLE_FIELDS} more multi-line fields not shown)")
    return lines


def _parsed(raw_json: str) -> Any:
    """``json.loads(raw_json)``, by pydantic-core's parser when it can (~2.5x quicker on a
    payload): what it refuses (a lone surrogate escape) the standard library reads as
    before, so the value is the same either way. Only keys are cached: payload strings
    would pin memory (bench/HISTORY.md, issue 20's fourth round)."""
    try:
        return from_json(raw_json, cache_strings="keys")
    except ValueError:
        return json.loads(raw_json)


def _strings(path: str, value: object) -> list[tuple[str, str]]:
    """(JSON path, string) for every string inside ``value``, in document order."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _strings(f"{path}.{key}", item)]
    if isinstance(value, list):
        return [pair for i, item in enumerate(value) for pair in _strings(f"{path}[{i}]", item)]
    return []
