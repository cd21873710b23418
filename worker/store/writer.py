"""The single writer of the index: validates and applies batches of stream messages.

``WriterCore`` is the synchronous work on one sqlite3 connection. Each ``apply`` is one
``BEGIN IMMEDIATE`` transaction that also stores the highest stream sequence of the batch
(``meta.stream_seq``), so a crash replays the batch instead of losing or doubling it; items
at or below the stored sequence are skipped as already applied. ``SqliteIndexWriter`` runs
it on one dedicated thread of this process, a whole transaction as a single call (not
aiosqlite, whose one-hop-per-statement model left the SQLite thread idle while the event
loop parsed the next batch: measured about half the throughput);
``worker.store.writer_process`` runs it in a child process.

Validation decisions (each rejection carries a one-line reason for the dead-letter subject):

- A session starts with ``session/start`` at seq 1; any other first event is an unknown
  session, and a later ``session/start`` is refused.
- Seqs are contiguous: seq <= last stored seq is a duplicate (a no-op, delivery is
  at-least-once); a seq beyond last + 1 is a gap.
- ``session/end`` closes the log: later seqs are refused, so ``persisted`` stays true and a
  persisted session never changes under a reader.
- ``replaces`` must name earlier positions of the same session.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, TypeVar

import orjson
import structlog
from pydantic import ValidationError

from contracts.events import SessionEvent
from contracts.ids import ID_PATTERN
from worker.store import index_file, schema
from worker.store.errors import IndexFileReplaced as IndexFileReplaced
from worker.store.protocol import (
    ApplyResult,
    Availability,
    Generation,
    IngestItem,
    Rejected,
    SessionIndexWriter,
)
from worker.store.search_index import SearchIndexWriter, search_index_path
from worker.store.text import searchable_text

log = structlog.get_logger(__name__)

_T = TypeVar("_T")

MAX_INT64: Final = 2**63 - 1
MAX_REASON_CHARS: Final = 1000
# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK: Final = 500

_SESSION_COLUMNS: Final = (
    "session_id, cwd, ws, parent_session_id, title, availability,"
    " created_ms, updated_ms, last_seq, event_count"
)
_UPSERT_SESSION: Final = f"""
INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET
    title = excluded.title, availability = excluded.availability,
    updated_ms = excluded.updated_ms, last_seq = excluded.last_seq,
    event_count = excluded.event_count
"""
_INSERT_EVENT: Final = """
INSERT INTO events (id, session_id, seq, event_id, type, surface, time_ms, stream_seq,
                    body, raw_json)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


@dataclass(slots=True)
class _Session:
    """A session's header while a batch folds into it (mutable on purpose, batch-local)."""

    session_id: str
    cwd: str | None
    ws: str
    parent_session_id: str | None
    title: str | None
    availability: Availability
    created_ms: int | None
    updated_ms: int | None
    last_seq: int
    event_count: int

    def row(self) -> tuple[Any, ...]:
        return (
            self.session_id,
            self.cwd,
            self.ws,
            self.parent_session_id,
            self.title,
            self.availability,
            self.created_ms,
            self.updated_ms,
            self.last_seq,
            self.event_count,
        )


