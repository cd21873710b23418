"""Mistral Vibe: converter checks over both layouts (2.x folders with a sub-agent, 1.x
documents), an import read back with the five tools, and ``watch`` following a 2.x
session whose ``messages.jsonl`` grows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_vibe as gen
from tests.importers._agent_e2e import assert_events, by_session, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import vibe
from worker.importers.detect import detect
from worker.importers.source_reading import SessionCache

MAIN = f"vibe-{gen.MAIN}"
CHILD = f"vibe-{gen.CHILD}"
OLD = f"vibe-{gen.OLD}"
# Main: start, user, thinking, text, 3 x (call, result), hook text, command, output,
# compaction, user, text = 16, plus title and end; the sub-agent: start, 2 texts, end; the
# 1.x session: start, user, call, result, text, end.
EVENTS = 18 + 4 + 6


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_a_v2_folder_gives_the_session_and_its_sub_agent(tmp_path: Path) -> None:
    reading = vibe.read_v2(gen.write_v2(tmp_path))
    got = reading_events("vibe", reading)
    main = of(got, MAIN)
    assert [(e["type"], e["payload"].get("tool")) for e in main[1:]] == [
        ("message/user", None), ("message/assistant", None), ("message/assistant", None),
        ("tool/call", "grep"), ("tool/result", "grep"), ("tool/call", "task"),
        ("tool/result", "task"), ("tool/call", "bash"), ("tool/result", "bash"),
        ("message/context", None), ("command", None), ("command/output", None),
        ("compaction", None), ("message/user", None), ("message/assistant", None),
    ]  # fmt: skip
    start = main[0]
    assert start["payload"]["cwd"] == gen.CWD and start["payload"]["git_branch"] == "main"
    assert start["time"] == "2025-11-24T16:00:00.250Z"
    assert main[1]["time"] == "2025-11-24T16:04:30.000Z"  # the last save: messages have none
    assert main[2]["payload"]["thinking"] == "Rounding, probably."
    assert main[4]["payload"]["input"] == {"pattern": "round("}
    assert main[9]["payload"]["is_error"] is True
    assert main[9]["cites"] == [{"session_id": MAIN, "seq": 9}]
    assert main[12]["payload"] == {"text": "1 file changed", "exit_code": 0,
                                   "source_type": "manual_shell"}  # fmt: skip
    assert main[13]["replaces"] == list(range(2, 14))
    child = of(got, CHILD)
    assert child[0]["payload"]["parent_session_id"] == MAIN
    assert child[0]["cites"] == [{"session_id": MAIN, "seq": 7}]  # the task tool's call
    assert {s.session_id: s.title for s in reading.sessions} == {
        MAIN: "Invoice cent drift",
        CHILD: None,
    }
    assert reading.skipped == {"message:images": 1}


def test_a_v1_document(tmp_path: Path) -> None:
    reading = vibe.read_v1(gen.write_v1(tmp_path))
    got = reading_events("vibe", reading)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "tool/call", "tool/result", "message/assistant"
    ]  # fmt: skip
    assert got[0]["session_id"] == OLD and got[0]["payload"]["cwd"] == gen.CWD
    assert got[3]["cites"] == [{"session_id": OLD, "seq": 3}]
    assert reading.skipped == {"message:system": 1}


def test_sources_and_detection(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    importer = vibe.VibeImporter()
    files = importer.files(root)
    # The sub-agent's folder is read with its parent's, never on its own.
    assert [p.name for p in files] == [
        "session_20250901_121500_1a2b3c4d.json", "session_20251124_160000_0b1c2d3e"
    ]  # fmt: skip
    child = files[1] / "agents" / "explore_20251124_160010_77aa88bb"
    assert not importer.detect(child, [])
    half = root / "session_20251124_170000_aaaabbbb"
    half.mkdir()
    (half / "meta.json").write_bytes(b'{"session_id": "x", "start')
    reading = vibe.read_v2(half)
    assert not reading.sessions and "not readable JSON" in str(reading.problems[0])


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, "vibe",
                        expected=EVENTS) as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 18), (CHILD, 4), (OLD, 6)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "⟦Invoice cent drift⟧" in lineage
        spawned = await ask(nc, worker, "session_event_trace", CHILD, session_id=CHILD, seq=1)
        assert f"{MAIN} seq 7 · tool/call" in cites_of(spawned)
        found = await ask(nc, worker, "session_search", MAIN, query="CSV exports jan feb")
        assert OLD in found  # the 1.x session, in the same workspace


async def test_watch_follows_new_messages(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = gen.write_v2(tmp_path, upto=5)

    def rest() -> None:
        gen.write_v2(tmp_path)

    # Main 1 + 7 (up to the task tool's result), the sub-agent 3; then main's other 7
    # messages: 8 events.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "vibe", folder,
                       before=11, grow=rest, after=19)  # fmt: skip


RECORDED = Path(__file__).parent / "fixtures" / "vibe" / "mistral-vibe-2.26.1"


def test_the_recorded_session() -> None:
    """Recorded from mistral-vibe 2.26.1 (``vibe --legacy-harness -p``, then ``-c`` three
    times) on a synthetic task, offline, against a scripted OpenAI-compatible model (the
    rec branch's ScriptedModelServer): a read, a read of a missing file, a ``task``
    sub-agent (explore) that greps. Vibe's system prompt, tool descriptions and config are
    blanked in the two ``meta.json`` files: the importer reads none of them."""
    sessions, _, tally = by_session("vibe", RECORDED)
    main = sessions["vibe-46ab3aea-25d8-4f29-5b96-08de4ac04b08"]
    child = sessions["vibe-9a664aa1-1ce5-2a96-34f6-cba4e8aa1b86"]
    assert main[0]["payload"]["cwd"] == "/tmp/vibrec/task"
    results = [e for e in main if e["type"] == "tool/result"]
    assert [bool(r["payload"].get("is_error")) for r in results] == [False, True, False]
    assert all(r.get("cites") for r in results)
    task = next(e for e in main if e["payload"].get("tool") == "task")
    assert child[0]["payload"]["parent_session_id"] == main[0]["session_id"]
    assert child[0]["cites"] == [{"session_id": main[0]["session_id"], "seq": task["seq"]}]
    assert [e["type"] for e in main].count("message/user") == 4  # the -c turns, one file
    assert not tally.skipped and not tally.problems


def test_a_command_cut_off_by_the_user() -> None:
    """The recipe's 2.x recording (mistral-vibe 2.26.1, ``--legacy-harness``; kept as a
    fixture when the recipe moved to 3.0.3): a turn interrupted (SIGINT) while its command
    runs; Vibe answers the call with ``<user_cancellation>``, an error marked
    ``interrupted``."""
    sessions, _, _ = by_session("vibe", RECIPE_2X)
    events = [e for evs in sessions.values() for e in evs]
    results = [e for e in events if e["type"] == "tool/result"]
    cut = [r for r in results if r["payload"].get("interrupted")]
    assert len(cut) == 1 and cut[0]["payload"]["is_error"] is True
    assert cut[0]["payload"]["output"].startswith("<user_cancellation>")
    assert [e["type"] for e in events].count("compaction") == 1  # context_boundary


def test_a_command_cut_off_by_the_user_in_the_unified_store() -> None:
    """3.0.3 (recorded/vibe): the interrupted command's effect is ``cancelled`` with the
    reason "client interrupt": an error marked ``interrupted``, as 2.x's cancellation."""
    sessions, _, _ = by_session("vibe", RECORDED_3X)
    events = sessions[PARENT_3X]
    results = [e for e in events if e["type"] == "tool/result"]
    cut = [r for r in results if r["payload"].get("interrupted")]
    assert len(cut) == 1 and cut[0]["payload"]["is_error"] is True
    assert cut[0]["payload"]["output"] == "client interrupt"
    assert [bool(r["payload"].get("is_error")) for r in results] == [
        False, False, True, False, False, False, False, True,
    ]  # fmt: skip


