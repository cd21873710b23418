"""The embedding follower: it follows ``events.id`` of the store, as the search index does,
embeds each event's chunk (``chunks.chunk``) and writes the vectors, with how far it got,
in one transaction of the vector file. So it resumes after a restart from what the file
really holds (exactly once), and it rebuilds when the store was replaced (another
``index_uid``: a rebuild) or the model changed (``model.ModelIdentity``: another name,
size or probe vector), so one file never mixes two models' spaces. A restored snapshot
keeps its store's ``index_uid``, so the vectors that came with it are kept. Purged sessions
(``search_deletions``) lose their vectors. It never writes the store and never holds
ingestion up: it has its own lag. When the model fails (``EmbedderUnavailable``) the step
writes nothing but the failure, which status reports, and the next step tries again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.store import tables
from worker.store.database import Database
from worker.store.errors import EmbedderUnavailable
from worker.store.search.semantic import vectors
from worker.store.search.semantic.chunks import EMBEDDED_TYPES, chunk
from worker.store.search.semantic.model import SemanticModel

_TYPES_SQL: Final = ", ".join(f"'{t}'" for t in EMBEDDED_TYPES)
# The embeddable events after ``?`` up to ``?`` (the newest when the read began).
_EVENTS_AFTER: Final = (
    "SELECT e.id AS id, e.session_id AS session_id, s.ws AS ws, e.type AS type,"
    " event_text(e.doc, e.type) AS body"
    " FROM events e JOIN sessions s ON s.session_id = e.session_id"
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
    model: str | None = None  # ModelIdentity.describe() of the vectors
    failing: str | None = None  # why the embedder failed, since the last vectors written
    failing_since_ms: int | None = None

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


class SemanticFollower:
    """Embeds the store's events into ``<db>.vectors``; one thread calls ``step``."""

    def __init__(self, db_path: str | Path, model: SemanticModel) -> None:
        self._store = Database.open(db_path, "read", role="semantic")
        self._out = vectors.connect(vectors.vectors_path(db_path))
        self._model = model

    def _check(self) -> None:
        """A vector file made from another store file, or by another model, is emptied (and
        embedded again). Raises ``EmbedderUnavailable`` when the model cannot say what it is."""
        uid = int(self._store.value(tables.META_VALUE, ("index_uid",)) or 0)
        identity = self._model.identity()
        meta = vectors.read_meta(self._out)
        same_model = vectors.read_identity(self._out) == identity
        if meta.get("store_uid") == uid and same_model:
            return
        with self._out.transaction():  # one transaction: readers see the old file or the new one
            if same_model:  # another store file (a rebuild): its unchanged events reuse these
                self._out.run(tables.VECTORS_KEPT_FOR_REUSE)
            else:
                self._out.run(tables.REUSABLE_DROP)
            self._out.run(tables.VECTORS_DROP)
            self._out.run(tables.VECTOR_META_RESTART)
            self._set("store_uid", uid)
            self._set("generation", meta.get("generation", 0) + 1)
            vectors.write_identity(self._out, identity)

    def _set(self, key: str, value: int) -> None:
        self._out.run(tables.META_PUT, (key, value))

    def step(self, limit: int | None = None) -> int:
        """Embed up to ``limit`` events (the model's ``step_events``) past the file's
        position; the events looked at (0: caught up). Raises ``EmbedderUnavailable``
        after recording it in the file."""
        try:
            return self._step(limit or self._model.step_events)
        except EmbedderUnavailable as exc:
            with self._out.transaction():
                vectors.write_failure(self._out, str(exc), int(time.time() * 1000))
            raise

    def _step(self, limit: int) -> int:
        self._check()
        meta = vectors.read_meta(self._out)
        through = meta.get("through", 0)
        rows, newest, deletions = self._read(through, meta.get("deletions", 0), limit)
        texts = [(e, text) for e in rows if (text := chunk(e.type, e.body)) is not None]
        digests = [vectors.digest(text) for _, text in texts]
        reused = self._reusable(digests)
        missing = [text for (_, text), d in zip(texts, digests, strict=True) if d not in reused]
        fresh = iter(vectors.pack(self._model.passages(missing)) if missing else [])
        packed = [reused[d] if d in reused else next(fresh) for d in digests]
        # Fewer rows than asked: everything up to the store's newest id was seen.
        caught_up = len(rows) < limit
        reached = rows[-1].id if not caught_up else max(newest, through)
        with self._out.transaction():
            self._out.run_many(
                tables.VECTOR_PUT,
                [
                    (e.id, e.ws, e.session_id, blob, d)
                    for (e, _), blob, d in zip(texts, packed, digests, strict=True)
                ],
            )
            if reused:
                self._set("reused", meta.get("reused", 0) + len(texts) - len(missing))
            if caught_up:  # the rebuilt file is followed to its end: the old vectors go
                self._out.run(tables.REUSABLE_DROP)
            for deletion_id, session_id in deletions:
                self._out.run(tables.VECTORS_OF_SESSION_DROP, (session_id,))
                self._set("deletions", deletion_id)
            self._set("through", reached)
            vectors.write_failure(self._out, None, 0)
        return len(rows) + len(deletions)

    def _reusable(self, digests: list[bytes]) -> dict[bytes, bytes]:
        """The vectors a rebuild left for these chunks (usually none)."""
        if not digests:
            return {}
        marks = ",".join("?" * len(digests))
        found, at = self._out.rows(
            f"SELECT digest AS digest, vec AS vec FROM reusable WHERE digest IN ({marks})", digests
        )
        pair = at.getter(("digest", "vec"))
        return {bytes(d): bytes(v) for d, v in map(pair, found)}

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
        return _lag(self._out, self._store)

    def catch_up(self) -> int:
        """Step until caught up (tests, benches); the events looked at."""
        total = 0
        while (done := self.step()) > 0:
            total += done
        return total

    def close(self) -> None:
        self._store.close()
        self._out.close()


def _lag(out: Database, store: Database) -> Lag:
    meta = vectors.read_meta(out)
    count = out.value(tables.VECTOR_COUNT)
    newest = store.value(tables.NEWEST_EVENT_ID)
    identity = vectors.read_identity(out)
    failure = vectors.read_failure(out)
    return Lag(
        meta.get("through", 0),
        int(newest),
        int(count),
        model=identity.describe() if identity is not None else None,
        failing=failure[0] if failure else None,
        failing_since_ms=failure[1] if failure else None,
    )


def read_lag(db_path: str | Path) -> Lag | None:
    """The follower's lag read from the files (``status``, ``$SRV.STATS``); None when no
    vector file exists (semantic search was never on for this index)."""
    path = vectors.vectors_path(db_path)
    if not path.exists() or not Path(db_path).exists():
        return None
    out = vectors.connect(path, read_only=True)
    store = Database.open(db_path, "read", role="report")
    try:
        if not out.value(tables.TABLE_EXISTS, ("meta",)):
            # The follower has created the file but not yet its tables (one transaction,
            # vectors._DDL): nothing embedded yet.
            return Lag(0, int(store.value(tables.NEWEST_EVENT_ID)), 0)
        return _lag(out, store)
    finally:
        out.close()
        store.close()
