"""Row mappers and SQL pieces for ``search_ops``, which reads its rows by column name.

They live in ``worker.store.sqlite`` (``rows``, ``sql``); this module names them for the
search (``header``/``summary`` read a row by the names ``HEADER_COLS``/``EVENT_COLS`` give).
"""

from collections.abc import Callable, Mapping
from typing import Any

from worker.store.database import Result
from worker.store.sqlite.rows import PREVIEW_CHARS, header, preview, summary
from worker.store.sqlite.sql import (
    EVENT_COLS,
    HEADER_COLS,
    PREVIEW_SOURCE_CHARS,
    event_filter_sql,
    json_list,
    session_filter_sql,
)

# How the search reads: SQL text and its named parameters in, rows with their columns out
# (in one read transaction the caller holds).
Fetch = Callable[[str, Mapping[str, Any]], Result]

__all__ = [
    "EVENT_COLS",
    "HEADER_COLS",
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
