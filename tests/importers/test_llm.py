"""LLM (Simon Willison's ``llm``): converter checks over a generated ``logs.db`` holding both
generations of tables (a 0.31 conversation, one continued after the upgrade, a 0.36 thread
and its fork), detection and default folders, an import read back with the five tools, and
``watch`` following new turns."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_llm as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import llm, registry
from worker.importers.detect import detect, expand

OLD, CONT, MAIN, FORK = (f"llm-{sid}" for sid in (gen.OLD, gen.CONT, gen.MAIN, gen.FORK))
# Old: start, system, prompt, 3 answers, 2 calls, 2 results = 10; cont: start, the 0.31
# prompt and answer, the 0.36 prompt and answer = 5; main: start, system, prompt, thinking,
# text, 2 calls, 2 results, text, prompt, text = 12; fork: start, prompt, answer = 3. Each
# with its title and end.
COUNTS = {OLD: 12, CONT: 7, MAIN: 14, FORK: 5}


def events(db: Path) -> list[dict[str, Any]]:
    return reading_events("llm", llm.read_database(db))


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_a_thread_its_turns_and_parts(tmp_path: Path) -> None:
    main = of(events(gen.write(tmp_path)), MAIN)
    assert [e["type"] for e in main] == [
        "session/start", "message/context", "message/user", "message/assistant",
        "message/assistant", "tool/call", "tool/result", "tool/call", "tool/result",
        "message/assistant", "message/user", "message/assistant",
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] is None  # LLM records no working folder
    # What a turn was sent carries its start; what it answered, the start plus its duration.
    assert [e["time"][11:23] for e in main[2:7]] == [
        "11:00:00.250", "11:00:02.250", "11:00:02.250", "11:00:02.250", "11:00:04.250"
    ]  # fmt: skip
    assert main[1]["payload"]["role"] == "system"
    assert main[3]["payload"]["thinking"] == "Read pricing.py first."
    assert main[5]["payload"]["input"] == {"path": "pricing.py"}
    results = [e for e in main if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [6, 8]
    assert [r["payload"].get("is_error", False) for r in results] == [False, True]
    assert results[1]["payload"]["exception"] == "CalledProcessError: exit 1"
    # A prompt borrowing a fragment is stored by reference: its text is put back whole.
    assert main[10]["payload"]["text"] == "Compare with this:\n" + gen.FRAGMENT


def test_a_conversation_of_0_31(tmp_path: Path) -> None:
    old = of(events(gen.write(tmp_path)), OLD)
    assert [e["type"] for e in old] == [
        "session/start", "message/context", "message/user", "message/assistant", "tool/call",
        "tool/result", "message/assistant", "tool/call", "tool/result", "message/assistant",
    ]  # fmt: skip
    # A result is logged with the response it was sent to: at that response's start.
    assert old[5]["cites"][0]["seq"] == 5 and old[5]["payload"]["is_error"] is True
    assert old[5]["time"][11:23] == "09:00:05.250" and old[4]["time"][11:23] == "09:00:01.750"
    assert old[8]["cites"][0]["seq"] == 8 and "is_error" not in old[8]["payload"]


def test_a_conversation_continued_after_the_upgrade(tmp_path: Path) -> None:
    """0.36 re-sends the 0.31 history as its first turn's chain: read from the responses,
    its copy skipped and counted; the conversation keeps its first name."""
    reading = llm.read_database(gen.write(tmp_path))
    cont = of(reading_events("llm", reading), CONT)
    assert [e["payload"].get("text") for e in cont[1:]] == [
        "What is a discount code?", "A code for a price cut.", "And a gift card?",
        "A stored balance, not a price cut.",
    ]  # fmt: skip
    assert reading.skipped["message:legacy-copy"] == 2
    titles = {s.session_id: s.title for s in reading.sessions}
    assert titles[CONT] == "What is a discount code?"
    assert titles[MAIN] == "The checkout total ignores di…"


def test_a_fork_is_a_child_citing_where_it_grows_from(tmp_path: Path) -> None:
    reading = llm.read_database(gen.write(tmp_path))
    got = reading_events("llm", reading)
    fork = of(got, FORK)
    assert fork[0]["payload"]["parent_session_id"] == MAIN
    # Forked after MAIN's first answer, whose last event is the call (seq 6).
    assert fork[0]["cites"] == [{"session_id": MAIN, "seq": 6}]
    assert [e["payload"].get("text") for e in fork[1:]] == [
        "Instead, explain apply_codes.", "apply_codes() takes each code's discount off."
    ]  # fmt: skip
    assert reading.skipped["message:fork-copy"] == 3


def test_skips_are_counted_and_explained(tmp_path: Path) -> None:
    reading = llm.read_database(gen.write(tmp_path))
    assert reading.skipped["attachment"] == 1 and reading.skipped["fragment"] == 1
    assert reading.skipped["part:attachment"] == 1
    assert reading.skipped["part:reasoning:redacted"] == 1
    reason = registry.get("llm").skip_reason
    assert all(reason(kind) for kind in reading.skipped), reading.skipped
    assert reason("part:hologram") is None  # a part type of a later version: drift


def test_another_program_s_logs_db_is_not_llm_s(tmp_path: Path) -> None:
    other = tmp_path / "logs.db"
    sqlite3.connect(other).executescript("CREATE TABLE logs (id INTEGER, line TEXT);")
    assert detect(other) is None
    reading = llm.read_database(other)
    assert not reading.sessions and "not an LLM database" in reading.problems[0].message


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = gen.write(tmp_path / "home")
    assert detect(db) == "llm"
    assert list(expand([tmp_path / "home"], "llm")) == [db]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LLM_USER_PATH", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    if sys.platform == "linux":
        assert registry.get("llm").default_locations() == [db.parent]
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "moved"))
    assert registry.get("llm").default_locations() == [tmp_path / "moved"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    db = gen.write(tmp_path)
    async with imported(nc, nats_url, subjects, tmp_path, db.parent, "llm",
                        expected=sum(COUNTS.values()), idle="0") as (worker, _):  # fmt: skip
        for session, count in COUNTS.items():
            await assert_events(nc, worker, session, session, count)
        # No cwd: each session is in the no-cwd workspace, where it sees only itself.
        lineage = await ask(nc, worker, "session_trace", FORK, session_id=FORK)
        assert "⟦Instead, explain apply_codes.⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=9)
        assert f"{MAIN} seq 8 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", OLD, session_id=OLD,
                          query="apply_codes")  # fmt: skip
        assert "apply_codes" in found


async def test_watch_follows_new_turns(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = gen.write(tmp_path, upto=2)

    def rest() -> None:
        gen.write(tmp_path)

    # Old 10, cont 5, main's first two turns 8 = 23; then main's last two turns (a
    # result, a text, a prompt, a text) and the fork (3) = 30.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "llm", db,
                       before=23, grow=rest, after=30)  # fmt: skip
