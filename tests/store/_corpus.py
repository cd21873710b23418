"""Test corpora for the read side, built through the real writer (events via the contract).

``Corpus`` queues events per session (seq, ids and times assigned) and applies them in one
writer batch on ``flush``. ``bulk_matches`` is the fast path for huge corpora: plain
``executemany`` into the schema, for the workspace-before-LIMIT test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson
import zstandard

from tests import _events
from worker.signals import ExecutionSignal
from worker.store.event_codec import preview_key
from worker.store.files import schema
from worker.store.index.writer import SqliteIndexWriter
from worker.store.protocol import (
    CompiledQuery,
    EventFilter,
    EventSearchPage,
    SessionFilter,
    SessionSearchPage,
)
from worker.store.search.query import compile_query
from worker.store.sqlite import SqliteSessionStore
from worker.store.writer_protocol import IngestItem

MAIN = "/w/main"  # the workspace Corpus.start puts sessions in by default
BASE_MS = 1_796_000_000_000  # a fixed clock: tests never depend on the wall clock


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@dataclass
class Corpus:
    writer: SqliteIndexWriter
    path: Path
    stream_seq: int = 0
    clock_ms: int = BASE_MS
    seqs: dict[str, int] = field(default_factory=dict)
    pending: list[IngestItem] = field(default_factory=list)

    def event(
        self,
        session_id: str,
        type_: str,
        payload: dict[str, Any] | None = None,
        *,
        surface: str = "assistant",
        time_ms: int | None = None,
        replaces: Sequence[int] = (),
        cites: Sequence[tuple[str, int]] = (),
    ) -> int:
        """Queue one event; returns its seq."""
        seq = self.seqs.get(session_id, 0) + 1
        self.seqs[session_id] = seq
        self.clock_ms += 1000
        self.stream_seq += 1
        data = _events.event(
            session_id,
            seq,
            type_,
            surface=surface,
            time=iso(self.clock_ms if time_ms is None else time_ms),
            payload=payload or {},
            replaces=list(replaces),
            cites=_events.cite_list(cites),
        )
        self.pending.append(IngestItem(stream_seq=self.stream_seq, data=data))
        return seq

    def start(
        self,
        session_id: str,
        *,
        cwd: str | None = MAIN,
        parent: str | None = None,
        time_ms: int | None = None,
    ) -> None:
        payload: dict[str, Any] = {"cwd": cwd}
        if parent is not None:
            payload["parent_session_id"] = parent
        self.event(session_id, "session/start", payload, surface="system", time_ms=time_ms)

    def say(self, session_id: str, text: str, **kw: Any) -> int:
        return self.event(session_id, kw.pop("type_", "message/assistant"), {"text": text}, **kw)

    def end(self, session_id: str) -> int:
        return self.event(session_id, "session/end", {}, surface="system")

    async def flush(self) -> None:
        items, self.pending = self.pending, []
        if items:
            result = await self.writer.apply(items)
            assert not result.rejected, result.rejected
            assert result.applied == len(items)


@asynccontextmanager
async def writer_and_store(
    path: Path, *, readers: int = 2
) -> AsyncIterator[tuple[SqliteIndexWriter, SqliteSessionStore]]:
    """A writer and a store on one index file, the store told of each commit."""
    writer = await SqliteIndexWriter.open(path)
    try:
        store = await SqliteSessionStore.open(path, readers=readers)
        writer.add_commit_listener(store.notify_commit)
        try:
            yield writer, store
        finally:
            await store.close()
    finally:
        await writer.close()


@asynccontextmanager
async def corpus_and_store(
    tmp_path: Path, *, readers: int = 2
) -> AsyncIterator[tuple[Corpus, SqliteSessionStore]]:
    path = tmp_path / "index.sqlite"
    async with writer_and_store(path, readers=readers) as (writer, store):
        yield Corpus(writer=writer, path=path), store


# Events inserted by plain SQL are stored as the writer stores them: one zstd frame.
_PLAIN: Final = zstandard.ZstdCompressor()


def bulk_matches(
    path: Path,
    *,
    corpus: Corpus,
    cwd: str,
    sessions: int,
    events_per_session: int,
    text: str,
    prefix: str,
) -> None:
    """Insert many matching events with plain SQL, in the schema's exact shape (the
    search index takes them at ``corpus.writer.sync_search()``)."""
    ws = schema.workspace_token(cwd)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        next_id = int(conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]) + 1
        session_rows, event_rows = [], []
        for s in range(sessions):
            sid = f"{prefix}{s}"
            for q in range(1, events_per_session + 1):
                corpus.stream_seq += 1
                event_rows.append(
                    (next_id, sid, q, f"e{next_id}", "message/assistant", "assistant",
                     BASE_MS + q, corpus.stream_seq,
                     _PLAIN.compress(raw := orjson.dumps({"payload": {"text": f"{text} {q}"}})),
                     preview_key(raw, "message/assistant", "assistant"))
                )  # fmt: skip
                next_id += 1
            session_rows.append(
                (sid, cwd, ws, None, None, "live", BASE_MS, BASE_MS + events_per_session,
                 events_per_session, events_per_session)
            )  # fmt: skip
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO sessions (session_id, cwd, ws, parent_session_id, title, availability,"
            " created_ms, updated_ms, last_seq, event_count) VALUES (?,?,?,?,?,?,?,?,?,?)",
            session_rows,
        )
        conn.executemany(
            "INSERT INTO events (id, session_id, seq, event_id, type, surface, time_ms,"
            " stream_seq, doc, preview_key) VALUES (?,?,?,?,?,?,?,?,?,?)",
            event_rows,
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'stream_seq'", (corpus.stream_seq,))
        conn.execute("COMMIT")
    finally:
        conn.close()


def bump_epoch(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'epoch'")
    finally:
        conn.close()


NONE = EventFilter()
ALL = SessionFilter()


def compiled(text: str) -> CompiledQuery:
    """A search's text compiled as the tools compile it before asking the store."""
    return CompiledQuery(text, compile_query(text))


async def search(
    store: SqliteSessionStore,
    query: str,
    *,
    cwd: str = MAIN,
    sessions: SessionFilter = ALL,
    events: EventFilter = NONE,
    cursor: str | None = None,
    page_size: int = 100,
) -> SessionSearchPage:
    return await store.search_sessions(
        compiled(query),
        cwd=cwd,
        sessions=sessions,
        events=events,
        cursor=cursor,
        page_size=page_size,
        signal=ExecutionSignal(),
    )


async def search_in(
    store: SqliteSessionStore, query: str, session_id: str, *, page_size: int = 10
) -> EventSearchPage:
    """One first page of ``search_events`` in a session that exists."""
    page = await store.search_events(
        compiled(query),
        session_id=session_id,
        events=NONE,
        cursor=None,
        page_size=page_size,
        signal=ExecutionSignal(),
    )
    assert page is not None
    return page
