"""The search index's follower: ``SearchIndexWriter`` keeps the tantivy index of
``search_schema`` equal to the SQLite store.

**Exactly once.** The index follows the store's ``events`` table by id (ids only grow:
``AUTOINCREMENT``) and applies the store's ``search_deletions`` (written by purge in the
purge's own transaction). Each commit also stores, in one reserved document, the highest
event id and deletion id it covers and the store's stream sequence then, so after a crash
at any point the follower resumes from what the index really holds: nothing is lost or
doubled. An index of another version, or made from another store file (the store's
``index_uid``), is rebuilt from the store.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import structlog
import tantivy

from worker.store import tables
from worker.store.database import Database
from worker.store.search.search_schema import (
    BODY_CAP_MARGIN,
    POSITION_SID,
    SEARCH_INDEX_VERSION,
    Position,
    event_document,
    open_index,
    read_position,
)

log = structlog.get_logger(__name__)

_VERSION_FILE: Final = "sessionquery-search.json"
_WRITER_HEAP_BYTES: Final = 32 * 2**20  # the default; the writer's limits set it
_FOLLOW_CHUNK: Final = 2000


class SearchIndexWriter:
    """The follower that keeps the search index equal to the store. One per index; it runs
    wherever the store's single writer runs, on that writer's connection."""

    def __init__(
        self,
        path: Path,
        conn: Database,
        *,
        body_cap_bytes: int,
        commit_interval_s: float = 0.25,
        heap_bytes: int = _WRITER_HEAP_BYTES,
    ) -> None:
        self._path = path
        self._conn = conn
        self._body_cap = body_cap_bytes
        self._commit_interval = commit_interval_s
        self._heap_bytes = heap_bytes
        uid = _store_uid(conn)
        self._index = self._open_or_rebuild(uid)
        # None after a failed step: a tantivy writer whose worker thread failed (a full
        # disk) is dead for good ("An index writer was killed"), so the next step makes a
        # new one, which works again once there is room.
        self._writer: tantivy.IndexWriter | None = self._new_writer()
        self._index.config_reader("Manual")
        self._index.reload()
        committed = read_position(self._index.searcher())
        self._position = Position(
            committed.event_id, committed.deletion_id, committed.stream_seq, uid
        )
        self._committed = self._position
        self._catch_up_log = _CatchUpLog()
        self._dirty = committed.uid != uid  # a fresh index records its uid at once
        self._last_commit = time.monotonic()
        self._hints: dict[int, str] = {}

    def _open_or_rebuild(self, uid: int) -> tantivy.Index:
        reason = _stale_reason(self._path, uid)
        if reason is not None:
            if self._path.exists():
                log.warning("rebuilding the search index", path=str(self._path), reason=reason)
                shutil.rmtree(self._path)
            self._path.mkdir(parents=True)
            (self._path / _VERSION_FILE).write_text(
                json.dumps({"version": SEARCH_INDEX_VERSION, "uid": uid})
            )
        return open_index(self._path)

    def _new_writer(self) -> tantivy.IndexWriter:
        return self._index.writer(heap_size=self._heap_bytes, num_threads=1)

    def _live_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self._new_writer()
        return self._writer

    @property
    def position(self) -> Position:
        return self._position

    @property
    def behind(self) -> bool:
        """Whether the store holds events or deletions the index has not taken yet."""
        found, at = self._conn.rows(tables.SEARCH_AHEAD)
        row, position = found[0], self._position
        return bool(
            row[at["event_id"]] > position.event_id
            or row[at["deletion_id"]] > position.deletion_id
            # messages that added no event still count
            or row[at["stream_seq"]] > position.stream_seq
        )

    @property
    def dirty(self) -> bool:
        return self._dirty

    @property
    def text_cap(self) -> int:
        """The cap of the searchable text ``event_document`` derives (``hint``'s texts)."""
        return self._body_cap + BODY_CAP_MARGIN

    def hint(self, texts: dict[int, str]) -> None:
        """The searchable text (at the store's cap) of events just committed to the store,
        by id: ``follow`` takes them instead of decompressing and parsing those events'
        JSON again. Only the last batch's are held (a follower far behind reads the rest)."""
        self._hints = texts

    def follow(self, max_events: int = _FOLLOW_CHUNK) -> int:
        """Take up to ``max_events`` new events (and every new deletion) from the store.
        Nothing is visible to searches before ``commit``. Returns the events added."""
        conn = self._conn
        writer = self._live_writer()
        stream_seq = int(conn.value(tables.META_VALUE, ("stream_seq",)))
        deletion_id = self._apply_deletions(writer)
        rows, at = conn.rows(
            tables.SEARCH_DOCS_AFTER,
            {
                "after": self._position.event_id,
                "limit": max_events,
                "prompts": tables.TITLE_PROMPTS,
            },
        )
        values = at.getter(tables.SEARCH_DOC_NAMES)
        hints, json_of, cap = self._hints, conn.codec.json, self._body_cap
        for row in rows:
            fields = values(row)
            body = hints.get(fields[0])
            # The JSON only when there is no text, or the text may be cut (its whole is then
            # indexed): ``event_document``'s test, loosened to characters.
            raw = "" if body is not None and 4 * len(body) < cap else json_of(fields[8])
            doc = event_document((*fields[:8], raw, *fields[9:]), cap, body)
            writer.add_document(doc)
        last_id = int(rows[-1][at["id"]]) if rows else self._position.event_id
        if rows and len(rows) == max_events:
            # More may follow: the stream sequence covered is the last added event's.
            stream_seq = int(rows[-1][at["stream_seq"]])
        if (
            rows
            or deletion_id != self._position.deletion_id
            or stream_seq != self._position.stream_seq
        ):
            self._dirty = True
        if self._dirty:
            self._position = Position(last_id, deletion_id, stream_seq, self._position.uid)
        self._catch_up_log.step(len(rows), lambda: self._remaining(last_id))
        return len(rows)

    def _remaining(self, last_id: int) -> int:
        return int(self._conn.value("SELECT count(*) FROM events WHERE id > ?", (last_id,)))

    def _apply_deletions(self, writer: tantivy.IndexWriter) -> int:
        rows, at = self._conn.rows(tables.DELETIONS_AFTER, (self._position.deletion_id,))
        session_id = at["session_id"]
        for row in rows:
            writer.delete_documents_by_term("sid", row[session_id])
        return int(rows[-1][at["id"]]) if rows else self._position.deletion_id

    def commit(self) -> None:
        """Publish what was added, with the position it covers, atomically."""
        if not self._dirty:
            return
        position = self._position
        writer = self._live_writer()
        writer.delete_documents_by_term("sid", POSITION_SID)
        meta = tantivy.Document()
        meta.add_text("sid", POSITION_SID)
        meta.add_unsigned("id", position.event_id)
        meta.add_unsigned("deleted", position.deletion_id)
        meta.add_unsigned("sseq", position.stream_seq)
        meta.add_unsigned("uid", position.uid)
        writer.add_document(meta)
        writer.commit()
        self._committed = position
        self._dirty = False
        self._last_commit = time.monotonic()

    def reset(self) -> None:
        """Drop what was added since the last commit, and resume from that commit: a
        failed step is then re-done whole, never half twice. The writer goes with it
        (dropping it discards its uncommitted work and releases the index lock): one that
        failed may be dead, and a rollback does not always revive it."""
        self._writer = None
        self._position = self._committed
        self._dirty = True  # re-commits the position: harmless, and always consistent

    def commit_due(self) -> bool:
        return self._dirty and self.interval_passed()

    def interval_passed(self) -> bool:
        return self.since_commit() >= self._commit_interval

    def since_commit(self) -> float:
        """Seconds since the last commit."""
        return time.monotonic() - self._last_commit

    def catch_up(self) -> int:
        """Follow until nothing is left, committing as it goes. Returns events added."""
        total = 0
        while True:
            added = self.follow()
            total += added
            if added < _FOLLOW_CHUNK:
                break
            if self.commit_due():
                self.commit()
        self.commit()
        return total

    def close(self) -> None:
        """Commit what was taken, then release the index (its lock) for the next writer."""
        try:
            self.commit()
        except Exception:
            log.warning(
                "search index: last commit failed; it resumes from the one before", exc_info=True
            )
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.wait_merging_threads()


class _CatchUpLog:
    """Logs a long catch-up (a rebuild) every few seconds: done, left, rate, ETA."""

    _EVERY_S: Final = 5.0
    _BIG_STEP: Final = 1000  # steps this large mean a backlog, not live ingestion

    def __init__(self) -> None:
        self._started: float | None = None
        self._done = 0
        self._logged = 0.0

    def step(self, added: int, remaining: Callable[[], int]) -> None:
        now = time.monotonic()
        if self._started is None:
            if added < self._BIG_STEP:
                return
            self._started, self._logged = now, now
        self._done += added
        if added < self._BIG_STEP:
            log.info(
                "search index caught up",
                events=self._done,
                seconds=round(now - self._started, 1),
            )
            self._started, self._done = None, 0
            return
        if now - self._logged >= self._EVERY_S:
            left = remaining()
            rate = self._done / max(now - self._started, 1e-6)
            log.info(
                "search index catching up",
                events=self._done,
                remaining=left,
                events_per_s=round(rate),
                eta_s=round(left / rate) if rate else None,
            )
            self._logged = now


def _store_uid(conn: Database) -> int:
    return int(conn.value(tables.META_VALUE, ("index_uid",)) or 0)


def _stale_reason(path: Path, uid: int) -> str | None:
    version_file = path / _VERSION_FILE
    try:
        recorded = json.loads(version_file.read_text())
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError):
        return "unreadable version file"
    if not isinstance(recorded, dict) or recorded.get("version") != SEARCH_INDEX_VERSION:
        return f"version {recorded.get('version') if isinstance(recorded, dict) else '?'}"
    if recorded.get("uid") != uid:
        return "made from another store file"
    return None
