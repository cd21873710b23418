"""The writer's synchronous work on one ``Database`` connection, and the search index it feeds.

Each ``apply`` is one ``BEGIN IMMEDIATE`` transaction that also stores the highest stream
sequence of the batch (``meta.stream_seq``), so a crash replays the batch instead of
losing or doubling it; items at or below the stored sequence are skipped as already
applied. Not thread-safe: an ``IndexWriter``'s transport runs it on one dedicated thread
(``writer.ThreadTransport``) or on a child process's main thread (``writer_child``).

Session rules (each rejection carries a one-line reason for the dead-letter subject):

- A session starts with ``session/start`` at seq 1; any other first event is an unknown
  session, and a later ``session/start`` is refused.
- Seqs are contiguous: seq <= last stored seq is a duplicate (a no-op, delivery is
  at-least-once); a seq beyond last + 1 is a gap.
- ``session/end`` closes the log: later seqs are refused, so ``persisted`` stays true and a
  persisted session never changes under a reader.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Final, ParamSpec, TypeVar

import structlog

from contracts.redaction import REDACTION_ON, RedactionSpec
from worker.retry import SEARCH_INDEX, RetryPolicy
from worker.store import tables
from worker.store.database import INDEX, Database, Pragmas
from worker.store.event_codec import TEXT_CAP_KEY, EventPacker, body_of, preview_key
from worker.store.files.index_file import (
    HISTORY_FROM,
    STREAM_CREATED,
    STREAM_NAME,
    STREAM_PARTITIONS,
    read_meta,
)
from worker.store.index.batch import BatchChecker, CheckedEvent, PreparedBatch
from worker.store.index.writer_fold import (
    SESSION_COLUMNS,
    SESSION_NAMES,
    BatchRows,
    HeaderFold,
    fold_batch,
)
from worker.store.index.writer_limits import DEFAULT_LIMITS, MIB, WriterLimits
from worker.store.index.writer_open import open_existing, prepare_schema
from worker.store.protocol import Generation
from worker.store.search import analysis
from worker.store.search.search_follower import SearchIndexWriter
from worker.store.search.search_schema import search_index_path
from worker.store.writer_protocol import ApplyResult, BatchNotAttempted, IngestItem

log = structlog.get_logger(__name__)

_T = TypeVar("_T")
_P = ParamSpec("_P")

# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK: Final = 500
# The shortest time between two search commits when the writer is quiet (a busy writer
# commits every ``WriterLimits.search_commit_ms``): what is applied is searchable within it.
QUIET_COMMIT_GAP_S: Final = 0.25
# A graceful stop first brings the search index up to the store, for at most this long:
# a busy writer follows it in steps, and what a stop leaves behind the next start indexes.
CLOSE_CATCH_UP_S: Final = 5.0
# The batch's own events (hot in the cache) plus this much backlog per apply, so a rebuild
# of the search index catches up even while batches keep coming.
_SEARCH_BACKLOG_PER_APPLY: Final = 1000

_UPSERT_SESSION: Final = f"""
INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET
    title = excluded.title, availability = excluded.availability,
    updated_ms = excluded.updated_ms, last_seq = excluded.last_seq,
    event_count = excluded.event_count, prompts = excluded.prompts
"""
_SESSION_SELECT: Final = ", ".join(f"{name} AS {name}" for name in SESSION_NAMES)
_INSERT_EVENT: Final = """
INSERT INTO events (id, session_id, seq, event_id, type, surface, time_ms, stream_seq, doc,
    preview_key)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_INSERT_REPLACEMENT: Final = (
    "INSERT OR IGNORE INTO replacements (session_id, seq, replaced_seq) VALUES (?, ?, ?)"
)
_INSERT_CITATION: Final = (
    "INSERT OR IGNORE INTO citations (session_id, seq, cited_session_id, cited_seq)"
    " VALUES (?, ?, ?, ?)"
)
_INSERT_DEADLETTER: Final = (
    "INSERT OR REPLACE INTO deadletters (stream_seq, reason, kind) VALUES (?, ?, ?)"
)
# The highest id ever given (AUTOINCREMENT's record): ids of purged events are never
# reused, so the search index's "every id up to N" stays true.
_LAST_EVENT_ID: Final = (
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),"
    " (SELECT coalesce(max(id), 0) FROM events))"
)


