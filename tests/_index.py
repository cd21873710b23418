"""An index file read from outside the store, as an operator's tool would: its own
read-only connection, nothing cached."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from worker.store.files.index_file import applied_seq


def meta(db: Path) -> dict[str, object]:
    """The index's meta table (stream seq, schema version, stream identity ...)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return {str(k): v for k, v in conn.execute("SELECT key, value FROM meta")}
    finally:
        conn.close()


def index_seq(db: Path) -> int:
    """The stream sequence the index file is complete through; 0 while there is none."""
    try:
        return applied_seq(db)
    except sqlite3.Error:  # moved aside or being swapped: not there yet
        return 0


def table_rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows, and the meta keys that say which stream and how far, for
    comparing two indexes of the same history (ids, index ids and uids differ by file)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        out = {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("sessions", "events", "replacements", "citations", "deadletters")
        }
        out["meta"] = conn.execute(
            "SELECT key, value FROM meta WHERE key IN"
            " ('stream_seq', 'stream_name', 'stream_created', 'schema_version') ORDER BY key"
        ).fetchall()
        return out
    finally:
        conn.close()
