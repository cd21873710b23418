"""A ``data.sqlite3`` of an Amazon Q (or Kiro) CLI build older than its conversation table:
in the shape such builds leave in real homes (the migration table, the shell's command
``history``, ``state``, ``auth_kv``), it is said to hold no conversation, not read as an
empty one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from worker.importers import amazon_q
from worker.importers.amazon_q import KIRO_CLI, Q_CLI, Flavour


def _old_build(path: Path) -> Path:
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE migrations (id INTEGER PRIMARY KEY, version INTEGER NOT NULL,"
            " migration_time INTEGER NOT NULL);"
            "CREATE TABLE history (id INTEGER PRIMARY KEY, command TEXT, shell TEXT,"
            " pid INTEGER, session_id TEXT, cwd TEXT, start_time INTEGER, hostname TEXT,"
            " exit_code INTEGER, end_time INTEGER, duration INTEGER);"
            "CREATE TABLE state (key TEXT PRIMARY KEY, value BLOB);"
            "CREATE TABLE auth_kv (key TEXT PRIMARY KEY, value TEXT);"
            "INSERT INTO migrations (version, migration_time) VALUES (0, 1), (1, 1), (5, 1);"
            "INSERT INTO history (command, shell, cwd, start_time) VALUES ('ls', 'bash', '/w', 1);"
        )
    conn.close()
    return path


@pytest.mark.parametrize("flavour", [Q_CLI, KIRO_CLI], ids=["amazon-q", "kiro-cli"])
def test_a_database_without_a_conversation_table_is_reported(
    tmp_path: Path, flavour: Flavour
) -> None:
    db = _old_build(tmp_path / flavour.folder / amazon_q.DATABASE)
    reading = amazon_q.read_database(db, flavour)
    assert reading.sessions == []
    assert [p.message for p in reading.problems] == [
        "no conversation table (conversations, conversations_v2): written by a build that"
        " kept no chat here; its tables: auth_kv, history, migrations, state"
    ]
