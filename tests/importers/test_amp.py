"""Amp: converter checks over generated threads, an import read back with the five tools,
``watch`` following a thread rewritten with more messages, and detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_amp as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import amp, registry
from worker.importers.detect import detect
from worker.importers.source_reading import SessionCache

MAIN, SUB, HANDOFF, LATER = (amp.session_id(t) for t in (gen.MAIN, gen.SUB, gen.HANDOFF,
                                                          gen.LATER))  # fmt: skip
INLINE = f"{LATER}-task-{gen.LATER_TASK}"
# Main: start, user, thinking, text, 3 x (call, result), compaction, user, text, command,
# its output = 15, plus title and end; sub-agent: start, user, text, title, end; handoff
# (untitled): start, user, text, end; later: start, user, call, result, title, end; its
# inline sub-agent: start, prompt, text, call, result, text, title, end.
EVENTS = 17 + 5 + 4 + 6 + 8


def events(folder: Path) -> list[dict[str, Any]]:
    return reading_events("amp", amp.read_threads(folder))


def of(got: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    return [e for e in got if e["session_id"] == session]


def test_a_thread_gives_its_conversation(tmp_path: Path) -> None:
    folder = gen.write(tmp_path)
    reading = amp.read_threads(folder)
    main = of(reading_events("amp", reading), MAIN)
    assert [(e["type"], e["payload"].get("tool")) for e in main] == [
        ("session/start", None), ("message/user", None), ("message/assistant", None),
        ("message/assistant", None), ("tool/call", "Bash"), ("tool/result", "Bash"),
        ("tool/call", "Task"), ("tool/result", "Task"), ("tool/call", "edit_file"),
        ("tool/result", "edit_file"), ("compaction", None), ("message/user", None),
        ("message/assistant", None), ("command", None), ("command/output", None),
    ]  # fmt: skip
    start = main[0]
    assert start["payload"]["cwd"] == gen.CWD  # the tree's file URI, unquoted
    assert start["time"] == "2025-11-24T16:00:00.000Z" and main[11]["time"].startswith(
        "2025-11-24T16:10:00"
    )
    assert main[2]["payload"]["thinking"] == "Look at the raw file first."
    assert main[5]["cites"] == [{"session_id": MAIN, "seq": 5}]
    assert main[5]["payload"]["output"] == "HW 06:12 4.1m\nLW 12:30 0.8m"
    assert main[9]["payload"] == {"output": "old_str not found in parse.py", "is_error": True,
                                  "tool": "edit_file", "source_type": "tool_result"}  # fmt: skip
    assert main[10]["replaces"] == list(range(2, 11))
    assert main[14]["payload"]["text"] == "730 tides.txt"
    assert reading.skipped == {"content:image": 1}
    assert not reading.problems
    titles = [gen.TITLE, gen.SUB_TITLE, None, "Gauges", gen.LATER_TASK_TITLE]
    assert [s.title for s in reading.sessions] == titles


def test_sub_agent_and_handoff_are_children(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path))
    task_call = next(e for e in got if e["payload"].get("tool") == "Task")
    sub, handoff = of(got, SUB)[0], of(got, HANDOFF)[0]
    assert sub["payload"]["parent_session_id"] == MAIN
    assert sub["cites"] == [{"session_id": MAIN, "seq": task_call["seq"]}]
    assert sub["payload"]["relation"] == "subagent"
    assert handoff["payload"]["parent_session_id"] == MAIN
    assert handoff["payload"]["relation"] == "handoff" and "cites" not in handoff
    assert handoff["payload"]["cwd"] is None  # execute mode: no workspace tree


def test_a_sub_agent_run_inside_its_call_is_a_child(tmp_path: Path) -> None:
    """Later versions keep the Task's sub-agent turns in the call's run: a child session,
    published once the run is over."""
    folder = tmp_path / "threads"
    gen.write_thread(folder, gen.later_thread(running=True))
    running = events(folder)
    assert [e["type"] for e in of(running, INLINE)] == ["session/start"]  # its turns wait
    gen.write_thread(folder, gen.later_thread())
    got = events(folder)
    child = of(got, INLINE)
    assert [(e["type"], e["payload"].get("tool")) for e in child] == [
        ("session/start", None), ("message/user", None), ("message/assistant", None),
        ("tool/call", "Read"), ("tool/result", "Read"), ("message/assistant", None),
    ]  # fmt: skip
    task = next(e for e in got if e["payload"].get("tool") == "Task")
    assert child[0]["cites"] == [{"session_id": LATER, "seq": task["seq"]}]
    assert child[0]["payload"]["parent_session_id"] == LATER
    assert child[0]["payload"]["cwd"] == gen.CWD
    assert child[4]["cites"] == [{"session_id": INLINE, "seq": 4}]
    assert child[4]["payload"]["output"] == "Dover,Harwich"


def test_what_is_still_being_written_waits(tmp_path: Path) -> None:
    folder = tmp_path / "threads"
    thread = gen.main_thread(upto=5)
    thread["messages"][4]["content"][0]["run"] = {"status": "in-progress",
                                                  "progress": {"threadID": gen.SUB}}  # fmt: skip
    gen.write_thread(folder, thread)
    waiting = [e["type"] for e in events(folder)]
    assert waiting[-1] == "tool/call"  # the Task call; its run is not over
    thread["messages"][4]["content"][0]["run"]["status"] = "done"
    thread["messages"].append(gen._assistant(5, gen.text("Partial ans"), stop="end_turn"))
    thread["messages"][-1]["state"] = {"type": "streaming"}
    gen.write_thread(folder, thread)
    assert [e["type"] for e in events(folder)] == [*waiting, "tool/result"]


def test_a_damaged_status_is_read_as_not_over(tmp_path: Path) -> None:
    """A file edited by hand or cut short may hold any value where a run's status belongs:
    the result waits, nothing raises."""
    thread = gen.main_thread(upto=3)
    thread["messages"][2]["content"][0]["run"]["status"] = ["done"]
    gen.write_thread(tmp_path / "threads", thread)
    got = events(tmp_path / "threads")
    assert [e["type"] for e in got][-1] == "tool/call"


def test_unchanged_threads_are_not_parsed_again(tmp_path: Path) -> None:
    folder = gen.write(tmp_path)
    cache = SessionCache()
    first = amp.read_threads(folder, cache)
    broken = folder / f"{gen.MAIN}.json"
    size = broken.stat().st_size
    (folder / "T-0000.json").write_bytes(b'{"v": 1,')  # not a whole document
    again = amp.read_threads(folder, cache)
    assert [id(s) for s in again.sessions] == [id(s) for s in first.sessions]
    assert [p.path for p in again.problems] == [str(folder / "T-0000.json")]
    assert broken.stat().st_size == size


def test_detection_and_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = gen.write(tmp_path / "home")
    (folder / f"{gen.MAIN}.json.amptmp").write_bytes(b"{")  # a write in flight: not a thread
    importer = registry.get("amp")
    assert detect(folder) == "amp" and detect(folder / f"{gen.MAIN}.json") == "amp"
    assert importer.files(tmp_path / "home") == [folder]
    assert len(amp.read_threads(folder).sessions) == 5
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert importer.default_locations() == [tmp_path / "data" / "amp" / "threads"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, folder, "amp",
                        expected=EVENTS, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 17), (SUB, 5), (HANDOFF, 4), (LATER, 6), (INLINE, 8)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert f"⟦{gen.TITLE}⟧" in lineage and SUB in lineage.split("Descendants")[1]
        trace = await ask(nc, worker, "session_event_trace", SUB, session_id=SUB, seq=1)
        assert f"{MAIN} seq 7 · tool/call" in cites_of(trace)
        found = await ask(nc, worker, "session_search", MAIN, query="stations Harwich Ramsgate")
        assert SUB in found  # the sub-agent's thread, in the same workspace
        # The handoff has no workspace tree: the no-cwd workspace, not the tide tables'.
        hidden = await ask(nc, worker, "session_search", MAIN, query="Exported tides.csv")
        assert HANDOFF not in hidden
        own = await ask(nc, worker, "session_event_read", HANDOFF, session_id=HANDOFF, seq=1)
        assert '"cwd":null' in own


async def test_watch_follows_a_rewritten_thread(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path, upto=5)  # the main thread's first five messages

    def rest() -> None:
        gen.write_thread(folder, gen.main_thread())

    # Main 1 + 7, sub-agent 3, handoff 3, later 4 and its inline sub-agent 6; then main's
    # other six messages: 7 events.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "amp", folder,
                       before=24, grow=rest, after=31)  # fmt: skip
