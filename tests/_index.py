"""An index file read from outside the store, as an operator's tool would: its own
read-only connection, nothing cached."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from worker.store.event_codec import EventCodec
from worker.store.files.index_file import applied_seq


def connect(db: Path | str, *, read_only: bool = False) -> sqlite3.Connection:
    """A plain connection that reads events as the worker's do: ``event_json(doc)`` and
    ``event_text(doc, type)`` (the stored frame's JSON and searchable text)."""
    target = f"file:{db}?mode=ro" if read_only else str(db)
    conn = sqlite3.connect(target, uri=read_only, timeout=5)
    EventCodec(lambda sql, args: (conn.execute(sql, args).fetchone() or (None,))[0]).define(
        conn.create_function
    )
    return conn


def events_as_text(db: Path) -> None:
    """The events table as schemas before 6 kept it (the JSON and its searchable text as
    text, no dictionary), for the tests of the migrations from them."""
    conn = connect(db)
    conn.isolation_level = None
    try:
        conn.execute("ALTER TABLE events ADD COLUMN body TEXT NOT NULL DEFAULT ''")
        conn.execute("ALTER TABLE events ADD COLUMN raw_json TEXT NOT NULL DEFAULT ''")
        conn.execute("UPDATE events SET raw_json = event_json(doc), body = event_text(doc, type)")
        conn.execute("ALTER TABLE events DROP COLUMN doc")
        conn.execute("DROP TABLE zdict")
    finally:
        conn.close()


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
    conn = connect(db, read_only=True)
    try:
        out = {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("sessions", "replacements", "citations", "deadletters")
        }
        # The JSON, not its frame: two stores may train different dictionaries.
        out["events"] = conn.execute(
            "SELECT id, session_id, seq, event_id, type, surface, time_ms, stream_seq,"
            " event_json(doc) FROM events ORDER BY 1, 2"
        ).fetchall()
        out["meta"] = conn.execute(
            "SELECT key, value FROM meta WHERE key IN"
            " ('stream_seq', 'stream_name', 'stream_created', 'schema_version') ORDER BY key"
        ).fetchall()
        return out
    finally:
        conn.close()
