"""The writer keeps each session's first message/user texts with its header, for the
tools' title fallback; an index of the version before gets them from its events."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from tests import _events
from tests._index import events_as_text
from tests.store._corpus import writer_and_store
from worker.signals import ExecutionSignal
from worker.store.files import schema
from worker.store.index.writer import SqliteIndexWriter
from worker.store.writer_protocol import IngestItem

TEXTS = ["<command-name>/clear</command-name>", "x" * 1000, "third", "fourth", "fifth"]


def _items() -> list[IngestItem]:
    events = [_events.event("s-1", 1, "session/start", payload={"cwd": "/w"}, surface="system")]
    events += [_events.event("s-1", 2 + i, "message/user", payload={"text": t}, surface="user")
               for i, t in enumerate(TEXTS)]  # fmt: skip
    events.append(_events.event("s-2", 1, "session/start", payload={"cwd": "/w"}, surface="system"))
    events.append(
        _events.event("s-2", 2, "message/user", payload={"text": "titled"}, surface="user")
    )
    events.append(
        _events.event("s-2", 3, "session/title", payload={"title": "T"}, surface="system")
    )
    return [IngestItem(stream_seq=n, data=data) for n, data in enumerate(events, start=1)]


EXPECTED = (TEXTS[0], "x" * schema.TITLE_PROMPT_CHARS, "third", "fourth")


async def _titles(path: Path) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    async with writer_and_store(path) as (_writer, store):
        signal = ExecutionSignal.after(5)
        try:
            found = await store.read_titles(["s-1", "s-2"], signal=signal)
        finally:
            signal.close()
    return {sid: (o.title, o.prompts) for sid, o in found.items()}


async def test_the_first_user_texts_are_kept_cut_and_read_only_without_a_title(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.sqlite"
    async with writer_and_store(path) as (writer, _store):
        for item in _items():  # one batch per event: the header is loaded back each time
            await writer.apply([item])
    assert await _titles(path) == {"s-1": (None, EXPECTED), "s-2": ("T", ())}


async def test_an_index_of_version_4_gets_the_prompts_from_its_events(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    async with await SqliteIndexWriter.open(path) as writer:
        await writer.apply(_items())
    events_as_text(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:  # as version 4 left it: no prompts column
        conn.execute("ALTER TABLE sessions DROP COLUMN prompts")
        conn.execute("UPDATE meta SET value = 4 WHERE key = 'schema_version'")
    finally:
        conn.close()
    assert await _titles(path) == {"s-1": (None, EXPECTED), "s-2": ("T", ())}
    conn = sqlite3.connect(path)
    try:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        (stored,) = conn.execute("SELECT prompts FROM sessions WHERE session_id = 's-2'").fetchone()
    finally:
        conn.close()
    assert version == schema.SCHEMA_VERSION and orjson.loads(stored) == ["titled"]
