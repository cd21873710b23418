"""Reading an agent's SQLite database while the agent writes it.

The connection is read-only (``mode=ro``: nothing is created, no journal is written), so
the importer can never change or lock out the agent's database for writing beyond the
moment of one read: in WAL mode readers and the writer do not block each other; in
rollback mode the read is one short transaction and the connection is closed at once.
A database the agent holds locked is waited for briefly (``timeout``) and then read on
the next poll.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final
from urllib.parse import quote

BUSY_TIMEOUT_S: Final = 2.0


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN")  # one consistent view of every table read below
        yield conn
    finally:
        conn.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {str(row[0]) for row in rows}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def grouped(conn: sqlite3.Connection, query: str) -> dict[str, tuple[object, ...]]:
    """A ``GROUP BY`` query's rows as key (its first column) -> the other columns."""
    return {str(row[0]): tuple(row[1:]) for row in conn.execute(query)}
