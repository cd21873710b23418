"""Row mappers and SQL pieces for ``search_ops``, which reads its rows by position.

They live in ``worker.store.sqlite`` (``rows``, ``sql``); this module names them for the
search, with the widths of a bare header and event row as ``HEADER_COLS``/``EVENT_COLS``
list them (``header``/``summary`` read such a row by those names).
"""

from collections.abc import Callable, Mapping
from typing import Any, Final

from worker.store.sqlite.rows import PREVIEW_CHARS, header, preview, summary
from worker.store.sqlite.sql import (
    EVENT_COLS,
    EVENT_NAMES,
    HEADER_COLS,
    HEADER_NAMES,
    PREVIEW_SOURCE_CHARS,
    event_filter_sql,
    json_list,
    session_filter_sql,
)

HEADER_WIDTH: Final = len(HEADER_NAMES)
EVENT_WIDTH: Final = len(EVENT_NAMES)
# How the search reads: SQL text and its named parameters in, rows out (in one read
# transaction the caller holds).
Fetch = Callable[[str, Mapping[str, Any]], list[tuple[Any, ...]]]

__all__ = [
    "EVENT_COLS",
    "EVENT_WIDTH",
    "HEADER_COLS",
    "HEADER_WIDTH",
    "PREVIEW_CHARS",
    "PREVIEW_SOURCE_CHARS",
    "Fetch",
    "event_filter_sql",
    "header",
    "json_list",
    "preview",
    "session_filter_sql",
    "summary",
]
