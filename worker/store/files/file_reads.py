"""Short reads of an index file by its path, each on a read-only ``Database`` of its own
(the worker may be running): what ``status``, ``doctor``, ``deadletters`` and the
``$SRV.STATS`` report print. Raises ``sqlite3.Error`` when the file cannot be read."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path

from worker.store import tables
from worker.store.database import Database
from worker.store.files.index_file import read_meta

# A dead letter as the commands print it: (stream sequence, kind, reason).
DeadLetter = tuple[int, str, str]


def _open(path: Path) -> Database:
    return Database.open(path, "read", role="report")


def meta_of(path: Path) -> dict[str, object]:
    """The file's ``meta`` table."""
    db = _open(path)
    try:
        return read_meta(db)
    finally:
        db.close()


def meta_and_dead_letters(path: Path) -> tuple[dict[str, object], dict[str, int]]:
    """The ``meta`` table and the dead letters counted by kind, most first (none for an
    index older than the dead-letter table)."""
    db = _open(path)
    try:
        meta = read_meta(db)
        try:
            found, at = db.rows(tables.DEAD_LETTERS_BY_KIND)
        except sqlite3.OperationalError:
            return meta, {}  # an index older than the dead-letter table
        kind, count = at["kind"], at["n"]
        return meta, {str(r[kind]): int(r[count]) for r in found}
    finally:
        db.close()


def last_dead_letters(path: Path, limit: int) -> list[DeadLetter]:
    """The last ``limit`` dead letters, oldest first."""
    return _dead_letters(path, tables.DEAD_LETTERS_LAST, limit)


def dead_letters_after(path: Path, stream_seq: int) -> list[DeadLetter]:
    """The dead letters after ``stream_seq`` (a thousand at most), oldest first."""
    return _dead_letters(path, tables.DEAD_LETTERS_AFTER, stream_seq)


def _dead_letters(path: Path, sql: str, param: int) -> list[DeadLetter]:
    db = _open(path)
    try:
        found, at = db.rows(sql, (param,))
    except sqlite3.OperationalError:
        return []  # an index older than the dead-letter table, or one being swapped
    finally:
        db.close()
    letter = at.getter(("stream_seq", "kind", "reason"))
    return [(int(a), str(b), str(c)) for a, b, c in map(letter, found)]


# A redaction marker in stored JSON (``contracts.redaction.marker``): its kind.
_MARKER = re.compile(r"\[redacted:([a-z0-9][a-z0-9-]{0,63})\]")


def redactions(path: Path) -> dict[str | None, dict[str, tuple[int, list[str]]]]:
    """Per workspace (its cwd; None: no cwd) and kind: how many markers the stored events
    hold and in which sessions (sorted). Only kinds and counts: never a value."""
    db = _open(path)
    try:
        found, at = db.rows(tables.REDACTED_EVENTS)
    finally:
        db.close()
    counts: dict[str | None, dict[str, Counter[str]]] = {}
    row = at.getter(("cwd", "session_id", "raw_json"))
    for cwd, session_id, raw in map(row, found):
        kinds = counts.setdefault(cwd, {})
        for kind in _MARKER.findall(raw):
            kinds.setdefault(kind, Counter())[session_id] += 1
    return {
        cwd: {
            kind: (sum(sessions.values()), sorted(sessions))
            for kind, sessions in sorted(kinds.items())
        }
        for cwd, kinds in counts.items()
    }
