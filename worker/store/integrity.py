"""Integrity checks of an index file, for tests, benchmarks and operators."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from worker.store import schema


def check_integrity(path: str | Path) -> list[str]:
    """Problems found by SQLite's and FTS5's own checks; an empty list means clean."""
    conn = schema.connect(str(path))
    try:
        problems = [str(row[0]) for row in conn.execute("PRAGMA integrity_check") if row[0] != "ok"]
        try:
            # Compares the FTS index with the external content table row by row.
            conn.execute("INSERT INTO events_fts (events_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            problems.append(f"fts5 integrity-check: {exc}")
        return problems
    finally:
        conn.close()


def content_checksum(path: str | Path) -> tuple[int, str]:
    """The number of stored events and a sha256 over (session_id, seq, raw_json), in order."""
    digest = hashlib.sha256()
    count = 0
    conn = schema.connect(str(path))
    try:
        rows = conn.execute("SELECT session_id, seq, raw_json FROM events ORDER BY session_id, seq")
        for session_id, seq, raw_json in rows:
            digest.update(f"{session_id}\x00{seq}\x00".encode())
            digest.update(raw_json.encode("utf-8"))
            digest.update(b"\x00")
            count += 1
        return count, digest.hexdigest()
    finally:
        conn.close()


def checksum_of(events: list[tuple[str, int, str]]) -> tuple[int, str]:
    """``content_checksum`` of an expected set of (session_id, seq, raw_json) events."""
    digest = hashlib.sha256()
    for session_id, seq, raw_json in sorted(events, key=lambda e: (e[0], e[1])):
        digest.update(f"{session_id}\x00{seq}\x00".encode())
        digest.update(raw_json.encode("utf-8"))
        digest.update(b"\x00")
    return len(events), digest.hexdigest()