@dataclass(slots=True)  # not frozen: built once per event, and a frozen __init__ is slower
class _Parsed:
    """What the write needs of one checked event, flat: the pydantic model and its payload
    tree are dropped at once instead of surviving until the commit, where the cyclic GC
    would walk them (measured a large share of the preparation time)."""

    stream_seq: int
    data: bytes  # the message as received (for a dead letter)
    session_id: str
    seq: int
    event_id: str
    type: str
    surface: str
    time_ms: int
    raw_json: str
    body: str | None  # searchable text; None: left to the writer (``BatchChecker(text=)``)
    replaces: tuple[int, ...]
    cites: tuple[tuple[str, int], ...]
    # Header fields carried by the payload (shapes checked by parse_event).
    cwd: str | None = None  # session/start
    parent_session_id: str | None = None  # session/start
    title: str | None = None  # session/title


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch checked message by message, ready for ``apply_prepared``.

    Preparing needs no database, so ingestion prepares the next batch while the previous
    one is being written.
    """

    items: tuple[_Parsed | Rejected, ...]


def batch_rows(batch: PreparedBatch) -> list[tuple[Any, ...]]:
    """A prepared batch as plain tuples (for the writer process's pipe): a rejected message
    is ``(stream_seq, reason)``, a checked one ``_Parsed``'s fields after its data."""
    rows: list[tuple[Any, ...]] = []
    for p in batch.items:
        if isinstance(p, Rejected):
            rows.append((p.stream_seq, p.reason))
        else:
            rows.append(
                (
                    p.stream_seq,
                    p.session_id,
                    p.seq,
                    p.event_id,
                    p.type,
                    p.surface,
                    p.time_ms,
                    p.raw_json,
                    p.body,
                    p.replaces,
                    p.cites,
                    p.cwd,
                    p.parent_session_id,
                    p.title,
                )
            )
    return rows


def batch_from_rows(rows: Sequence[tuple[Any, ...]]) -> PreparedBatch:
    """``batch_rows`` undone; the messages' bytes stay with the sender (empty here)."""
    items: list[_Parsed | Rejected] = []
    for row in rows:
        if len(row) == 2:
            items.append(Rejected(row[0], b"", row[1]))
        else:
            items.append(_Parsed(row[0], b"", *row[1:]))
    return PreparedBatch(items=tuple(items))


class BatchChecker:
    """Checks messages one by one (no database): CPU only, so it can run apart from the
    transaction, on another thread or in another process."""

    def __init__(self, *, text_cap_bytes: int, max_event_bytes: int, text: bool = True) -> None:
        self._text_cap_bytes = text_cap_bytes
        self._max_event_bytes = max_event_bytes
        # False: the searchable text is left for the writer to derive from the raw JSON
        # (the writer process does, so the two sides of its pipe share the work evenly).
        self._text = text

    def prepare(self, items: Sequence[IngestItem]) -> PreparedBatch:
        return PreparedBatch(items=tuple(self._parse(item) for item in items))

    def _parse(self, item: IngestItem) -> _Parsed | Rejected:
        outcome = parse_event(item.data, max_event_bytes=self._max_event_bytes)
        if isinstance(outcome, str):
            return _reject(item.stream_seq, item.data, outcome)
        event, text = outcome
        if item.subject is not None and item.subject.rsplit(".", 1)[-1] != event.session_id:
            return _reject(
                item.stream_seq,
                item.data,
                f"subject {item.subject} does not match session_id {event.session_id}",
            )
        payload = event.payload
        kind = event.type
        parsed = _Parsed(
            item.stream_seq,
            item.data,
            event.session_id,
            event.seq,
            event.event_id,
            kind,
            event.surface.value,
            event.time_ms,
            text,
            searchable_text(_indexed_payload(event.type, event.payload), self._text_cap_bytes)
            if self._text
            else None,
            tuple(dict.fromkeys(event.replaces)) if event.replaces else (),
            tuple((c.session_id, c.seq) for c in event.cites) if event.cites else (),
        )
        if kind == "session/start":
            parsed.cwd = payload.get("cwd")
            parsed.parent_session_id = payload.get("parent_session_id")
        elif kind == "session/title":
            parsed.title = payload.get("title")
        return parsed


class WriterCore:
    """The writer's synchronous work on one sqlite3 connection: checking messages, applying
    a batch in one transaction, purging. Not thread-safe: ``SqliteIndexWriter`` runs it on
    one dedicated thread, the writer process (``worker.store.writer_process``) on its main
    thread."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        text_cap_bytes: int,
        max_event_bytes: int,
        search: SearchIndexWriter | None = None,
    ) -> None:
        self.conn = conn
        self.checker = BatchChecker(text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes)
        self._text_cap_bytes = text_cap_bytes
        self.search = search

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        text_cap_bytes: int,
        max_event_bytes: int,
        expect_index_id: str | None = None,
    ) -> WriterCore:
        """Open (or create) the index. With ``expect_index_id`` (a writer started again
        under a running worker) the file must exist and carry that id: a missing or
        replaced file raises ``IndexFileReplaced`` instead of a fresh empty index."""
        location = str(location)
        if expect_index_id is not None:
            return cls(
                _open_existing(location, expect_index_id),
                text_cap_bytes=text_cap_bytes,
                max_event_bytes=max_event_bytes,
            )
        if location != ":memory:" and not location.startswith("file:"):
            Path(location).parent.mkdir(parents=True, exist_ok=True)
        conn = schema.connect(location)
        try:
            _prepare_schema(conn, location)
            search = None
            if location != ":memory:" and not location.startswith("file:"):
                search = SearchIndexWriter(
                    search_index_path(location), conn, body_cap_bytes=text_cap_bytes - 4
                )
        except BaseException:
            conn.close()
            raise
        return cls(
            conn, text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes, search=search
        )

    def close(self) -> None:
        if self.search is not None:
            self.search.close()
        self.conn.close()

    # -- the search index ----------------------------------------------------------------

    def follow_search(self, max_events: int, *, commit: bool) -> None:
        """Bring the search index up to the store (a bounded step); committed when asked
        or when the commit interval has passed. A failure is logged and retried on the
        next step: the store's own commit already stands."""
        search = self.search
        if search is None:
            return
        try:
            search.follow(max_events)
            if commit or search.commit_due():
                search.commit()
        except Exception:
            log.error("search index update failed; it will be retried", exc_info=True)
            search.reset()

    def catch_up_search(self) -> None:
        """Index everything the store holds and the search index lacks (a rebuild after a
        new or outdated search index), logging progress."""
        if self.search is None or not self.search.behind:
            return
        started = time.monotonic()
        total = self.search.catch_up()
        log.info(
            "search index caught up", events=total, seconds=round(time.monotonic() - started, 1)
        )

    def search_pending(self) -> bool:
        """Whether the search index has uncommitted work or the store holds more."""
        search = self.search
        return search is not None and (search.dirty or search.behind)

    def search_overdue(self) -> bool:
        """Pending for longer than the commit interval (requests kept the writer busy)."""
        search = self.search
        return search is not None and search.interval_passed() and self.search_pending()

    def meta(self, key: str) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def info(self) -> dict[str, object]:
        """The ``meta`` table (stream identity, sequence, epoch, index id)."""
        return {str(k): v for k, v in self.conn.execute("SELECT key, value FROM meta")}

    def bind_stream(self, name: str, created: str, first_seq: int) -> dict[str, object]:
        """Record which stream this index replicates, in one transaction with the stream
        sequence. An empty index on a stream whose first sequence is past 1 records that
        history before it is unavailable and starts right before it."""
        return self._transaction(self._bind_sync, name, created, first_seq)

    def _bind_sync(self, name: str, created: str, first_seq: int) -> dict[str, object]:
        conn = self.conn
        put = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
        conn.execute(put, (index_file.STREAM_NAME, name))
        conn.execute(put, (index_file.STREAM_CREATED, created))
        if self.meta("stream_seq") == 0 and first_seq > 1:
            conn.execute(put, (index_file.HISTORY_FROM, first_seq))
            conn.execute(put, ("stream_seq", first_seq - 1))
        return self.info()

    def generation(self) -> Generation:
        return Generation(epoch=self.meta("epoch"), seq=self.meta("stream_seq"))

    # -- apply ---------------------------------------------------------------------------

    def prepare(self, items: Sequence[IngestItem]) -> PreparedBatch:
        return self.checker.prepare(items)

    def apply(self, batch: PreparedBatch, *, commit_search: bool = False) -> ApplyResult:
        """One transaction; the stored stream sequence moves with the events. The search
        index then takes the batch; it is committed now with ``commit_search``, else when
        the commit interval passed (the writer process also commits when idle)."""
        if not batch.items:
            return ApplyResult(applied=0, duplicates=0, last_stream_seq=self.meta("stream_seq"))
        result = self._transaction(self._apply_sync, batch.items)
        # The batch's own events (hot in the cache) plus some backlog, so a rebuild
        # catches up even while batches keep coming.
        self.follow_search(result.applied + 1000, commit=commit_search)
        return result

    def _transaction(self, body: Callable[..., _T], *args: Any) -> _T:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body(*args)
            conn.execute("COMMIT")
        except BaseException:
            # SQLite rolls back by itself on some errors (disk full, I/O): nothing is open
            # then, and a ROLLBACK would only fail with "no transaction is active".
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    log.warning("rollback failed", exc_info=True)
            raise
        return result

    def _apply_sync(self, parsed: tuple[_Parsed | Rejected, ...]) -> ApplyResult:
        conn = self.conn
        stored_seq = self.meta("stream_seq")
        fresh = [p for p in parsed if p.stream_seq > stored_seq]
        skipped = len(parsed) - len(fresh)
        sessions = self._load_sessions({p.session_id for p in fresh if isinstance(p, _Parsed)})
        # The highest id ever given (AUTOINCREMENT's record): ids of purged events are
        # never reused, so the search index's "every id up to N" stays true.
        row = conn.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),"
            " (SELECT coalesce(max(id), 0) FROM events))"
        ).fetchone()
        next_id = int(row[0]) + 1

        events: list[tuple[Any, ...]] = []
        replacements: list[tuple[str, int, int]] = []
        citations: list[tuple[str, int, str, int]] = []
        touched: dict[str, _Session] = {}
        rejected: list[Rejected] = []
        duplicates = skipped
        for p in fresh:
            if isinstance(p, Rejected):
                rejected.append(p)
                continue
            sid = p.session_id
            session = sessions.get(sid)
            if session is not None and p.seq <= session.last_seq:
                duplicates += 1
                continue
            outcome = self._fold(session, p)
            if isinstance(outcome, str):
                rejected.append(_reject(p.stream_seq, p.data, outcome))
                continue
            session = outcome
            sessions[sid] = session
            touched[sid] = session
            events.append(
                (
                    next_id,
                    sid,
                    p.seq,
                    p.event_id,
                    p.type,
                    p.surface,
                    p.time_ms,
                    p.stream_seq,
                    p.body if p.body is not None else self._text_of(p),
                    p.raw_json,
                )
            )
            next_id += 1
            if p.replaces:
                replacements.extend((sid, p.seq, pos) for pos in p.replaces)
            if p.cites:
                citations.extend((sid, p.seq, c_sid, c_seq) for c_sid, c_seq in p.cites)

        if events:
            conn.executemany(_INSERT_EVENT, events)
        if replacements:
            conn.executemany(
                "INSERT OR IGNORE INTO replacements (session_id, seq, replaced_seq)"
                " VALUES (?, ?, ?)",
                replacements,
            )
        if citations:
            conn.executemany(
                "INSERT OR IGNORE INTO citations (session_id, seq, cited_session_id, cited_seq)"
                " VALUES (?, ?, ?, ?)",
                citations,
            )
        if touched:
            conn.executemany(_UPSERT_SESSION, [s.row() for s in touched.values()])
        if rejected:
            conn.executemany(
                "INSERT OR REPLACE INTO deadletters (stream_seq, reason, kind) VALUES (?, ?, ?)",
                [(r.stream_seq, r.reason, reason_kind(r.reason)) for r in rejected],
            )
        last = max(stored_seq, max(p.stream_seq for p in parsed))
        if last != stored_seq:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'stream_seq'", (last,))
        return ApplyResult(
            applied=len(events),
            duplicates=duplicates,
            rejected=tuple(rejected),
            last_stream_seq=last,
        )

    def _text_of(self, p: _Parsed) -> str:
        return searchable_text(
            _indexed_payload(p.type, _payload_of(p.raw_json)), self._text_cap_bytes
        )

    def _fold(self, session: _Session | None, ev: _Parsed) -> _Session | str:
        """The session's header with ``ev`` folded in, or why ``ev`` is refused."""
        sid = ev.session_id
        if session is None:
            if ev.type != "session/start":
                return f"unknown session {sid}: seq {ev.seq} ({ev.type}) before its session/start"
            if ev.seq != 1:
                return f"session/start at seq {ev.seq} in session {sid}: it must be seq 1"
            cwd = ev.cwd
            return _Session(
                session_id=sid,
                cwd=cwd,
                ws=schema.workspace_token(cwd),
                parent_session_id=ev.parent_session_id,
                title=None,
                availability="live",
                created_ms=ev.time_ms,
                updated_ms=ev.time_ms,
                last_seq=1,
                event_count=1,
            )
        if session.availability == "persisted":
            return (
                f"session {sid} ended at seq {session.last_seq}:"
                f" seq {ev.seq} arrived after its session/end"
            )
        if ev.seq != session.last_seq + 1:
            return f"gap in session {sid}: expected seq {session.last_seq + 1}, got {ev.seq}"
        if ev.type == "session/start":
            return f"session/start at seq {ev.seq} in session {sid}: it must be seq 1"
        # Every check passed: fold in place (the object is batch-local).
        if ev.type == "session/title":
            session.title = ev.title
        elif ev.type == "session/end":
            session.availability = "persisted"
        if session.updated_ms is None or ev.time_ms > session.updated_ms:
            session.updated_ms = ev.time_ms
        session.last_seq = ev.seq
        session.event_count += 1
        return session

    def _load_sessions(self, ids: Iterable[str]) -> dict[str, _Session]:
        wanted = sorted(ids)
        found: dict[str, _Session] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id IN ({marks})"
            for r in self.conn.execute(sql, chunk):
                found[r[0]] = _Session(*r)
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
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_ids (session_id TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM temp.purge_ids")
        if session_ids:
            conn.executemany(
                "INSERT OR IGNORE INTO temp.purge_ids SELECT session_id FROM sessions"
                " WHERE session_id = ?",
                [(sid,) for sid in session_ids],
            )
        if older_than_ms is not None:
            conn.execute(
                "INSERT OR IGNORE INTO temp.purge_ids SELECT session_id FROM sessions"
                " WHERE updated_ms < ?",
                (older_than_ms,),
            )
        count = int(conn.execute("SELECT count(*) FROM temp.purge_ids").fetchone()[0])
        if count:
            scope = "session_id IN (SELECT session_id FROM temp.purge_ids)"
            # The search index deletes these in turn (search_index.SearchIndexWriter).
            conn.execute(
                "INSERT INTO search_deletions (session_id) SELECT session_id FROM temp.purge_ids"
            )
            conn.execute(f"DELETE FROM events WHERE {scope}")
            conn.execute(f"DELETE FROM replacements WHERE {scope}")
            conn.execute(f"DELETE FROM citations WHERE {scope}")
            conn.execute(f"DELETE FROM sessions WHERE {scope}")
            conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'epoch'")
        conn.execute("DELETE FROM temp.purge_ids")
        return count


class WriterLifecycle:
    """What both index writers share: commit listeners and ``async with`` closing."""

    _listeners: list[Callable[[], None]]

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def add_commit_listener(self, callback: Callable[[], None]) -> None:
        """Called after every committed apply or purge (e.g. the readers' notify_commit)."""
        self._listeners.append(callback)


class SqliteIndexWriter(WriterLifecycle, SessionIndexWriter):
    """The index's only writer, on a thread of this process. Use
    ``await SqliteIndexWriter.open(path)``. (The worker ingests through
    ``worker.store.writer_process.ProcessIndexWriter``, the same work in a child process.)"""

    def __init__(self, core: WriterCore, executor: ThreadPoolExecutor) -> None:
        self._core = core  # used only on ``executor``'s one thread
        self._executor = executor
        self._lock = asyncio.Lock()  # apply and purge never interleave their transactions
        self._listeners: list[Callable[[], None]] = []
        self._closed = False

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        text_cap_bytes: int = 64 * 1024,
        max_event_bytes: int = 1024 * 1024,
    ) -> SqliteIndexWriter:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionquery-writer")
        try:
            core = await asyncio.get_running_loop().run_in_executor(
                executor,
                lambda: WriterCore.open(
                    path, text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes
                ),
            )
            await asyncio.get_running_loop().run_in_executor(executor, core.catch_up_search)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(core, executor)

    async def close(self) -> None:
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            await self._run(self._core.close)
        self._executor.shutdown(wait=True)

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn`` on the writer thread. A whole transaction is one call: the thread then
        never waits on the event loop between statements, and a cancelled caller cannot leave
        a transaction half-done (the call runs to its commit or rollback)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def last_stream_seq(self) -> int:
        return await self._run(self._core.meta, "stream_seq")

    async def sync_search(self) -> None:
        """Bring the search index up to the store now (after writes made around the
        writer, e.g. a bulk load or a restore)."""
        async with self._lock:
            await self._run(self._core.catch_up_search)

    async def info(self) -> dict[str, object]:
        return await self._run(self._core.info)

    async def bind_stream(self, name: str, created: str, first_seq: int) -> dict[str, object]:
        async with self._lock:
            return await self._run(self._core.bind_stream, name, created, first_seq)

    async def generation(self) -> Generation:
        return await self._run(self._core.generation)

    async def apply(self, items: Sequence[IngestItem]) -> ApplyResult:
        return await self.apply_prepared(self.prepare(items))

    def prepare(self, items: Sequence[IngestItem]) -> PreparedBatch:
        # CPU only, on the caller's thread: ingestion prepares the next batch while the
        # previous one is written.
        return self._core.prepare(items)

    async def apply_prepared(self, batch: PreparedBatch) -> ApplyResult:
        if not batch.items:
            return await self._run(self._core.apply, batch)
        async with self._lock:
            # On this thread writer searches see each batch at once (one commit per batch).
            result = await self._run(partial(self._core.apply, commit_search=True), batch)
        notify_listeners(self._listeners)
        return result

    async def purge(
        self, *, session_ids: Sequence[str] = (), older_than_ms: int | None = None
    ) -> int:
        """Remove sessions (see ``WriterCore.purge``); the epoch is bumped when any went."""
        if not session_ids and older_than_ms is None:
            return 0
        async with self._lock:
            ids = tuple(session_ids)
            count = await self._run(self._core.purge, ids, older_than_ms)
        if count:
            log.info("sessions purged", count=count)
            notify_listeners(self._listeners)
        return count


