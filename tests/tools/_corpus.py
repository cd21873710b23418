"""The real provider for the tools' integration tests: the SQLite writer and store over a
temp index, fed the shipped two-workspace sample corpus (plus what a test adds)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests._events import cite_list, event_dict
from tests.store._corpus import writer_and_store
from worker.commands import sample_corpus
from worker.store.index.writer import SqliteIndexWriter
from worker.store.sqlite import SqliteSessionStore
from worker.store.writer_protocol import IngestItem


@dataclass
class Index:
    writer: SqliteIndexWriter
    store: SqliteSessionStore
    stream_seq: int = 0

    async def apply(self, events: Iterable[dict[str, Any]]) -> None:
        items = []
        for event in events:
            self.stream_seq += 1
            items.append(IngestItem(stream_seq=self.stream_seq, data=orjson.dumps(event)))
        result = await self.writer.apply(items)
        assert not result.rejected, result.rejected


@asynccontextmanager
async def sqlite_index(tmp_path: Path, *, sample: bool = True) -> AsyncIterator[Index]:
    async with writer_and_store(tmp_path / "index.sqlite") as (writer, store):
        index = Index(writer=writer, store=store)
        if sample:
            await index.apply(sample_corpus.sample_events())
        yield index


def event(
    session_id: str,
    seq: int,
    type_: str,
    payload: dict[str, Any] | None = None,
    *,
    surface: str = "assistant",
    minute: int = 0,
    cites: list[tuple[str, int]] | None = None,
) -> dict[str, Any]:
    return event_dict(
        session_id,
        seq,
        type_,
        surface=surface,
        time=f"2026-12-01T10:{minute:02d}:00.000Z",
        payload=payload or {},
        cites=cite_list(cites or []),
    )


def start(session_id: str, cwd: str | None, parent: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"cwd": cwd}
    if parent is not None:
        payload["parent_session_id"] = parent
    return event(session_id, 1, "session/start", payload, surface="system")
