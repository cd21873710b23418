"""The embedding follower: it follows ``events.id`` of the store, as the search index does,
embeds each event's chunk (``chunks.chunk``) and writes the vectors, with how far it got,
in one transaction of the vector file. So it resumes after a restart from what the file
really holds (exactly once), and it rebuilds when the store was replaced (another
``index_uid``: a restore, a rebuild). Purged sessions (``search_deletions``) lose their
vectors. It never writes the store and never holds ingestion up: it has its own lag.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.store import tables
from worker.store.database import Database
from worker.store.search.semantic import vectors
from worker.store.search.semantic.chunks import EMBEDDED_TYPES, chunk
from worker.store.search.semantic.embedder import Vector

# Events read per step. Small: a step is one transaction of the vector file and one call
# of the model, and the worker stops between steps.
STEP_EVENTS: Final = 32
_TYPES_SQL: Final = ", ".join(f"'{t}'" for t in EMBEDDED_TYPES)
# The embeddable events after ``?`` up to ``?`` (the newest when the read began).
_EVENTS_AFTER: Final = (
    "SELECT e.id AS id, e.session_id AS session_id, s.ws AS ws, e.type AS type,"
    " e.body AS body FROM events e JOIN sessions s ON s.session_id = e.session_id"
    f" WHERE e.id > ? AND e.id <= ? AND e.type IN ({_TYPES_SQL})"
    " ORDER BY e.id LIMIT ?"
)
# The columns of an event to embed, in ``_Event``'s order.
_EVENT_NAMES: Final = ("id", "session_id", "ws", "type", "body")


@dataclass(frozen=True, slots=True)
class Lag:
    through_event_id: int  # every event up to this id is embedded (or not embeddable)
    last_event_id: int  # the store's newest event
    vectors: int

    @property
    def behind(self) -> int:
        """Events (by id) the follower has not looked at yet."""
        return max(0, self.last_event_id - self.through_event_id)


@dataclass(frozen=True, slots=True)
class _Event:
    """An event to embed (``_EVENT_NAMES``)."""

    id: int
    session_id: str
    ws: str
    type: str
    body: str


def _lag(store: Database, out: Database) -> Lag:
    meta = vectors.read_meta(out)
    newest = store.value(tables.NEWEST_EVENT_ID)
    count = out.value(tables.VECTOR_COUNT)
    return Lag(meta.get("through", 0), int(newest), int(count))


class SemanticFollower:
    """Embeds the store's events into ``<db>.vectors``; one thread calls ``step``."""

    def __init__(self, db_path: str | Path, embed: Callable[[list[str]], Vector]) -> None:
        self._store = Database.open(db_path, "read", role="semantic")
        self._out = vectors.connect(vectors.vectors_path(db_path))
        self._embed = embed
        self._check_store()

    def _check_store(self) -> None:
        """A vector file made from another store file is emptied (and read again)."""
        uid = int(self._store.value(tables.META_VALUE, ("index_uid",)) or 0)
        meta = vectors.read_meta(self._out)
        if meta.get("store_uid") == uid:
            return
        with self._out.transaction():  # one transaction: readers see the old file or the new one
            self._out.run(tables.VECTORS_DROP)
            self._out.run(tables.VECTOR_META_RESTART)
            self._set("store_uid", uid)
            self._set("generation", meta.get("generation", 0) + 1)

    def _set(self, key: str, value: int) -> None:
        self._out.run(tables.META_PUT, (key, value))

    def step(self, limit: int = STEP_EVENTS) -> int:
        """Embed up to ``limit`` events past the file's position; the events looked at (0:
        caught up)."""
        meta = vectors.read_meta(self._out)
        through = meta.get("through", 0)
        rows, newest, deletions = self._read(through, meta.get("deletions", 0), limit)
        texts = [(e, text) for e in rows if (text := chunk(e.type, e.body)) is not None]
        packed = vectors.pack(self._embed([t for _, t in texts])) if texts else []
        # Fewer rows than asked: everything up to the store's newest id was seen.
        reached = rows[-1].id if len(rows) == limit else max(newest, through)
        with self._out.transaction():
            self._out.run_many(
                tables.VECTOR_PUT,
                [
                    (e.id, e.ws, e.session_id, blob)
                    for (e, _), blob in zip(texts, packed, strict=True)
                ],
            )
            for deletion_id, session_id in deletions:
                self._out.run(tables.VECTORS_OF_SESSION_DROP, (session_id,))
                self._set("deletions", deletion_id)
            self._set("through", reached)
        return len(rows) + len(deletions)

    def _read(
        self, through: int, deleted: int, limit: int
    ) -> tuple[list[_Event], int, list[tuple[int, str]]]:
        """One read transaction of the store: the next events, its newest id, deletions."""
        with self._store.transaction("BEGIN"):
            newest = int(self._store.value(tables.NEWEST_EVENT_ID))
            found, at = self._store.rows(_EVENTS_AFTER, (through, newest, limit))
            removed, gone = self._store.rows(tables.DELETIONS_AFTER, (deleted,))
        event = at.getter(_EVENT_NAMES)
        deletion = gone.getter(("id", "session_id"))
        return (
            [_Event(*event(r)) for r in found],
            newest,
            [(int(i), str(s)) for i, s in map(deletion, removed)],
        )

    def lag(self) -> Lag:
        return _lag(self._store, self._out)

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
    store = Database.open(db_path, "read", role="report")
    try:
        return _lag(store, out)
    finally:
        out.close()
        store.close()