def notify_listeners(listeners: Iterable[Callable[[], None]]) -> None:
    for callback in listeners:
        try:
            callback()
        except Exception:
            # A listener's failure must not undo or fail a committed write.
            log.exception("commit listener failed")


# The model's own validator, called directly: ``model_validate_json`` adds about 1 us of
# Python around it, and this runs for every ingested event.
_validate_event_json: Final = SessionEvent.__pydantic_validator__.validate_json


def parse_event(data: bytes, *, max_event_bytes: int) -> tuple[SessionEvent, str] | str:
    """The event and its text, or why it is refused. Checks one message alone: the session
    checks (unknown session, gaps, ...) need the index and happen in ``apply``."""
    size = len(data)
    if size > max_event_bytes:
        return f"oversized: the event is {size} bytes, the maximum is {max_event_bytes} bytes"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid JSON: not UTF-8 at byte {exc.start}"
    try:
        event: SessionEvent = _validate_event_json(text)
    except ValidationError as exc:
        return _describe(exc)
    for cite in event.cites:
        if cite.seq > MAX_INT64:
            return f"contract violation: cites seq {cite.seq} out of range"
    for pos in event.replaces:
        if pos >= event.seq:
            return (
                f"contract violation: replaces {pos} at seq {event.seq}:"
                " replaces names earlier positions of the same session"
            )
    if event.type == "session/start":
        cwd = event.payload.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            return "contract violation: session/start payload.cwd must be a string or null"
        parent = event.payload.get("parent_session_id")
        if parent is not None and not (isinstance(parent, str) and _is_id(parent)):
            return (
                "contract violation: session/start payload.parent_session_id must be"
                f" an id matching {ID_PATTERN} or null"
            )
    elif event.type == "session/title":
        title = event.payload.get("title")
        if title is not None and not isinstance(title, str):
            return "contract violation: session/title payload.title must be a string"
    return event, text


