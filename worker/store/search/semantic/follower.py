"""The embedding follower: it follows ``events.id`` of the store, as the search index does,
embeds each event's chunk (``chunks.chunk``) and writes the vectors, with how far it got,
in one transaction of the vector file. So it resumes after a restart from what the file
really holds (exactly once), and it rebuilds when the store was replaced (another
``index_uid``: a restore, a rebuild). Purged sessions (``search_deletions``) lose their
vectors. It never writes the store and never holds ingestion up: it has its own lag.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from worker.store.search.semantic import vectors
from worker.store.search.semantic.chunks import EMBEDDED_TYPES, chunk
from worker.store.search.semantic.embedder import Vector

# Events read per step. Small: a step is one transaction of the vector file and one call
# of the model, and the worker stops between steps.
STEP_EVENTS: Final = 32
_TYPES_SQL: Final = ", ".join(f"'{t}'" for t in EMBEDDED_TYPES)


@dataclass(frozen=True, slots=True)
class Lag:
    through_event_id: int  # every event up to this id is embedded (or not embeddable)
    last_event_id: int  # the store's newest event
    vectors: int

    @property
    def behind(self) -> int:
        """Events (by id) the follower has not looked at yet."""
        return max(0, self.last_event_id - self.through_event_id)


class SemanticFollower:
    """Embeds the store's events into ``<db>.vectors``; one thread calls ``step``."""

    def __init__(self, db_path: str | Path, embed: Callable[[list[str]], Vector]) -> None:
        self._store = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
        self._store.execute("PRAGMA busy_timeout=5000")
        self._out = vectors.connect(vectors.vectors_path(db_path))
        self._embed = embed
        self._check_store()

    def _check_store(self) -> None:
        """A vector file made from another store file is emptied (and read again)."""
        row = self._store.execute("SELECT value FROM meta WHERE key = 'index_uid'").fetchone()
        uid = int(row[0]) if row else 0
        meta = vectors.read_meta(self._out)
        if meta.get("store_uid") == uid:
            return
        with self._out:  # one transaction: readers see the old file or the new one
            self._out.execute("BEGIN IMMEDIATE")
            self._out.execute("DELETE FROM vectors")
            self._out.execute("DELETE FROM meta WHERE key IN ('through', 'deletions')")
            self._set("store_uid", uid)
            self._set("generation", meta.get("generation", 0) + 1)
            self._out.execute("COMMIT")

    def _set(self, key: str, value: int) -> None:
        self._out.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def step(self, limit: int = STEP_EVENTS) -> int:
        """Embed up to ``limit`` events past the file's position; the events looked at (0:
        caught up)."""
        meta = vectors.read_meta(self._out)
        through = meta.get("through", 0)
        rows, newest, deletions = self._read(through, meta.get("deletions", 0), limit)
        texts = [(r, text) for r in rows if (text := chunk(r[3], r[4])) is not None]
        packed = vectors.pack(self._embed([t for _, t in texts])) if texts else []
        # Fewer rows than asked: everything up to the store's newest id was seen.
        reached = int(rows[-1][0]) if len(rows) == limit else max(newest, through)
        self._out.execute("BEGIN IMMEDIATE")
        try:
            self._out.executemany(
                "INSERT OR REPLACE INTO vectors (event_id, ws, session_id, vec) VALUES (?,?,?,?)",
                [(r[0], r[2], r[1], blob) for (r, _), blob in zip(texts, packed, strict=True)],
            )
            for deletion_id, session_id in deletions:
                self._out.execute("DELETE FROM vectors WHERE session_id = ?", (session_id,))
                self._set("deletions", deletion_id)
            self._set("through", reached)
            self._out.execute("COMMIT")
        except BaseException:
            self._out.execute("ROLLBACK")
            raise
        return len(rows) + len(deletions)

    def _read(
        self, through: int, deleted: int, limit: int
    ) -> tuple[list[tuple[Any, ...]], int, list[tuple[int, str]]]:
        """One read transaction of the store: the next events, its newest id, deletions."""
        with self._store:
            self._store.execute("BEGIN")
            newest = int(
                self._store.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
            )
            rows = self._store.execute(
                "SELECT e.id, e.session_id, s.ws, e.type, e.body FROM events e"
                " JOIN sessions s ON s.session_id = e.session_id"
                f" WHERE e.id > ? AND e.id <= ? AND e.type IN ({_TYPES_SQL})"
                " ORDER BY e.id LIMIT ?",
                (through, newest, limit),
            ).fetchall()
            deletions = self._store.execute(
                "SELECT id, session_id FROM search_deletions WHERE id > ? ORDER BY id",
                (deleted,),
            ).fetchall()
        return rows, newest, [(int(i), str(s)) for i, s in deletions]

    def lag(self) -> Lag:
        meta = vectors.read_meta(self._out)
        newest = self._store.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
        count = self._out.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return Lag(meta.get("through", 0), int(newest), int(count))

    def catch_up(self) -> int:
        """Step until caught up (tests, benches); the events looked at."""
        total = 0
        while (done := self.step()) > 0:
            total += done
        return total

    def close(self) -> None:
        self._store.close()
        self._out.close()


def read_lag(db_path: str | Path) -> Lag | None:
    """The follower's lag read from the files (``status``, ``$SRV.STATS``); None when no
    vector file exists (semantic search was never on for this index)."""
    path = vectors.vectors_path(db_path)
    if not path.exists() or not Path(db_path).exists():
        return None
    out = vectors.connect(path, read_only=True)
    store = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        meta = vectors.read_meta(out)
        count = out.execute("SELECT count(*) FROM vectors").fetchone()[0]
        newest = store.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
        return Lag(meta.get("through", 0), int(newest), int(count))
    finally:
        out.close()
        store.close()