def test_a_compaction_in_the_unified_store() -> None:
    """3.0.3 (recorded/vibe) compacts inside the fix's turn: the projection's ``checkpoint``
    entry of kind ``compaction`` is a ``compaction`` replacing what came before it, its
    summary the one the checkpoint's context holds; the turn goes on after it."""
    sessions, _, tally = by_session("vibe", RECORDED_3X)
    events = sessions[PARENT_3X]
    (compaction,) = [e for e in events if e["type"] == "compaction"]
    assert compaction["payload"]["trigger"] == "auto"
    assert compaction["payload"]["summary"].startswith("1. Fixed Ledger.balance")
    assert "<compaction_summary>" not in compaction["payload"]["summary"]
    before = [e["seq"] for e in events if 1 < e["seq"] < compaction["seq"]]
    assert compaction["replaces"] == before
    after = events[compaction["seq"]]
    assert after["type"] == "message/assistant" and after["payload"]["text"].startswith("Fixed:")
    assert not tally.skipped and not tally.problems


def test_a_sub_agent_in_the_unified_store() -> None:
    """3.0.3 (recorded/vibe): a child spawned from ``run_typescript`` is a folder of its own
    beside its parent's (``unified/child-<id>/``, no ``meta.json``); the parent's effect of
    kind ``subagent`` (``agents.spawn``) names it. The child is read with its parent, its
    start citing that call, its cwd from its runtime state."""
    sessions, _, tally = by_session("vibe", RECORDED_3X)
    assert len(sessions) == 2
    (child,) = [evs for evs in sessions.values() if evs[0]["payload"].get("parent_session_id")]
    (parent,) = [evs for evs in sessions.values() if evs is not child]
    spawn = next(e for e in parent if e["payload"].get("tool") == "agents.spawn")
    assert spawn["type"] == "tool/call" and "ledger.py" in str(spawn["payload"]["input"])
    assert child[0]["session_id"].startswith("vibe-child-")
    assert child[0]["payload"]["parent_session_id"] == parent[0]["session_id"]
    assert child[0]["cites"] == [{"session_id": parent[0]["session_id"], "seq": spawn["seq"]}]
    assert child[0]["payload"]["cwd"] == "/tmp/sq-record/vibe/shop"
    assert [e["type"] for e in child].count("tool/result") == 1
    assert not tally.skipped and not tally.problems


