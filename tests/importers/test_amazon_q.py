"""Amazon Q Developer CLI and Kiro CLI: converter checks over generated databases (both
history shapes, a compaction, a history window that moves), an import read back with the
five tools, ``watch`` following a conversation that grows, and detection."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_amazon_q as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import amazon_q, registry
from worker.importers.amazon_q import KIRO_CLI, Q_CLI
from worker.importers.detect import detect
from worker.importers.source_reading import ReadingConverter, SessionCache

MAIN, COMPACTED, KIRO = f"qcli-{gen.MAIN}", f"qcli-{gen.COMPACTED}", f"kiro-{gen.KIRO}"
# Main: start, context, user, text, 2 x (call, result), text, user, call, result, text = 13;
# compacted: start, compaction, 2 x (user, text) = 6; each plus its end (no titles).
EVENTS = 14 + 7


def events(db: Path) -> list[dict[str, Any]]:
    return reading_events("amazon-q", amazon_q.read_database(db, Q_CLI))


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_a_conversation_gives_its_turns(tmp_path: Path) -> None:
    db = gen.write_q(tmp_path / "amazon-q" / "data.sqlite3")
    reading = amazon_q.read_database(db, Q_CLI)
    main = of(reading_events("amazon-q", reading), MAIN)
    assert [(e["type"], e["payload"].get("tool")) for e in main] == [
        ("session/start", None), ("message/context", None), ("message/user", None),
        ("message/assistant", None), ("tool/call", "execute_bash"),
        ("tool/result", "execute_bash"), ("tool/call", "fs_read"), ("tool/result", "fs_read"),
        ("message/assistant", None), ("message/user", None), ("tool/call", "fs_write"),
        ("tool/result", "fs_write"),  ("message/assistant", None),
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] == gen.CWD
    assert main[0]["time"] == "2025-11-24T16:00:00.412Z"  # the prompt's, in UTC
    assert main[3]["time"] == "2025-11-24T16:00:02.000Z"  # the stream's end
    assert main[5]["cites"] == [{"session_id": MAIN, "seq": 5}]
    assert orjson.loads(main[5]["payload"]["output"])["stdout"] == "1 failed: test_sailings"
    assert main[7]["payload"]["is_error"] is True
    assert main[11]["payload"]["output"] == "Tool use was cancelled by the user"
    assert reading.skipped == {"user:image": 1}
    assert not reading.problems


def test_the_older_history_of_pairs_reads_the_same(tmp_path: Path) -> None:
    db = gen.write_q(tmp_path / "amazon-q" / "data.sqlite3")
    before = events(db)
    pairs = gen.state(gen.MAIN, [[e["user"], e["assistant"]] for e in gen.main_history()])
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE conversations SET value = ? WHERE key = ?",
                     (orjson.dumps(pairs).decode(), gen.CWD))  # fmt: skip
    conn.close()
    after = events(db)
    # Without request metadata the answers carry no time of their own.
    shape = [(e["session_id"], e["type"], e["payload"]) for e in after]
    assert shape == [(e["session_id"], e["type"], e["payload"]) for e in before]


def test_a_compacted_conversation_starts_with_its_summary(tmp_path: Path) -> None:
    db = gen.write_q(tmp_path / "amazon-q" / "data.sqlite3")
    compacted = of(events(db), COMPACTED)
    assert [e["type"] for e in compacted] == ["session/start", "compaction", "message/user",
                                              "message/assistant", "message/user",
                                              "message/assistant"]  # fmt: skip
    assert compacted[1]["payload"]["summary"] == gen.SUMMARY
    assert compacted[0]["time"] == "2025-11-24T16:03:20.412Z"  # the kept entry, older
    assert compacted[0]["payload"]["cwd"] == gen.OTHER_CWD


def test_entries_that_leave_the_window_stay_and_new_ones_follow(tmp_path: Path) -> None:
    """``/compact`` drains the history: what was read stays published, the summary is a
    compaction replacing it, and the entries after it follow."""
    db = gen.write_q(tmp_path / "amazon-q" / "data.sqlite3")
    cache = SessionCache()
    converter = ReadingConverter("amazon-q", lambda: amazon_q.read_database(db, Q_CLI, cache))
    first = [orjson.loads(out.body) for out in converter.feed(1, b"")]
    assert len(of(first, MAIN)) == 13
    kept = gen.main_history()[-1:]
    later = gen.entry(6, gen.prompt("Now write it", 60), gen.answer("", "Written."), 60)
    drained = gen.state(gen.MAIN, [*kept, later], summary="Fixture is missing; user declined.")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE conversations SET value = ? WHERE key = ?",
                     (orjson.dumps(drained).decode(), gen.CWD))  # fmt: skip
    conn.close()
    second = [orjson.loads(out.body) for out in converter.feed(2, b"")]
    assert [(e["seq"], e["type"]) for e in second] == [
        (14, "compaction"), (15, "message/user"), (16, "message/assistant"),
    ]  # fmt: skip
    assert second[0]["replaces"] == list(range(2, 14))
    assert converter.feed(3, b"") == []  # unchanged: nothing again


def test_kiro_keeps_the_same_state_in_its_own_table(tmp_path: Path) -> None:
    db = gen.write_kiro(tmp_path / "kiro-cli" / "data.sqlite3")
    got = reading_events("kiro-cli", amazon_q.read_database(db, KIRO_CLI))
    assert [(e["session_id"], e["type"]) for e in got] == [
        (KIRO, "session/start"), (KIRO, "message/user"), (KIRO, "message/assistant"),
    ]  # fmt: skip
    start = got[0]
    assert start["payload"]["cwd"] == gen.CWD and start["payload"]["source"] == "kiro-cli"
    assert start["time"] == "2025-11-24T16:08:20.000Z"  # created_at


def test_kiro_reads_both_its_tables_once(tmp_path: Path) -> None:
    """Kiro CLI 1.x kept conversations in the older table: both are read, a conversation in
    both once, from the newer."""
    db = gen.write_kiro(tmp_path / "kiro-cli" / "data.sqlite3")
    older = orjson.dumps(gen.state(gen.MAIN, gen.main_history()[:1])).decode()
    with sqlite3.connect(db) as conn:
        copied = conn.execute("SELECT value FROM conversations_v2").fetchone()[0]
        conn.execute("CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)")
        conn.executemany("INSERT INTO conversations VALUES (?, ?)",
                         [(gen.OTHER_CWD, older), (gen.CWD, copied)])  # fmt: skip
    conn.close()
    reading = amazon_q.read_database(db, KIRO_CLI)
    assert [s.session_id for s in reading.sessions] == [KIRO, f"kiro-{gen.MAIN}"]
    assert reading.sessions[1].cwd == gen.OTHER_CWD


def test_detection_and_default_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = gen.write(tmp_path / "home")
    assert detect(paths["amazon-q"]) == "amazon-q" and detect(paths["kiro-cli"]) == "kiro-cli"
    copied = tmp_path / "backup" / "data.sqlite3"  # elsewhere: its tables tell
    copied.parent.mkdir()
    shutil.copy(paths["kiro-cli"], copied)
    assert detect(copied) == "kiro-cli"
    assert registry.get("amazon-q").files(tmp_path / "home") == [paths["amazon-q"]]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert registry.get("kiro-cli").default_locations() == [tmp_path / "data" / "kiro-cli"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    db = gen.write_q(tmp_path / "amazon-q" / "data.sqlite3")
    async with imported(nc, nats_url, subjects, tmp_path, db, "amazon-q",
                        expected=EVENTS, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 14), (COMPACTED, 7)):
            await assert_events(nc, worker, session, session, count)
        trace = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=8)
        assert f"{MAIN} seq 7 · tool/call" in cites_of(trace)
        hits = await ask(nc, worker, "session_event_search", MAIN, session_id=MAIN,
                         query="sailings.csv")  # fmt: skip
        assert "tool/result" in hits  # the failed read's error
        compaction = await ask(nc, worker, "session_event_trace", COMPACTED,
                               session_id=COMPACTED, seq=2)  # fmt: skip
        replaced = compaction.split("Replaces (")[1].split("\n")[1]
        assert replaced.strip() == "none"  # nothing was read before the summary
        # Another directory is another workspace: the harbour conversation is not seen.
        hidden = await ask(nc, worker, "session_search", MAIN, query="harbour fees cents")
        assert COMPACTED not in hidden
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "Why does the ferry timetable test fail?" in lineage  # the first prompt


async def test_watch_follows_a_conversation_that_grows(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = gen.write_q(tmp_path / "amazon-q" / "data.sqlite3", upto=2)

    def rest() -> None:
        gen.write_q(db)

    # Main: start and the first two entries' 6 events; compacted: 6. Then 6 more of main.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "amazon-q", db,
                       before=13, grow=rest, after=19)  # fmt: skip
