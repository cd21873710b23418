"""Integrity checks of an index file, for tests, benchmarks and operators."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from pathlib import Path

import tantivy

from worker.store import tables
from worker.store.database import INDEX, Database
from worker.store.search.search_reader import SearchIndexReader
from worker.store.search.search_schema import search_index_path


def check_integrity(path: str | Path, *, wait_s: float = 10.0) -> list[str]:
    """Problems found by SQLite's own check and by comparing the search index with the
    store (waiting up to ``wait_s`` for it to catch up); an empty list means clean."""
    conn = Database.open(path, pragmas=INDEX, role="check")
    try:
        found, at = conn.rows(tables.INTEGRITY_CHECK)
        said = at["integrity_check"]
        problems = [str(row[said]) for row in found if row[said] != "ok"]
    finally:
        conn.close()
    return problems + search_index_problems(path, wait_s=wait_s)


def search_index_problems(path: str | Path, *, wait_s: float = 10.0) -> list[str]:
    """Every stored event indexed exactly once, nothing else indexed, once caught up."""
    conn = Database.open(path, pragmas=INDEX, role="check")
    try:
        found, at = conn.rows(tables.EVENT_IDS)
        event_id = at["id"]
        expected = {int(r[event_id]) for r in found}
        uid = int(conn.value(tables.META_VALUE, ("index_uid",)))
    finally:
        conn.close()
    reader = SearchIndexReader.open(path)
    if reader is None:
        return [f"no search index at {search_index_path(path)}"] if expected else []
    deadline = time.monotonic() + wait_s
    while reader.refresh().event_id < max(expected, default=0) and time.monotonic() < deadline:
        time.sleep(0.05)
    position = reader.position
    if position.uid != uid:
        return [f"the search index follows another store file (uid {position.uid} != {uid})"]
    searcher = reader.view().searcher
    hits = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
    values = searcher.fast_field_values("id", [address for _, address in hits])
    ids = Counter(int(v) for v in values if v is not None)
    ids[position.event_id] -= 1  # the reserved position document
    indexed = Counter({k: v for k, v in ids.items() if v > 0})
    problems = []
    doubled = sorted(k for k, v in indexed.items() if v > 1)
    if doubled:
        problems.append(f"search index: {len(doubled)} events indexed twice, e.g. {doubled[:5]}")
    unknown = sorted(set(indexed) - expected)
    if unknown:
        problems.append(f"search index: {len(unknown)} events the store lacks, e.g. {unknown[:5]}")
    missing = sorted(k for k in expected - set(indexed) if k <= position.event_id)
    if missing:
        problems.append(f"search index: {len(missing)} stored events missing, e.g. {missing[:5]}")
    behind = sum(1 for k in expected if k > position.event_id)
    if behind:
        problems.append(f"search index: {behind} events not yet indexed after {wait_s} s")
    return problems


def content_checksum(path: str | Path) -> tuple[int, str]:
    """The number of stored events and a sha256 over (session_id, seq, raw_json), in order."""
    digest = hashlib.sha256()
    count = 0
    conn = Database.open(path, pragmas=INDEX, role="check")
    try:
        found, at = conn.stream(tables.EVENTS_IN_ORDER)
        for session_id, seq, raw_json in map(at.getter(("session_id", "seq", "raw_json")), found):
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