RECIPE_2X = Path(__file__).parent / "fixtures" / "vibe" / "mistral-vibe-2.26.1-recipe"
RECORDED_3X = Path(__file__).parent / "recorded" / "vibe" / "sessions"
PARENT_3X = "vibe-c6448440-f5dd-da8d-9e6b-4f5e9254ed4b"


def test_a_unified_store_session(tmp_path: Path) -> None:
    """3.x keeps sessions in a native store: its projection (the client's history) is
    read; its journal is Vibe's but not a source (no "cannot tell its format")."""
    folder = gen.write_unified(tmp_path)
    importer = vibe.VibeImporter()
    assert importer.files(tmp_path) == [folder]
    reading = importer.read(folder, SessionCache())
    got = reading_events("vibe", reading)
    assert [(e["type"], e["payload"].get("tool")) for e in got] == [
        ("session/start", None), ("message/user", None), ("message/assistant", None),
        ("message/assistant", None), ("tool/call", "file_system.read_file"),
        ("tool/result", "file_system.read_file"), ("tool/call", "file_system.read_file"),
        ("tool/result", "file_system.read_file"), ("message/assistant", None),
    ]  # fmt: skip
    assert got[0]["session_id"] == f"vibe-{gen.UNIFIED}" and got[0]["payload"]["cwd"] == gen.CWD
    assert got[2]["payload"]["thinking"] == "Check the rounding."
    assert got[4]["payload"]["input"] == {"path": "total.py"}
    assert '"content":"round(x, 2)"' in got[5]["payload"]["output"]  # the structured result
    assert got[7]["payload"]["is_error"] is True and got[7]["cites"][0]["seq"] == 7
    assert "File not found" in got[7]["payload"]["output"]
    assert reading.skipped == {"entry:plan": 1}  # an unknown kind: drift, counted
    journal = folder / "journal" / "0000000000000072.jsonl"
    assert detect(journal) == "vibe" and not importer.accepts(journal)


def test_a_unified_projection_with_older_entries_elsewhere_is_reported(tmp_path: Path) -> None:
    folder = gen.write_unified(tmp_path, truncated=True)
    reading = vibe.VibeImporter().read(folder, SessionCache())
    assert not reading.sessions and "only its latest entries" in str(reading.problems[0])


def test_the_recorded_unified_session() -> None:
    """Recorded from mistral-vibe 2.26.1 with ``--experimental-harness`` (the runtime 3.x
    uses; 3.0.3 itself is recorded in recorded/vibe), offline, scripted model: two reads (one
    failing), a shell command, ``-c`` turns. Kept: what the importer reads (``CURRENT``,
    the generation's manifest and projection state, the projection's chunk, ``meta.json``
    with Vibe's prompt, tools and config blanked)."""
    sessions, _, tally = by_session("vibe", UNIFIED_RECORDED)
    (events,) = sessions.values()
    calls = [e for e in events if e["type"] == "tool/call"]
    results = [e for e in events if e["type"] == "tool/result"]
    assert [c["payload"]["tool"] for c in calls] == [
        "file_system.read_file", "file_system.read_file", "file_system.bash"
    ]  # fmt: skip
    assert [bool(r["payload"].get("is_error")) for r in results] == [False, True, False]
    assert [e["type"] for e in events].count("message/user") == 4
    assert events[0]["payload"]["cwd"] == "/tmp/vibrec4/task"
    assert not tally.skipped and not tally.problems


UNIFIED_RECORDED = Path(__file__).parent / "fixtures" / "vibe" / "mistral-vibe-2.26.1-unified"
