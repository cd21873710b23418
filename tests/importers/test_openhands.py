"""OpenHands: converter checks over the SDK's and the older server's events, an import read
back with the five tools, and ``watch`` following a conversation that gains event files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_openhands as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import openhands
from worker.importers.skips import BUILT_IN, reason_for
from worker.importers.whole_sources import OpenHandsImporter

SDK = f"openhands-{gen.SDK_ID}"
SERVER = f"openhands-{gen.SERVER_ID}"


def events(folder: Path) -> list[dict[str, Any]]:
    return reading_events("openhands", openhands.read_conversation(folder))


def test_sdk_events(tmp_path: Path) -> None:
    folder = gen.write_sdk(tmp_path)
    got = events(folder)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "compaction",
        "message/assistant",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] == gen.CWD
    assert got[5]["cites"] == [{"session_id": SDK, "seq": 5}]
    rejected = got[7]["payload"]
    assert rejected["is_error"] is True and "robotparser" in rejected["output"]
    assert got[8]["replaces"] == [2, 3, 4, 5, 6, 7, 8]
    skipped = openhands.read_conversation(folder).skipped
    assert skipped == {"event:SystemPromptEvent": 1, "event:ConversationStateUpdateEvent": 1}


def test_older_server_events(tmp_path: Path) -> None:
    folder = gen.write_server(tmp_path)
    got = events(folder)
    # The error observation that answers no action is context, not a tool result; the
    # only tool result cites its call.
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/context", "tool/call", "tool/result",
        "message/assistant",
    ]  # fmt: skip
    assert got[2]["payload"]["observation"] == "error" and "cites" not in got[2]
    assert got[4]["cites"] == [{"session_id": SERVER, "seq": 4}]
    assert [e for e in got if e["type"] == "tool/result"] == [got[4]]
    assert openhands.read_conversation(folder).skipped == {
        "event:system": 1, "event:recall": 2, "event:agent_state_changed": 2,
    }  # fmt: skip
    assert got[0]["payload"]["cwd"] == "/workspace/logs"
    assert got[0]["time"] == "2025-11-24T15:00:00.000Z"  # metadata.json's created_at


def test_an_event_of_no_known_shape_is_counted(tmp_path: Path) -> None:
    folder = gen.write_sdk(tmp_path, events=[])
    gen.write_sdk_event(folder, 0, {"kind": "TeleportEvent", "source": "agent"})
    gen.write_sdk_event(folder, 1, {"mystery": True})
    reading = openhands.read_conversation(folder)
    assert reading.skipped == {"event:TeleportEvent": 1, "event:None": 1}
    assert reading.sessions[0].items == []


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = tmp_path / ".openhands"
    gen.write_sdk(root)
    gen.write_server(root)
    # SDK: 10 events, title and end; server: 6, title and end.
    async with imported(nc, nats_url, subjects, tmp_path, root, "openhands",
                        expected=12 + 8, idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, SDK, SDK, 12)
        await assert_events(nc, worker, SERVER, SERVER, 8)
        # The server's one tool result cites its call; the uncaused error is context.
        result = await ask(nc, worker, "session_event_trace", SERVER, session_id=SERVER, seq=5)
        assert f"{SERVER} seq 4 · tool/call" in cites_of(result)
        error = await ask(nc, worker, "session_event_read", SERVER, session_id=SERVER, seq=3)
        assert "message/context" in error and "LLMNoActionError" in error
        lineage = await ask(nc, worker, "session_trace", SDK, session_id=SDK)
        assert "⟦Respect robots.txt⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", SDK, session_id=SDK, seq=6)
        assert f"{SDK} seq 5 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", SDK, query="robotparser",
                          session_id=SDK)  # fmt: skip
        assert "seq 8 · tool/result" in found


async def test_watch_follows_new_event_files(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    every = gen.sdk_events()
    folder = gen.write_sdk(tmp_path, events=every[:4])

    def more_events() -> None:
        for n, event in enumerate(every[4:], start=4):
            gen.write_sdk_event(folder, n, event)

    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "openhands", folder,
                       before=6, grow=more_events, after=10)  # fmt: skip


def test_older_server_thoughts_finish_and_null_observations(tmp_path: Path) -> None:
    """Seen in real conversations: the agent's words are each action's ``args.thought``,
    ``finish`` is its last message (nothing answers it), a recall's ``null`` observation is
    bookkeeping."""
    folder = gen.write_server(tmp_path, gen.server_turn())
    got = events(folder)
    assert [(e["type"], e["payload"].get("text")) for e in got[1:]] == [
        ("message/user", "Rotate the logs"),
        ("message/assistant", "Forcing a rotation first."),
        ("tool/call", None),
        ("tool/result", None),
        ("message/assistant", "The logs rotate daily now."),
    ]
    assert got[4]["cites"] == [{"session_id": SERVER, "seq": 4}]
    skipped = openhands.read_conversation(folder).skipped
    assert skipped == {"event:recall": 1, "event:null": 1}
    assert all(reason_for(kind, BUILT_IN["openhands"]) for kind in skipped)


def test_an_action_answered_twice_is_cited_by_both_answers(tmp_path: Path) -> None:
    """Seen in real conversations: an action's error observation, then (the action run
    again) its output, both caused by it."""
    again = {"observation": "run", "source": "agent", "content": "rotated again", "cause": 3}
    turn = [*gen.server_turn()[:5], again]
    got = events(gen.write_server(tmp_path, turn))
    results = [e for e in got if e["type"] == "tool/result"]
    assert [r["cites"] for r in results] == [[{"session_id": SERVER, "seq": 4}]] * 2


RECORDED = Path(__file__).parent / "recorded" / "openhands" / "sessions"


def test_a_recorded_task_sub_agent_is_a_child_citing_its_call() -> None:
    """OpenHands CLI 1.16.0 (SDK 1.21.0) keeps a ``task`` sub-agent's conversation in
    ``subagents/<id>/`` of its parent's folder: it was read as a session of its own, with
    no parent and no call cited. A test run that failed (exit code 1) was not an error."""
    (folder,) = [p for p in RECORDED.iterdir() if p.is_dir()]
    reading = openhands.read_conversation(folder)
    parent, child = reading.sessions
    assert child.parent == parent.session_id
    assert child.title == "Check refund handling"
    got = reading_events("openhands", reading)
    task = next(e for e in got if e["type"] == "tool/call" and e["payload"]["tool"] == "task")
    start = next(e for e in got if e["session_id"] == child.session_id)
    assert start["type"] == "session/start"
    assert start["cites"] == [{"session_id": parent.session_id, "seq": task["seq"]}]
    first = next(e for e in got if e["type"] == "tool/result")
    assert first["payload"]["is_error"] is True  # python3 -m unittest: exit code 1
    # Only the parent is a source: the sub-agent's folder is read with it.
    assert list(OpenHandsImporter().sources(RECORDED)) == [folder]