class WriterCore:
    """Checking messages, applying a batch in one transaction, purging; the search index
    follows the store after each."""

    def __init__(
        self,
        conn: Database,
        *,
        text_cap_bytes: int,
        max_event_bytes: int,
        search: SearchIndexWriter | None = None,
        redaction: RedactionSpec = REDACTION_ON,
    ) -> None:
        self.conn = conn
        self.checker = BatchChecker(
            text_cap_bytes=text_cap_bytes,
            max_event_bytes=max_event_bytes,
            redactor=redaction.redactor(),
        )
        self.search = search
        # The event's JSON is stored once, as a zstd frame (event_codec).
        self.packer = EventPacker.of_store(conn, text_cap_bytes=text_cap_bytes)
        # What the readers cut an event's searchable text to (event_codec.EventCodec).
        with conn.transaction():
            conn.run(tables.META_PUT, (TEXT_CAP_KEY, text_cap_bytes))
        # Whether the last apply committed: a chained apply is tried only then.
        self._committed = False
        self._search_retry = _Backoff(SEARCH_INDEX)

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        text_cap_bytes: int,
        max_event_bytes: int,
        expect_index_id: str | None = None,
        redaction: RedactionSpec = REDACTION_ON,
        limits: WriterLimits = DEFAULT_LIMITS,
    ) -> WriterCore:
        """Open (or create) the index. With ``expect_index_id`` (a writer started again
        under a running worker) the file must exist and carry that id: a missing or
        replaced file raises ``IndexFileReplaced`` instead of a fresh empty index.
        ``limits`` bound the writer's memory (``writer_limits``)."""
        location = str(location)
        make = partial(
            cls, text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes, redaction=redaction
        )
        # The analysis caches are the process's (this is the only writer in it).
        analysis.set_cache_limit(limits.analysis_cache_words)
        pragmas = writer_pragmas(limits)
        on_disk = location != ":memory:" and not location.startswith("file:")
        if expect_index_id is not None:
            conn = open_existing(location, expect_index_id, pragmas)
        else:
            if on_disk:
                Path(location).parent.mkdir(parents=True, exist_ok=True)
            conn = Database.open(location, pragmas=pragmas, role="writer")
        try:
            if expect_index_id is None:
                prepare_schema(conn, location)
            # A restarted child follows the search index exactly as a first start does:
            # without it, searches would miss everything ingested after the restart.
            search = None
            if on_disk:
                search = SearchIndexWriter(
                    search_index_path(location),
                    conn,
                    body_cap_bytes=text_cap_bytes - 4,
                    commit_interval_s=limits.search_commit_ms / 1000,
                    heap_bytes=limits.search_heap_mib * MIB,
                )
        except BaseException:
            conn.close()
            raise
        return make(conn, search=search)

    def close(self) -> None:
        if self.search is not None:
            self._catch_up_search(time.monotonic() + CLOSE_CATCH_UP_S)
            self.search.close()
        self.conn.close()

    def _catch_up_search(self, deadline: float) -> None:
        search = self.search
        if search is None or self._search_retry.left() > 0:
            return  # a failing index (a full disk) is left to the next start
        try:
            while search.behind and time.monotonic() < deadline:
                search.follow()
        except Exception as exc:
            search.reset()
            log.warning("search index: catch-up at stop failed", error=_one_line(exc))

    # -- the search index ----------------------------------------------------------------

    def follow_search(self, max_events: int, *, commit: bool) -> None:
        """Bring the search index up to the store (a bounded step); committed when asked
        or when the commit interval has passed. A failure (a full disk) is logged once
        and the step is tried again after a growing wait (``retry.SEARCH_INDEX``); until
        then steps are skipped, so the store's writes, whose commits already stand, go on
        at full speed and the log gets one line per wait, not one per batch."""
        search = self.search
        if search is None or self._search_retry.left() > 0:
            return
        try:
            search.follow(max_events)
            if commit or search.commit_due():
                search.commit()
        except Exception as exc:
            search.reset()
            wait = self._search_retry.failed()
            log.error(
                "search index update failed; it will be retried",
                error=_one_line(exc),
                failures=self._search_retry.failures,
                retry_in_s=round(wait, 2),
                # The first failure in a row is logged with its traceback, the rest without.
                exc_info=self._search_retry.failures == 1,
            )
            return
        if self._search_retry.failures:
            log.warning("search index updated again", failures=self._search_retry.failures)
            self._search_retry.succeeded()

    def catch_up_search(self) -> None:
        """Index everything the store holds and the search index lacks (a rebuild after a
        new or outdated search index), logging progress."""
        if self.search is None or not self.search.behind:
            return
        started = time.monotonic()
        try:
            total = self.search.catch_up()
        except Exception:
            # Resume from the last commit: what the failed writer held is gone with it.
            self.search.reset()
            raise
        log.info(
            "search index caught up", events=total, seconds=round(time.monotonic() - started, 1)
        )

    def search_pending(self) -> bool:
        """Whether the search index has uncommitted work or the store holds more."""
        search = self.search
        return search is not None and (search.dirty or search.behind)

    def search_wait(self, idle_s: float) -> float | None:
        """How long a quiet pipe may be waited on before the next search step: None when
        the search index has nothing to do; the wait left after a failure; 0 when the
        commit interval has passed (requests kept the writer busy); else ``idle_s``."""
        if not self.search_pending():
            return None
        left = self._search_retry.left()
        if left > 0:
            return left
        assert self.search is not None  # pending implies a search index
        if self.search.interval_passed():
            return 0.0
        # A quiet pipe commits at once, but never sooner than QUIET_COMMIT_GAP_S after the
        # last commit: a slow, steady feed (an import on a loaded machine) went quiet after
        # nearly every batch, and a commit per batch cost more than indexing it.
        return max(idle_s, QUIET_COMMIT_GAP_S - self.search.since_commit())

    # -- meta ----------------------------------------------------------------------------

    def meta(self, key: str) -> int:
        return int(self.conn.value(tables.META_VALUE, (key,)) or 0)

    def info(self) -> dict[str, object]:
        """The ``meta`` table (stream identity, sequence, epoch, index id)."""
        return read_meta(self.conn)

    def generation(self) -> Generation:
        return Generation(epoch=self.meta("epoch"), seq=self.meta("stream_seq"))

    def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]:
        """Record which stream this index replicates, and which of its partitions, in one
        transaction with the stream sequence. An empty index on a stream whose first
        sequence is past 1 records that history before it is unavailable and starts right
        before it."""
        return self._transaction(self._bind_sync, name, created, first_seq, partitions)

    def _bind_sync(
        self, name: str, created: str, first_seq: int, partitions: str
    ) -> dict[str, object]:
        put = partial(self.conn.run, tables.META_PUT)
        put((STREAM_NAME, name))
        put((STREAM_CREATED, created))
        put((STREAM_PARTITIONS, partitions))
        if self.meta("stream_seq") == 0 and first_seq > 1:
            put((HISTORY_FROM, first_seq))
            put(("stream_seq", first_seq - 1))
        return self.info()

    # -- apply ---------------------------------------------------------------------------

    def prepare(self, items: Sequence[IngestItem]) -> PreparedBatch:
        return self.checker.prepare(items)

    def apply(
        self, batch: PreparedBatch, *, commit_search: bool = False, chained: bool = False
    ) -> ApplyResult:
        """One transaction; the stored stream sequence moves with the events. The search
        index then takes the batch; it is committed now with ``commit_search``, else when
        the commit interval passed (the writer process also commits when idle).

        ``chained``: the batch was sent while the one before it was still being applied;
        it is tried only if that one committed (``BatchNotAttempted`` otherwise), so a
        batch never overtakes one that must be retried."""
        if chained and not self._committed:
            raise BatchNotAttempted("the batch before it was not applied")
        self._committed = False
        if not batch.items:
            result = ApplyResult(applied=0, duplicates=0, last_stream_seq=self.meta("stream_seq"))
        else:
            texts: dict[int, str] = {}
            result = self._transaction(self._apply_sync, batch, texts)
            if self.search is not None:
                # Only once committed: a rolled back batch's ids are given again.
                self.search.hint(texts)
            self.follow_search(result.applied + _SEARCH_BACKLOG_PER_APPLY, commit=commit_search)
        self._committed = True
        return result

    def _transaction(self, body: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        with self.conn.transaction():
            return body(*args, **kwargs)

    def _apply_sync(self, batch: PreparedBatch, texts: dict[int, str]) -> ApplyResult:
        stored_seq = self.meta("stream_seq")
        fresh = [p for p in batch.items if p.stream_seq > stored_seq]
        sessions = self._load_sessions({p.session_id for p in fresh if isinstance(p, CheckedEvent)})
        rows = fold_batch(
            fresh,
            sessions,
            next_id=int(self.conn.value(_LAST_EVENT_ID)) + 1,
        )
        self._write(rows, texts)
        last = max(stored_seq, max(p.stream_seq for p in batch.items))
        if last != stored_seq:
            self.conn.run(tables.META_SET, (last, "stream_seq"))
        return ApplyResult(
            applied=len(rows.events),
            duplicates=rows.duplicates + len(batch.items) - len(fresh),
            rejected=tuple(rows.rejected),
            last_stream_seq=last,
        )

    def _write(self, rows: BatchRows, texts: dict[int, str]) -> None:
        """Write the rows; ``texts`` gets each event's searchable text by id (at the store's
        cap) when a search index follows: derived once here for the packer, the preview key
        and the index, which would otherwise each parse the JSON again (the index after
        decompressing it)."""
        conn = self.conn
        if rows.events:
            pack = self.packer.pack
            if self.search is None or self.search.text_cap != self.packer.text_cap:
                values = [
                    (*r[:8], pack(r[8], r[4]), preview_key(r[8], r[4], r[5])) for r in rows.events
                ]
            else:
                cap = self.packer.text_cap
                values = []
                for r in rows.events:
                    texts[r[0]] = body = body_of(r[4], r[8], cap)
                    values.append(
                        (*r[:8], pack(r[8], r[4], body), preview_key(r[8], r[4], r[5], body))
                    )
            conn.run_many(_INSERT_EVENT, values)
            self.packer.store(conn)
        if rows.replacements:
            conn.run_many(_INSERT_REPLACEMENT, rows.replacements)
        if rows.citations:
            conn.run_many(_INSERT_CITATION, rows.citations)
        if rows.sessions:
            conn.run_many(_UPSERT_SESSION, [s.row() for s in rows.sessions])
        if rows.rejected:
            conn.run_many(_INSERT_DEADLETTER, rows.deadletters())

    def _load_sessions(self, ids: Iterable[str]) -> dict[str, HeaderFold]:
        wanted = sorted(ids)
        found: dict[str, HeaderFold] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_SESSION_SELECT} FROM sessions WHERE session_id IN ({marks})"
            stored, at = self.conn.rows(sql, chunk)
            values = at.getter(SESSION_NAMES)  # in HeaderFold's field order
            for r in stored:
                header = HeaderFold(*values(r))
                found[header.session_id] = header
        return found

    # -- purge ---------------------------------------------------------------------------

    def purge(self, session_ids: Sequence[str] = (), older_than_ms: int | None = None) -> int:
        """Remove the named sessions and those last updated before ``older_than_ms``.

        Relations recorded by the removed sessions go with them; citations other sessions
        hold towards them stay (the read side reports those sessions as not indexed).
        The epoch is bumped only when something was removed.
        """
        if not session_ids and older_than_ms is None:
            return 0
        count = self._transaction(self._purge_sync, tuple(session_ids), older_than_ms)
        if count:
            self.follow_search(0, commit=True)
        return count

    def _purge_sync(self, session_ids: tuple[str, ...], older_than_ms: int | None) -> int:
        conn = self.conn
        conn.run("CREATE TEMP TABLE IF NOT EXISTS purge_ids (session_id TEXT PRIMARY KEY)")
        conn.run("DELETE FROM temp.purge_ids")
        pick = "INSERT OR IGNORE INTO temp.purge_ids SELECT session_id FROM sessions WHERE "
        if session_ids:
            conn.run_many(pick + "session_id = ?", [(sid,) for sid in session_ids])
        if older_than_ms is not None:
            conn.run(pick + "updated_ms < ?", (older_than_ms,))
        count = int(conn.value("SELECT count(*) FROM temp.purge_ids"))
        if count:
            scope = "session_id IN (SELECT session_id FROM temp.purge_ids)"
            # The search index deletes these in turn (search_follower.SearchIndexWriter).
            conn.run(
                "INSERT INTO search_deletions (session_id) SELECT session_id FROM temp.purge_ids"
            )
            for table in ("events", "replacements", "citations", "sessions"):
                conn.run(f"DELETE FROM {table} WHERE {scope}")
            conn.run(tables.META_NEXT_EPOCH)
        conn.run("DELETE FROM temp.purge_ids")
        return count


def writer_pragmas(limits: WriterLimits) -> Pragmas:
    """The index's pragmas with the writer's page cache and memory map bounds."""
    return dataclasses.replace(
        INDEX, mmap_bytes=limits.sqlite_mmap_mib * MIB, cache_kib=limits.sqlite_cache_mib * 1024
    )


class _Backoff:
    """The waits between failed search index steps, by ``policy``."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self.failures = 0
        self._retry_at = 0.0

    def left(self) -> float:
        """Seconds until the next step may run (0 when it may run now)."""
        return max(0.0, self._retry_at - time.monotonic()) if self.failures else 0.0

    def failed(self) -> float:
        self.failures += 1
        wait = self._policy.wait(self.failures)
        self._retry_at = time.monotonic() + wait
        return wait

    def succeeded(self) -> None:
        self.failures = 0
        self._retry_at = 0.0


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
