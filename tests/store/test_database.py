"""The one ``Database``: its tracer sees an ingest batch and a search run through it; rows
are read by column name; access modes and transactions hold."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.store._corpus import corpus_and_store, search
from worker.store import database, tables
from worker.store.database import INDEX, Database

Seen = list[tuple[str, str]]


def statements(seen: Seen, role: str) -> list[str]:
    return [" ".join(sql.split()) for who, sql in seen if who == role]


async def test_an_ingest_batch_and_a_search_run_through_the_database(tmp_path: Path) -> None:
    seen: Seen = []
    async with corpus_and_store(tmp_path) as (corpus, store):
        corpus.start("s1")
        corpus.say("s1", "a needle in the haystack")
        with database.tracing(lambda role, sql: seen.append((role, sql))):
            await corpus.flush()
            await corpus.writer.sync_search()
            page = await search(store, "needle")
        after = len(seen)
        await search(store, "needle")
    assert [hit.header.session_id for hit in page.hits] == ["s1"]

    written = statements(seen, "writer")
    # The batch: one transaction holding the events, the header and the stream sequence.
    begin = written.index("BEGIN IMMEDIATE")
    commit = written.index("COMMIT", begin)
    batch = written[begin:commit]
    assert any(sql.startswith("INSERT INTO events") for sql in batch), batch
    assert any(sql.startswith("INSERT INTO sessions") for sql in batch), batch
    assert tables.META_SET in batch
    # The search index followed the store on the writer's connection.
    assert any("FROM events e JOIN sessions s" in sql for sql in written[commit:]), written

    read = statements(seen, "reader")
    # The search's page: its events loaded and checked again against the caller's cwd.
    assert any("+s.cwd = :cwd" in sql for sql in read), read
    # Nothing is traced once the hook is gone.
    assert len(seen) == after


def test_rows_are_read_by_column_name(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "t.sqlite", role="test")
    try:
        db.script("CREATE TABLE t (a INTEGER, b TEXT, c REAL)")
        db.run_many("INSERT INTO t VALUES (?, ?, ?)", [(1, "x", 0.5), (2, "y", 1.5)])
        found, at = db.rows("SELECT c AS c, a AS a, b AS b FROM t ORDER BY a")
        assert [r[at["a"]] for r in found] == [1, 2]
        assert list(map(at.getter(("b", "c")), found)) == [("x", 0.5), ("y", 1.5)]
        with pytest.raises(KeyError, match="selects no d"):
            at.getter(("a", "d"))(found[0])
        streamed, by = db.stream("SELECT b AS b, a AS a FROM t ORDER BY a")
        assert [r[by["b"]] for r in streamed] == ["x", "y"]
        assert db.value("SELECT count(*) FROM t") == 2
        assert db.value("SELECT a FROM t WHERE a > 5") is None
    finally:
        db.close()


def test_a_transaction_commits_or_rolls_back_whole(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "t.sqlite", pragmas=INDEX, role="test")
    try:
        db.script("CREATE TABLE t (a INTEGER PRIMARY KEY)")
        with db.transaction():
            db.run("INSERT INTO t VALUES (1)")
        with pytest.raises(sqlite3.IntegrityError), db.transaction():
            db.run("INSERT INTO t VALUES (2)")
            db.run("INSERT INTO t VALUES (1)")
        assert not db.in_transaction
        assert db.value("SELECT group_concat(a) FROM t") == "1"
        assert db.value("PRAGMA journal_mode") == "wal"
    finally:
        db.close()


def test_access_modes_never_create_or_write_where_not_asked(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    for access in ("read", "write"):
        with pytest.raises(sqlite3.OperationalError):
            Database.open(missing, access, role="test")
    assert not missing.exists()
    made = Database.open(tmp_path / "made.sqlite", role="test")
    made.script("CREATE TABLE t (a INTEGER)")
    made.close()
    reader = Database.open(tmp_path / "made.sqlite", "read", role="test")
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.run("INSERT INTO t VALUES (1)")
    finally:
        reader.close()
