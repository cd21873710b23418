"""OpenClaw: the agent's SQLite store and the older transcripts converted (Pi's entries,
OpenClaw's ids, a sub-agent citing its ``sessions_spawn`` call, a rewind by a ``leaf``
entry as a fork, counted skips), detection before Pi, an import read back with the five
tools, and ``watch`` following the store and an older transcript."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_openclaw as gen
from tests.importers import gen_pi
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers._sources import cites_of, watch_growth
from tests.importers.test_import_tools import ask, sessionquery
from worker.importers import registry, zstd
from worker.importers.detect import detect, expand
from worker.importers.plugin import ConvertOptions, UnreadableSource

FMT = "openclaw"
MAIN, SUB, LEGACY, LEGACY_SUB = (
    f"openclaw-{sid}" for sid in (gen.MAIN, gen.SUB, gen.LEGACY, gen.LEGACY_SUB)
)
FORK = f"{MAIN}-fork-e12"
# Events as imported (every session old: titled where the store names it, and ended).
COUNTS = {MAIN: 14, SUB: 6, FORK: 4, LEGACY: 5, LEGACY_SUB: 4}


def sessions_of(root: Path) -> tuple[dict[str, list[dict[str, Any]]], Any]:
    sessions, _, tally = by_session(FMT, root)
    return sessions, tally


def test_the_store_as_pi_entries(tmp_path: Path) -> None:
    sessions, tally = sessions_of(gen.write(tmp_path))
    main = sessions[MAIN]
    assert main[0]["payload"]["cwd"] == gen.CWD and main[0]["payload"]["version"] == 4
    assert [e["type"] for e in main[1:6]] == [
        "message/user", "message/assistant", "message/assistant", "tool/call", "tool/result",
    ]  # fmt: skip
    error = main[7]
    assert error["payload"]["is_error"] is True and error["cites"][0]["seq"] == 7
    compaction = main[11]
    assert compaction["type"] == "compaction" and compaction["replaces"] == list(range(2, 11))
    assert tally.skipped == {"record:model_change": 1, "record:leaf": 1, "record:reset": 1,
                             "record:checkpoint-or-trajectory-file": 3}  # fmt: skip
    assert not tally.problems
    # The row OpenClaw stored zstd-compressed reads like the others.
    assert sessions[SUB][3]["payload"]["text"] == gen.COMPRESSED_TEXT


def test_a_compressed_row_without_zstd_is_a_problem_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zstd, "decompressor", lambda: None)
    sessions, tally = sessions_of(gen.write(tmp_path))
    assert [p.message for p in tally.problems] == [
        "a zstd-compressed row and this Python has no zstd:"
        " pip install 'session-query-worker[zstd]' to read it"
    ]
    assert gen.COMPRESSED_TEXT not in str(sessions[SUB])


def test_a_sub_agent_cites_its_spawn_and_a_rewind_forks(tmp_path: Path) -> None:
    sessions, _ = sessions_of(gen.write(tmp_path))
    spawn = next(e for e in sessions[MAIN] if e["payload"].get("tool") == "sessions_spawn")
    child = sessions[SUB][0]
    assert child["payload"]["parent_session_id"] == MAIN
    assert child["cites"] == [{"session_id": MAIN, "seq": spawn["seq"]}]
    # The leaf went back to e02: the next entry, written after the tail, hangs from it.
    fork = sessions[FORK]
    assert fork[0]["payload"]["parent_session_id"] == MAIN
    assert fork[0]["cites"] == [{"session_id": MAIN, "seq": 2}]
    assert [e["payload"]["text"] for e in fork[1:]] == [
        "plan the fertiliser instead", "Fertilise every two weeks.",
    ]  # fmt: skip


def test_a_sub_agent_spawned_through_tool_search_cites_its_call(tmp_path: Path) -> None:
    """OpenClaw 2026.9.6 offers ``sessions_spawn`` behind tool search: the call is a
    ``tool_call`` naming it (as the recording's is), and OpenClaw writes the nested run as a
    ``custom`` message too: counted, not an empty context message."""
    store = gen.write_store(tmp_path / "agents/main/agent/openclaw-agent.sqlite", search=True)
    sessions, tally = sessions_of(store.parent)
    spawn = next(e for e in sessions[MAIN] if e["payload"].get("tool") == "tool_call")
    assert spawn["payload"]["arguments"]["id"] == "sessions_spawn"
    child = sessions[SUB][0]
    assert child["payload"]["parent_session_id"] == MAIN
    assert child["cites"] == [{"session_id": MAIN, "seq": spawn["seq"]}]
    result = next(e for e in sessions[MAIN] if e["type"] == "tool/result"
                  and e["cites"] == [{"session_id": MAIN, "seq": spawn["seq"]}])  # fmt: skip
    assert result["seq"] == spawn["seq"] + 1  # nothing published for the nested run
    assert tally.skipped[f"message:custom:{gen.NESTED_TOOL}"] == 1
    assert registry.get(FMT).skip_reason(f"message:custom:{gen.NESTED_TOOL}")


def test_a_rewrite_and_cold_storage_are_counted(tmp_path: Path) -> None:
    """A transcript rewrite deletes main's rows from a point and writes them again under
    new row ids: read after the first reading, they publish nothing twice. A session moved
    to cold storage is not in the rows: counted."""
    db = gen.write_store(tmp_path / "openclaw-agent.sqlite")
    importer = registry.get(FMT)
    converter = importer.converter(db, ConvertOptions())
    first = list(importer.records(db))
    assert sum(len(converter.feed(r.number, r.data)) for r in first) == 19
    conn = sqlite3.connect(db)
    # The sub-agent writes on; then main's rows from seq 14 are rewritten (new row ids).
    more = gen_pi._entry(24, 23, "message", message=gen_pi._user("and the lettuce bed?"))
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at)"
                 " VALUES (?, 100, ?, 1)", (gen.SUB, orjson.dumps(more).decode()))  # fmt: skip
    kept = conn.execute("SELECT seq, event_json, created_at FROM transcript_events"
                        " WHERE session_id = ? AND seq >= 14", (gen.MAIN,)).fetchall()  # fmt: skip
    conn.execute("DELETE FROM transcript_events WHERE session_id = ? AND seq >= 14", (gen.MAIN,))
    for seq, event, created in kept:
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at)"
                     " VALUES (?, ?, ?, ?)", (gen.MAIN, seq, event, created))  # fmt: skip
    conn.execute("CREATE TABLE session_transcript_cold_archives (session_id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO session_transcript_cold_archives VALUES ('old-session')")
    conn.commit()
    conn.close()
    rewritten = list(importer.records(db, after=first[-1].position, number=len(first)))
    assert len(rewritten) == 1 + len(kept) == 7
    out = [converter.feed(r.number, r.data) for r in rewritten]
    assert [len(events) for events in out] == [1, 0, 0, 0, 0, 0, 0]
    converter.finish()
    assert converter.tally.skipped["entry:rewritten"] == 6
    assert converter.tally.skipped["session:cold-archived"] == 1


def test_the_older_transcripts_and_their_sessions_json(tmp_path: Path) -> None:
    folder = gen.write_legacy(tmp_path / ".openclaw" / "agents" / "main" / "sessions")
    files = list(expand([folder], FMT))
    checkpoint = f"{gen.LEGACY}.checkpoint.0c000000-0000-4000-8000-00000000e005.jsonl"
    assert [p.name for p in files] == [
        checkpoint, f"{gen.LEGACY}.jsonl", f"{gen.LEGACY_SUB}.jsonl",
    ]  # fmt: skip
    sessions, tally = sessions_of(folder)
    # The checkpoint copy repeats the transcript: counted, not a session of its own.
    assert tally.skipped == {"record:checkpoint-or-trajectory-file": 3}
    assert set(sessions) == {LEGACY, LEGACY_SUB}
    assert sessions[LEGACY_SUB][0]["payload"]["parent_session_id"] == LEGACY
    assert "cites" not in sessions[LEGACY_SUB][0]
    converter = registry.get(FMT).converter(files[1], ConvertOptions())
    for number, line in enumerate(files[1].read_bytes().splitlines(), start=1):
        converter.feed(number, line)
    ended = converter.idle()
    assert [e.kind for e in ended] == ["session/title", "session/end"]
    assert gen.LEGACY_TITLE.encode() in ended[0].body


def test_detected_before_pi_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gen.write(tmp_path / "home")
    for path in expand([root], FMT):
        assert detect(path) == FMT
    pi_root = gen_pi.write(tmp_path / "pi-home")
    assert {detect(path) for path in expand([pi_root], "pi")} == {"pi"}
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
    monkeypatch.delenv("OPENCLAW_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert registry.get(FMT).default_locations() == [root]
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("OPENCLAW_HOME", str(elsewhere))
    assert registry.get(FMT).default_locations() == [elsewhere / ".openclaw" / "agents"]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    assert registry.get(FMT).default_locations() == [tmp_path / "state" / "agents"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT,
                        expected=sum(COUNTS.values()), idle="0") as (worker, _):  # fmt: skip
        for session, count in COUNTS.items():
            await assert_events(nc, worker, session, session, count)
        trace = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace and SUB in trace and FORK in trace
        spawned = await ask(nc, worker, "session_event_trace", SUB, session_id=SUB, seq=1)
        assert f"{MAIN} seq 9 · tool/call" in cites_of(spawned)
        found = await ask(nc, worker, "session_search", MAIN, query="soil moisture percent")
        assert SUB in found


async def test_watch_follows_the_store(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = gen.write_store(tmp_path / "openclaw-agent.sqlite", upto=8)

    def rest() -> None:
        gen.write_store(db)

    # Up to the spawn call: main's 9 events; then the sub-agent's 4, main's result, text
    # and compaction, the fork's start and 2 messages: 19 in all.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", FMT, db,
                       before=9, grow=rest, after=19)  # fmt: skip


async def test_watch_follows_an_older_transcript(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = gen.write_legacy(tmp_path / "agents" / "main" / "sessions")
    entry = gen_pi._entry(33, 32, "message", message=gen_pi._user("and the climbing roses?"))
    await watch_grows(nc, nats_url, subjects, f"watch-{unique}", folder, FMT,
                      folder / f"{gen.LEGACY}.jsonl", gen_pi.lines([entry]),
                      before=6, after=7)  # fmt: skip


def test_a_store_of_another_schema_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "openclaw-agent.sqlite"
    sqlite3.connect(db).executescript("CREATE TABLE other (x INTEGER);")
    with pytest.raises(UnreadableSource, match="cannot read the store"):
        list(registry.get(FMT).records(db))
    assert list(registry.get(FMT).records(db, complete=False)) == []  # watch: next poll


def test_entries_after_a_pruned_heartbeat_are_read_in_the_main_thread(tmp_path: Path) -> None:
    path = gen.write_pruned_heartbeats(tmp_path / ".openclaw" / "agents" / "main" / "sessions")
    sessions, tally = sessions_of(path.parent)
    texts = [e["payload"].get("text") for e in sessions[f"openclaw-{gen.HEARTBEAT}"]]
    assert "[OpenClaw heartbeat poll]" in texts and "HEARTBEAT_OK" in texts
    assert tally.skipped["entry:unknown-parent"] == 2
    tally.explain(registry.get(FMT).skip_reason)  # a kind OpenClaw writes: not drift
    assert not tally.unknown, tally.unknown


def test_a_result_whose_call_openclaw_dropped_keeps_its_call_id_and_is_counted(
    tmp_path: Path,
) -> None:
    """OpenClaw's session guard drops a call naming a tool the session lacks (and the
    message it leaves empty) but writes the loop's "not found" result: imported as a
    result with its call id and tool, citing nothing, ``not_run``, and counted by the
    import summary."""
    path = gen.write_dropped_calls(tmp_path / ".openclaw" / "agents" / "main" / "sessions")
    sessions, tally = sessions_of(path.parent)
    events = sessions[f"openclaw-{gen.DROPPED}"]
    results = [e for e in events if e["type"] == "tool/result"]
    assert [r["payload"]["call_id"] for r in results] == list(gen.DROPPED_CALLS)
    assert [r["payload"]["tool"] for r in results] == ["weather:forecast", "calendar:events"]
    for result in results:
        assert "cites" not in result
        assert result["payload"]["is_error"] is True and result["payload"]["not_run"] is True
        assert result["payload"]["output"].endswith("not found")
    assert not [e for e in events if e["type"] == "tool/call"]
    assert not tally.skipped
    environment = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    done = sessionquery("import", "--format", FMT, str(path), "--dry-run", "--quiet",
                        env=environment)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tool results citing no call: 2" in done.stderr
