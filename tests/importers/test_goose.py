"""Goose: converter checks over both schema versions, an import read back with the five
tools, and ``watch`` following a ``sessions.db`` that gains messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_goose as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import goose

MAIN = f"goose-{gen.MAIN}"
HELPER = f"goose-{gen.HELPER}"
NO_CWD = f"goose-{gen.NO_CWD}"
# Main: start, user, thinking, text, 2 x (call, result), text, compaction, user = 11, plus
# title and end; helper: start and 2 texts, plus end (untitled); no-cwd: start and a
# text, plus title and end.
EVENTS = 13 + 4 + 4


def events(db: Path) -> list[dict[str, Any]]:
    return reading_events("goose", goose.read_database(db))


@pytest.mark.parametrize("schema", [5, 2])
def test_both_schema_versions_give_the_conversation(tmp_path: Path, schema: int) -> None:
    db = tmp_path / "sessions.db"
    gen.write_database(db, schema=schema)
    got = events(db)
    main = [(e["type"], e["payload"].get("tool")) for e in got if e["session_id"] == MAIN]
    assert main[3:7] == [
        ("message/assistant", None), ("tool/call", "developer__shell"),
        ("tool/result", "developer__shell"), ("tool/call", "developer__text_editor"),
    ]  # fmt: skip
    result = next(e for e in got if e["type"] == "tool/result")
    assert result["payload"]["output"] == "date,amount\n2025-03-01,120.00"
    # The response stored under the role ``tool`` is the second call's result, citing it.
    tool_row = [e for e in got if e["session_id"] == MAIN][7]
    assert (tool_row["type"], tool_row["payload"]["output"]) == ("tool/result", "2025-03-01,120.00")
    assert tool_row["cites"] == [{"session_id": MAIN, "seq": 7}]
    compactions = [e for e in got if e["type"] == "compaction"]
    # Only v3 and later mark what the model alone sees: v2 reads the summary as a message.
    assert len(compactions) == (1 if schema == 5 else 0)
    if compactions:
        assert compactions[0]["replaces"] == list(range(2, 10))
    start = next(e for e in got if e["session_id"] == NO_CWD)
    assert start["payload"]["cwd"] is None
    assert goose.read_database(db).skipped == {"content:image": 1}


def test_the_older_session_files(tmp_path: Path) -> None:
    path = gen.write_session_file(tmp_path / "sessions")
    path.write_bytes(path.read_bytes() + b'{"role": "user", "created": 1, "content": [')
    reading = goose.read_jsonl(path)
    got = reading_events("goose", reading)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "tool/call", "tool/result", "message/assistant"
    ]  # fmt: skip  # the last line, still being written, waits
    assert got[0]["session_id"] == "goose-20250301_090000"
    assert got[0]["payload"]["cwd"] == gen.CWD and got[0]["time"] == "2025-11-24T16:00:00.000Z"
    assert reading.sessions[0].title == "Quarterly totals"
    assert got[3]["cites"] == [{"session_id": "goose-20250301_090000", "seq": 3}]
    assert not reading.problems


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    db = tmp_path / "sessions.db"
    gen.write_database(db)
    async with imported(nc, nats_url, subjects, tmp_path, db, "goose",
                        expected=EVENTS, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 13), (HELPER, 4), (NO_CWD, 4)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "⟦March ledger reconciliation⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=6)
        assert f"{MAIN} seq 5 · tool/call" in cites_of(result)
        # The response stored under the role ``tool``: the second call's result.
        stored = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=8)
        assert "tool/result" in stored and f"{MAIN} seq 7 · tool/call" in cites_of(stored)
        found = await ask(nc, worker, "session_search", MAIN, query="CSV files reports")
        assert HELPER in found  # the sub-agent's session, in the same workspace
        # The session without a working dir is in the no-cwd workspace: not the ledger's.
        hidden = await ask(nc, worker, "session_search", MAIN, query="empty working dir")
        assert NO_CWD not in hidden
        own = await ask(nc, worker, "session_event_read", NO_CWD, session_id=NO_CWD, seq=1)
        assert '"cwd":null' in own


async def test_watch_follows_new_messages(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = tmp_path / "sessions.db"
    gen.write_database(db, upto=2)  # the first two messages of each session

    def rest() -> None:
        gen.write_database(db, upto=None)

    # Main 1 + 4, helper 1 + 2, no-cwd 1 + 1; then main's other 6 messages: 6 events.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "goose", db,
                       before=10, grow=rest, after=16)  # fmt: skip
