"""Zed's agent threads: converter checks over a generated ``threads.db`` (0.3.0 and first
agent threads, JSON rows, the oldest table), zstd rows when the ``zstandard`` module is
installed, an import read back with the five tools, ``watch`` following a thread that
grows, and detection."""

from __future__ import annotations

import importlib
import importlib.util
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_zed as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import registry, zed
from worker.importers.detect import detect

MAIN, SUB, LEGACY, UNTITLED = (f"zed-{t}" for t in (gen.MAIN, gen.SUB, gen.LEGACY,
                                                      gen.UNTITLED))  # fmt: skip
# Main: start, user, mention, thinking, text, 3 x (call, result), resume, text = 13, plus
# title and end; sub-agent: 3 + title + end; legacy: 6 + title + end; untitled: 2 + end.
EVENTS = 15 + 5 + 8 + 3
HAS_ZSTD = importlib.util.find_spec("zstandard") is not None


def events(db: Path) -> list[dict[str, Any]]:
    return reading_events("zed", zed.read_database(db))


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_a_thread_gives_its_conversation(tmp_path: Path) -> None:
    db = gen.write(tmp_path / "threads")
    reading = zed.read_database(db)
    main = of(reading_events("zed", reading), MAIN)
    assert [(e["type"], e["payload"].get("tool")) for e in main] == [
        ("session/start", None), ("message/user", None), ("message/context", None),
        ("message/assistant", None), ("message/assistant", None), ("tool/call", "read_file"),
        ("tool/result", "read_file"), ("tool/call", "spawn_agent"),
        ("tool/result", "spawn_agent"), ("tool/call", "terminal"), ("tool/result", "terminal"),
        ("message/context", None), ("message/assistant", None),
    ]  # fmt: skip
    # The folder opened first, although another sorts before it.
    assert main[0]["payload"]["cwd"] == gen.CWD
    assert main[0]["time"] == "2025-11-24T10:01:00.000Z" and main[5]["time"].startswith(
        "2025-11-24T10:09"
    )
    assert main[3]["payload"]["thinking"] == "Read tick first."
    assert main[6]["cites"] == [{"session_id": MAIN, "seq": 6}]
    assert main[10]["payload"]["is_error"] is True
    assert main[11]["payload"]["text"] == "Continue where you left off"
    assert reading.skipped == {"content:Image": 1, "content:RedactedThinking": 1,
                                "message:system": 1}  # fmt: skip
    assert [s.title for s in reading.sessions] == [gen.TITLE, gen.SUB_TITLE, "Buoy battery",
                                                    None]  # fmt: skip
    assert not reading.problems


def test_sub_agent_cites_its_spawn_call_and_older_threads_read(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path / "threads"))
    spawn = next(e for e in got if e["payload"].get("tool") == "spawn_agent")
    sub = of(got, SUB)[0]
    assert sub["payload"]["parent_session_id"] == MAIN
    assert sub["cites"] == [{"session_id": MAIN, "seq": spawn["seq"]}]
    legacy = of(got, LEGACY)
    assert [e["type"] for e in legacy] == ["session/start", "message/user",
                                           "message/assistant", "message/assistant",
                                           "tool/call", "tool/result"]  # fmt: skip
    assert legacy[0]["payload"]["cwd"] == gen.LEGACY_CWD  # the project snapshot's worktree
    assert legacy[5]["payload"]["output"] == "battery 12%"
    assert of(got, UNTITLED)[0]["payload"]["cwd"] is None


def test_a_damaged_tool_name_is_read_as_any_other_tool(tmp_path: Path) -> None:
    """Any value may stand where a tool's name belongs in a damaged row: nothing raises."""
    db = gen.write(tmp_path / "threads")
    value = gen.rows()[0][-1]
    value["messages"][2]["Agent"]["content"][0]["ToolUse"]["name"] = ["spawn_agent"]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE threads SET data = ? WHERE id = ?", (orjson.dumps(value), gen.MAIN))
    conn.close()
    sub = of(events(db), SUB)[0]
    assert "cites" not in sub  # no spawn_agent call named it


def test_the_oldest_table_without_the_later_columns(tmp_path: Path) -> None:
    db = tmp_path / "threads" / "threads.db"
    db.parent.mkdir()
    with sqlite3.connect(db) as conn:
        conn.executescript(gen.OLD_SCHEMA)
        conn.execute("INSERT INTO threads VALUES (?, ?, ?, 'json', ?)",
                     (gen.LEGACY, "Buoy battery", "2025-11-24T10:31:00+00:00",
                      orjson.dumps(gen.legacy_thread())))  # fmt: skip
    conn.close()
    got = events(db)
    assert [e["type"] for e in got][:2] == ["session/start", "message/user"]
    assert got[0]["time"] == "2025-11-24T10:31:00.000Z"  # no created_at: the update


def test_zstd_rows_without_the_module_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = gen.write(tmp_path / "threads")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE threads SET data_type = 'zstd', data = x'28b52ffd00' WHERE id = ?",
                     (gen.UNTITLED,))  # fmt: skip
    conn.close()

    def missing(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(importlib, "import_module", missing)
    reading = zed.read_database(db)
    assert len(reading.sessions) == 3  # the JSON rows still read
    assert [p.message for p in reading.problems] == [
        "1 threads are zstd-compressed and this Python has no zstd:"
        " pip install 'session-query-worker[zstd]' to read them"
    ]


@pytest.mark.skipif(not HAS_ZSTD, reason="the zstandard module (the zstd extra) is not installed")
def test_zstd_rows_read_like_json_rows(tmp_path: Path) -> None:
    plain = events(gen.write(tmp_path / "json"))
    compressed = gen.write(tmp_path / "zstd", zstd=True)
    with sqlite3.connect(compressed) as conn:
        kinds = {row[0] for row in conn.execute("SELECT data_type FROM threads")}
    conn.close()
    assert kinds == {"zstd"}
    assert events(compressed) == plain


def test_detection_and_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = gen.write_home(tmp_path / "home")
    assert detect(folder / "threads.db") == "zed"
    (tmp_path / "threads.db").write_bytes(b"")  # another program's empty file
    assert detect(tmp_path / "threads.db") is None
    assert registry.get("zed").files(tmp_path / "home") == [folder / "threads.db"]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("FLATPAK_XDG_DATA_HOME", raising=False)
    assert registry.get("zed").default_locations() == [tmp_path / "data" / "zed" / "threads"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    db = gen.write(tmp_path / "threads")
    async with imported(nc, nats_url, subjects, tmp_path, db, "zed",
                        expected=EVENTS, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 15), (SUB, 5), (LEGACY, 8), (UNTITLED, 3)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert f"⟦{gen.TITLE}⟧" in lineage and SUB in lineage.split("Descendants")[1]
        trace = await ask(nc, worker, "session_event_trace", SUB, session_id=SUB, seq=1)
        assert f"{MAIN} seq 8 · tool/call" in cites_of(trace)
        found = await ask(nc, worker, "session_search", MAIN, query="other timers 1001")
        assert SUB in found  # the sub-agent's thread, in the same workspace
        hidden = await ask(nc, worker, "session_search", MAIN, query="Buoy battery log")
        assert LEGACY not in hidden  # another folder, another workspace


async def test_watch_follows_a_thread_that_grows(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = gen.write(tmp_path / "threads", upto=2)

    def rest() -> None:
        gen.write(db.parent)

    # Main 1 + 6 (its first two messages), sub-agent 3, legacy 6, untitled 2; then main's
    # other four messages: 6 events.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "zed", db,
                       before=18, grow=rest, after=24)  # fmt: skip
