"""Crush: converter checks over the latest and an early schema, the working directory from
``projects.json``, a message still streaming, an import read back with the five tools,
and ``watch`` following a ``crush.db`` that gains messages."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_crush as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import crush
from worker.importers.base import safe_id

MAIN = f"crush-{gen.MAIN}"
OTHER = f"crush-{gen.OTHER}"
CHILD = safe_id(gen.CHILD, prefix="crush-")
# Main: start, user, thinking, text, 3 x (call, result), command, output, compaction,
# user, error = 15, plus title and end; the sub-agent: start, 2 texts, title, end; the
# other: start, 2 texts, end (its title is Crush's placeholder).
EVENTS = 17 + 5 + 4


def events(db: Path) -> list[dict[str, Any]]:
    return reading_events("crush", crush.read_database(db))


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_the_latest_schema_gives_the_conversation(tmp_path: Path) -> None:
    db = gen.write_database(tmp_path / "shop" / ".crush" / "crush.db")
    reading = crush.read_database(db)
    got = reading_events("crush", reading)
    main = of(got, MAIN)
    assert [(e["type"], e["payload"].get("tool")) for e in main[1:13]] == [
        ("message/user", None), ("message/assistant", None), ("message/assistant", None),
        ("tool/call", "view"), ("tool/result", "view"), ("tool/call", "agent"),
        ("tool/result", "agent"), ("tool/call", "bash"), ("tool/result", "bash"),
        ("command", None), ("command/output", None), ("compaction", None),
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] == str(tmp_path / "shop")  # the folder holding .crush
    assert main[0]["time"] == "2025-11-24T16:00:00.000Z"  # seconds, not milliseconds
    assert main[2]["payload"]["thinking"] == "Look at the test first."
    assert main[4]["payload"]["input"] == {"file_path": "tests/up.py"}
    assert main[9]["payload"]["is_error"] is True
    assert main[9]["cites"] == [{"session_id": MAIN, "seq": 9}]
    assert main[11]["payload"] == {"text": "nothing to commit", "exit_code": 0,
                                   "source_type": "shell_command"}  # fmt: skip
    assert main[12]["replaces"] == list(range(2, 13))
    assert main[14]["type"] == "message/context"
    assert main[14]["payload"]["text"] == "[error] Provider error: rate limit exceeded"
    child = of(got, CHILD)
    assert child[0]["payload"]["parent_session_id"] == MAIN
    assert child[0]["cites"] == [{"session_id": MAIN, "seq": 7}]  # the agent tool's call
    assert [e["type"] for e in child[1:]] == ["message/user", "message/assistant"]
    titles = {s.session_id: s.title for s in reading.sessions}
    assert titles == {MAIN: "Flaky upload test", CHILD: "Find every retry helper", OTHER: None}
    # The title-generation session is not a conversation: counted, not imported.
    assert not of(got, safe_id(gen.TITLER, prefix="crush-"))
    assert reading.skipped == {"part:finish": 5, "part:binary": 1, "session:title-generation": 1}


def test_an_early_schema_has_no_summary_flag(tmp_path: Path) -> None:
    db = gen.write_database(tmp_path / "p" / ".crush" / "crush.db", latest=False)
    got = of(events(db), MAIN)
    assert not [e for e in got if e["type"] == "compaction"]
    summary = [e for e in got if "races the backoff" in e["payload"].get("text", "")]
    assert [e["type"] for e in summary] == ["message/assistant"]
    assert len(got) == 15


def test_the_working_directory_comes_from_projects_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRUSH_GLOBAL_DATA", str(tmp_path / "global"))
    listed = gen.write_database(tmp_path / "state" / "listed" / "crush.db")
    unlisted = gen.write_database(tmp_path / "state" / "unlisted" / "crush.db")
    projects = {"projects": [{"path": "/home/dev/api", "data_dir": str(listed.parent),
                              "last_accessed": "2025-11-24T16:00:00Z"}]}  # fmt: skip
    (tmp_path / "global").mkdir()
    (tmp_path / "global" / "projects.json").write_bytes(orjson.dumps(projects))
    assert events(listed)[0]["payload"]["cwd"] == "/home/dev/api"
    assert events(unlisted)[0]["payload"]["cwd"] is None  # nothing says where it ran
    importer = crush.CrushImporter()
    assert importer.default_locations() == [listed.parent, tmp_path / "global"]


def _unfinished(db: Path, mid: str, written: float, parts: list[dict[str, Any]]) -> None:
    """An assistant message without its finish, last written at ``written``."""
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at)"
        " VALUES (?, ?, 'assistant', ?, ?, ?)",
        (mid, gen.MAIN, orjson.dumps(parts).decode(), int(written), int(written)),
    )
    conn.commit()
    conn.close()


def test_a_message_still_streaming_waits(tmp_path: Path) -> None:
    db = gen.write_database(tmp_path / "p" / ".crush" / "crush.db", upto=1)
    parts = [gen.text("Looking"), gen.call("toolu_x", "grep", {"pattern": "x"}, done=False)]
    _unfinished(db, "m-99", time.time() - 5, parts)
    assert [e["type"] for e in of(events(db), MAIN)] == ["session/start", "message/user"]


def test_an_abandoned_message_is_read_as_it_stands(tmp_path: Path) -> None:
    """Quitting mid-answer left the message unfinished (versions before 2026): once
    another message follows it, or nothing wrote it for ten minutes, it is over."""
    db = gen.write_database(tmp_path / "p" / ".crush" / "crush.db", upto=1)
    _unfinished(db, "m-98", time.time() - crush.ABANDONED_S - 60, [gen.text("Half an ans")])
    assert [e["type"] for e in of(events(db), MAIN)][-1] == "message/assistant"
    db = gen.write_database(tmp_path / "q" / ".crush" / "crush.db", upto=1)
    _unfinished(db, "m-97", time.time() - 5, [gen.text("Cut off")])
    _unfinished(db, "m-99", time.time(), [gen.text("Still")])
    texts = [e["payload"].get("text") for e in of(events(db), MAIN)]
    assert texts[-1] == "Cut off"  # followed: over; the last one still streams


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, folder, "crush",
                        expected=EVENTS) as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 17), (CHILD, 5), (OTHER, 4)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "⟦Flaky upload test⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=10)
        assert f"{MAIN} seq 9 · tool/call" in cites_of(result)
        spawned = await ask(nc, worker, "session_event_trace", CHILD, session_id=CHILD, seq=1)
        assert f"{MAIN} seq 7 · tool/call" in cites_of(spawned)
        found = await ask(nc, worker, "session_search", MAIN, query="retry helper backoff")
        assert CHILD in found  # the sub-agent's session, in the same workspace


async def test_watch_follows_new_messages(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = gen.write_database(tmp_path / "p" / ".crush" / "crush.db", upto=4)

    def rest() -> None:
        gen.write_database(db, upto=None)

    # Main 1 + 6 (up to the agent tool's call), the sub-agent 1 + 2, the other 1 + 2; then
    # main's other 7 messages: 8 events.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "crush", db,
                       before=13, grow=rest, after=21)  # fmt: skip


def test_a_call_crush_kept_without_an_id_is_answered_by_its_result(tmp_path: Path) -> None:
    db = gen.write_unnamed_call(tmp_path / "crush.db")
    got = of(events(db), safe_id(gen.OTHER, prefix="crush-"))
    call = next(e for e in got if e["type"] == "tool/call" and e["payload"]["tool"] == "")
    answer = next(e for e in got if e["payload"].get("output") == "Tool not found: ")
    assert answer["cites"] == [{"session_id": call["session_id"], "seq": call["seq"]}]
    assert answer["payload"]["is_error"] is True