def _indexed_payload(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload whose strings are searchable. A session/start's parent id is lineage (the
    sessions table holds it), not text: indexed, it would show in excerpts and previews even
    when the parent belongs to another workspace, whose ids are never printed."""
    if kind == "session/start" and "parent_session_id" in payload:
        return {k: v for k, v in payload.items() if k != "parent_session_id"}
    return payload


def _payload_of(raw_json: str) -> dict[str, Any]:
    """The payload of an event that passed ``parse_event``, parsed again. orjson refuses a
    few inputs pydantic accepts (integers past 64 bits, floats out of range: never text);
    the standard library reads those. Strings come out the same from all three."""
    try:
        value = orjson.loads(raw_json)
    except orjson.JSONDecodeError:
        value = json.loads(raw_json)
    payload: dict[str, Any] = value.get("payload", {})
    return payload


def _open_existing(location: str, expect_index_id: str) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"file:{location}?mode=rw", uri=True, isolation_level=None)
    except sqlite3.OperationalError as exc:
        raise IndexFileReplaced(
            f"index {location} is missing: it was removed while the worker ran; ingestion"
            " stopped (restart the worker: it rebuilds the index from the stream)"
        ) from exc
    try:
        schema.configure(conn)
        found = str(index_file.read_meta(conn).get(index_file.INDEX_ID))
    except BaseException:
        conn.close()
        raise
    if found != expect_index_id:
        conn.close()
        raise IndexFileReplaced(
            f"index {location} was replaced while the worker ran (index id {found},"
            f" expected {expect_index_id}); ingestion stopped (restart the worker)"
        )
    return conn


def _prepare_schema(conn: sqlite3.Connection, location: str) -> None:
    """Create a new index, migrate an older one in place, or refuse one this writer cannot
    take (newer, or older without a migration: those are rebuilt from the stream first)."""
    fresh = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    if not fresh:
        action = schema.version_action(schema.read_version(conn), location)
        if action == "rebuild":
            raise index_file.IndexFileError(
                f"index {location} has schema version {schema.read_version(conn)} and no"
                f" migration to {schema.SCHEMA_VERSION}: it must be rebuilt from the stream"
            )
        if action == "migrate":
            found = schema.migrate(conn)
            log.info("index migrated", path=location, from_version=found, to=schema.SCHEMA_VERSION)
    schema.create(conn)
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
        (index_file.INDEX_ID, "ix-" + uuid.uuid4().hex),  # text, never an integer
    )


# A dead letter's kind: its reason up to the first detail (an id, a number, a field).
_REASON_KINDS: Final = (
    ("oversized", "oversized"),
    ("invalid JSON", "invalid JSON"),
    ("contract violation", "contract violation"),
    ("unknown session", "unknown session"),
    ("gap in session", "gap in session"),
    ("session/start at seq", "session/start not at seq 1"),
    ("subject ", "subject mismatch"),
)


def reason_kind(reason: str) -> str:
    for prefix, kind in _REASON_KINDS:
        if reason.startswith(prefix):
            return kind
    if reason.startswith("session ") and "after its session/end" in reason:
        return "after session/end"
    return "other"


def _reject(stream_seq: int, data: bytes, reason: str) -> Rejected:
    reason = " ".join(reason.split())  # one line: it travels in a NATS header
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 3] + "..."
    return Rejected(stream_seq=stream_seq, data=data, reason=reason)


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_input=False, include_url=False, include_context=False)
    invalid_json = [e for e in errors if e["type"] == "json_invalid"]
    if invalid_json:
        msg = str(invalid_json[0]["msg"]).removeprefix("Invalid JSON: ")
        return f"invalid JSON: {msg}"
    parts = []
    for e in errors:
        loc = ".".join(str(x) for x in e["loc"]) or "event"
        parts.append(f"{loc}: {e['msg']}")
    return "contract violation: " + "; ".join(parts)


_ID_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _is_id(value: str) -> bool:
    return 1 <= len(value) <= 128 and all(c in _ID_CHARS for c in value)
