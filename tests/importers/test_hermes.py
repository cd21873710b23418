"""Hermes agent: converter checks over a generated ``state.db`` (a sub-agent, a tool error,
an in-place compaction, a continuation after compaction, titles), detection and default
folders, an import read back with the five tools, and ``watch`` following new rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_hermes as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import hermes, registry
from worker.importers.detect import detect, expand

MAIN, SUB, OLD, NEXT, CHAT = (
    f"hermes-{sid}" for sid in (gen.MAIN, gen.SUB, gen.OLD, gen.NEXT, gen.CHAT)
)
# Main: start, user, thinking, 3 x (call, result) with a text before the second, text,
# the head copy (written with a new time), compaction, user, text = 15 (the kept copy
# carries its original's time: counted), plus title and end. Sub: 5
# plus title (the delegated goal) and end. Old: 3 + title + end; next: 4 + title + end;
# the chat: 3 + a call and its result + end (untitled).
COUNTS = {MAIN: 17, SUB: 7, OLD: 5, NEXT: 6, CHAT: 6}


def events(db: Path) -> list[dict[str, Any]]:
    return reading_events("hermes", hermes.read_database(db))


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_messages_tools_and_errors(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path / "state.db"))
    main = of(got, MAIN)
    assert [e["type"] for e in main[:6]] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant",
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] == gen.CWD and main[0]["payload"]["platform"] == "cli"
    assert main[0]["time"] == "2026-11-30T00:53:20.250Z"
    assert main[2]["payload"]["thinking"] == "Look at the cart module first."
    assert main[3]["payload"] == {"tool": "read_file", "input": {"path": "cart.py"},
                                  "source_type": "assistant:tool_call"}  # fmt: skip
    results = [e for e in main if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [4, 7, 9]
    assert [r["payload"].get("is_error", False) for r in results] == [False, True, False]
    assert results[1]["payload"]["tool"] == "terminal"


def test_a_call_cut_off_by_the_next_prompt() -> None:
    """The recording (recorded/hermes, 0.19.0): a turn interrupted (SIGINT) while its
    ``terminal`` command runs leaves the call with no ``tool`` row, and the next prompt
    follows. The call gets a result marked ``interrupted``, before that prompt."""
    db = Path(__file__).parent / "recorded" / "hermes" / "sessions" / "state.db"
    got = events(db)
    calls = {(e["session_id"], e["seq"]): e for e in got if e["type"] == "tool/call"}
    results = [e for e in got if e["type"] == "tool/result"]
    assert sorted((c["session_id"], c["seq"]) for r in results for c in r["cites"]) == sorted(calls)
    (cut,) = [r for r in results if r["payload"].get("interrupted")]
    assert cut["payload"]["is_error"] is True and cut["payload"]["output"] == ""
    (call,) = [calls[(c["session_id"], c["seq"])] for c in cut["cites"]]
    assert "sleep" in call["payload"]["input"]["command"]
    after = [e for e in got if e["session_id"] == cut["session_id"] and e["seq"] > cut["seq"]]
    assert after[0]["type"] == "message/user"


def test_an_attached_image_described_before_the_prompt() -> None:
    """The recording (0.19.0): ``chat --image`` has the image described first (a vision
    request) and writes the description, with a hint naming the file, before the prompt in
    one user row. The description is Hermes's context; the prompt is the user's."""
    db = Path(__file__).parent / "recorded" / "hermes" / "sessions" / "state.db"
    got = events(db)
    (prompt,) = [e for e in got if e["type"] == "message/user"
                 and "image" in e["payload"]["text"]]  # fmt: skip
    assert prompt["payload"]["text"] == "What does this image show?"
    before = next(e for e in got if e["session_id"] == prompt["session_id"]
                  and e["seq"] == prompt["seq"] - 1)  # fmt: skip
    assert before["type"] == "message/context"
    assert before["payload"]["text"].startswith("[The user attached an image.")
    assert before["payload"]["text"].endswith("red.png]")


def test_compaction_in_place_and_after_rotation(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path / "state.db"))
    main = of(got, MAIN)
    compaction = next(e for e in main if e["type"] == "compaction")
    # The rows Hermes archived, and the head copy written just before the summary.
    assert compaction["seq"] == 13 and compaction["replaces"] == list(range(2, 13))
    assert "## Active Task" in compaction["payload"]["summary"]
    assert [e["payload"]["text"] for e in main[13:]] == [
        "Now add a test for the discount",
        "Added tests/test_cart.py with a discounted checkout.",
    ]
    # The continuation Hermes starts on compaction (rotation): a child of the session it
    # continues, opened by the (older) summary message, citing no call.
    following = of(got, NEXT)
    assert following[0]["payload"]["parent_session_id"] == OLD
    assert following[0]["payload"]["lineage"] == "compression"
    assert "cites" not in following[0] and following[1]["type"] == "compaction"


def test_a_sub_agent_cites_the_delegation(tmp_path: Path) -> None:
    db = gen.write(tmp_path / "state.db")
    reading = hermes.read_database(db)
    got = reading_events("hermes", reading)
    start = of(got, SUB)[0]
    assert start["payload"]["parent_session_id"] == MAIN
    assert start["payload"]["lineage"] == "subagent"
    delegation = next(e for e in of(got, MAIN) if e["payload"].get("tool") == "delegate_task")
    assert start["cites"] == [{"session_id": MAIN, "seq": delegation["seq"]}]
    titles = {s.session_id: s.title for s in reading.sessions}
    assert titles[SUB] == "Find where discounts are applied"  # the delegated goal
    assert titles[MAIN] == "Fix the checkout total" and titles[CHAT] is None
    # Parents first: the child's start can cite the call.
    order = [s.session_id for s in reading.sessions]
    assert order.index(MAIN) < order.index(SUB) and order.index(OLD) < order.index(NEXT)


def test_skips_are_counted_and_no_cwd_stays_none(tmp_path: Path) -> None:
    db = gen.write(tmp_path / "state.db")
    reading = hermes.read_database(db)
    assert reading.skipped == {"message:system": 1, "content:image_url": 1,
                                "message:compaction-copy": 1,
                                "message:session_meta": 1}  # fmt: skip
    # All written on purpose: none is format drift.
    importer = hermes.HermesImporter()
    assert all(importer.skip_reason(what) for what in reading.skipped)
    assert not reading.problems
    chat = of(reading_events("hermes", reading), CHAT)
    assert chat[0]["payload"]["cwd"] is None and chat[0]["payload"]["platform"] == "telegram"
    # A call written without an id is answered by the next result naming no known call.
    assert chat[3]["payload"]["tool"] == "web_search"
    assert chat[4]["cites"] == [{"session_id": CHAT, "seq": 4}]
    image = next(e for e in of(reading_events("hermes", reading), NEXT) if "screenshot" in
                 e["payload"].get("text", ""))  # fmt: skip
    assert image["payload"]["text"] == "Does this screenshot match?"


def test_an_older_schema_without_later_columns(tmp_path: Path) -> None:
    """Older databases lack ``reasoning``, ``active``, ``cwd``, ``title``: read as absent."""
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL,"
        " parent_session_id TEXT, started_at REAL NOT NULL);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT,"
        " role TEXT, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,"
        " timestamp REAL NOT NULL);"
        "INSERT INTO sessions VALUES ('s1', 'cli', NULL, 1700000000);"
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('s1', 'user', 'hello', 1700000001);"
    )
    conn.commit()
    conn.close()
    got = events(db)
    assert [e["type"] for e in got] == ["session/start", "message/user"]
    assert got[0]["payload"]["cwd"] is None


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = gen.write_home(tmp_path / "home")
    profile = gen.write(home / "profiles" / "work" / "state.db")
    other = tmp_path / "other" / "state.db"  # another program's state.db is not Hermes's
    other.parent.mkdir()
    sqlite3.connect(other).executescript("CREATE TABLE kv (k TEXT, v TEXT);")
    assert detect(home / "state.db") == "hermes" and detect(profile) == "hermes"
    assert detect(other) is None
    assert list(expand([home], "hermes")) == [profile, home / "state.db"]  # by path
    assert list(expand([tmp_path / "other"], "hermes")) == []
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    assert registry.get("hermes").default_locations() == [home]
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "moved"))
    assert registry.get("hermes").default_locations() == [tmp_path / "moved"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    db = gen.write(tmp_path / "hermes" / "state.db")
    async with imported(nc, nats_url, subjects, tmp_path, db.parent, "hermes",
                        expected=sum(COUNTS.values()), idle="0") as (worker, _):  # fmt: skip
        for session, count in COUNTS.items():
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "⟦Fix the checkout total⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=8)
        assert f"{MAIN} seq 7 · tool/call" in cites_of(result)
        # The sub-agent's row names no cwd: it takes its parent's, so it is in the shop's
        # workspace, its start citing the delegation (seq 9) and its parent tracing it.
        own = await ask(nc, worker, "session_event_read", SUB, session_id=SUB, seq=1)
        assert '"lineage":"subagent"' in own
        assert f'"cites":[{{"session_id":"{MAIN}","seq":9}}]' in own
        assert SUB in lineage.split("Descendants")[1]
        found = await ask(nc, worker, "session_event_search", SUB, session_id=SUB,
                          query="apply_codes pricing")  # fmt: skip
        assert "apply_codes" in found
        # The gateway chat has no cwd: the no-cwd workspace, not the shop's.
        hidden = await ask(nc, worker, "session_search", MAIN, query="what a discount code is")
        assert CHAT not in hidden


async def test_watch_follows_new_rows(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = gen.write(tmp_path / "state.db", upto=2)

    def rest() -> None:
        gen.write(db)

    # Two rows of each session: main 1 + 3 (user, thinking, call), sub 1 + 2, old 1 + 2,
    # next 1 + 2, chat 1 + 2 = 16; the rest: main 11 more, sub 2, next 1, chat 2 (its
    # session_meta and system rows are skipped) = 32 in all.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "hermes", db,
                       before=16, grow=rest, after=32)  # fmt: skip


def test_a_child_started_before_its_compressed_parent_ended_is_a_sub_agent(
    tmp_path: Path,
) -> None:
    """Hermes's own rule: a compression continuation starts at or after its parent's end;
    a child that started before (a real gateway home of schema 12, no model_config
    markers) is a sub-agent, citing the parent's delegation."""
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL,"
        " parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT,"
        " role TEXT, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,"
        " timestamp REAL NOT NULL);"
        "INSERT INTO sessions VALUES ('p', 'weixin', NULL, 1000, 1100, 'compression');"
        "INSERT INTO sessions VALUES ('task', 'weixin', 'p', 1040, NULL, NULL);"
        "INSERT INTO sessions VALUES ('next', 'weixin', 'p', 1100, NULL, NULL);"
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('p', 'user', 'build the board', 1001);"
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('task', 'user', 'Implement Task 2: the board', 1041);"
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('next', 'user', '[CONTEXT SUMMARY]: the board was planned.', 1100);"
    )
    delegate = gen.call("call_d", "delegate_task", {"goal": "Implement Task 2"})
    conn.execute(
        "INSERT INTO messages (session_id, role, content, tool_calls, timestamp)"
        " VALUES ('p', 'assistant', '', ?, 1039)",
        (orjson.dumps([delegate]).decode(),),
    )
    conn.commit()
    conn.close()
    got = events(db)
    task, following = of(got, "hermes-task")[0], of(got, "hermes-next")[0]
    assert task["payload"]["lineage"] == "subagent"
    call = next(e for e in of(got, "hermes-p") if e["type"] == "tool/call")
    assert task["cites"] == [{"session_id": "hermes-p", "seq": call["seq"]}]
    assert following["payload"]["lineage"] == "compression"
    assert "cites" not in following
