"""Kimi CLI: converter checks over a session's wire log and its sub-agent's, the cwd from
``kimi.json``, an import read back with the five tools, and ``watch`` following a log
that grows."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_kimi as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers.base import safe_id
from worker.importers.kimi import KimiConverter, KimiImporter

MAIN = f"kimi-{gen.MAIN}"
CHILD = safe_id(f"{gen.MAIN}-agent-{gen.AGENT}", prefix="kimi-")
OTHER = f"kimi-{gen.OTHER}"
# Main: start, user, thinking, text, 3 x (call, result), /compact (command, compaction,
# its output), notification, the steered text, text = 16, plus title and end; the
# sub-agent: start, user, text, title, end; the other: start, user, text, end (untitled).
EVENTS = 18 + 5 + 4


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "home" / ".kimi"))
    return tmp_path / "home"


def test_a_session_its_sub_agent_and_the_work_dir(home: Path) -> None:
    sessions, _, tally = by_session("kimi", gen.write(home))
    main = sessions[MAIN]
    assert [(e["type"], e["payload"].get("tool")) for e in main] == [
        ("session/start", None), ("message/user", None), ("message/assistant", None),
        ("message/assistant", None), ("tool/call", "ReadFile"), ("tool/result", "ReadFile"),
        ("tool/call", "Agent"), ("tool/result", "Agent"), ("tool/call", "Shell"),
        ("tool/result", "Shell"), ("command", None), ("compaction", None),
        ("command/output", None), ("message/context", None), ("message/user", None),
        ("message/assistant", None),
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] == gen.CWD
    assert main[0]["time"] == "2025-11-24T16:00:00.250Z"
    assert main[2]["payload"]["thinking"] == "Check the retry helper."
    assert main[4]["payload"]["input"] == {"path": "retry.py"}
    assert main[9]["payload"]["is_error"] is True
    assert main[9]["payload"]["output"] == "Command failed with exit code 1"
    assert main[9]["cites"] == [{"session_id": MAIN, "seq": 9}]
    assert main[10]["payload"]["command"] == "compact"  # a slash command the CLI ran
    assert main[11]["replaces"] == list(range(2, 12))
    assert main[12]["payload"]["text"] == "The context has been compacted."
    assert main[13]["payload"]["text"] == "Background task done\nbuild finished"
    child = sessions[CHILD]
    assert child[0]["payload"]["parent_session_id"] == MAIN
    assert child[0]["payload"]["subagent_type"] == "explore"
    assert child[0]["cites"] == [{"session_id": MAIN, "seq": 7}]  # the Agent call
    assert [e["type"] for e in child[1:]] == ["message/user", "message/assistant"]
    assert sessions[OTHER][0]["payload"]["cwd"] is None  # its work dir is not listed
    assert tally.skipped == {
        "record:StepBegin": 3,
        "record:StatusUpdate": 1,
        "record:SubagentEvent": 2,
        "record:TurnEnd": 5,
        "SteerInput:image_url": 1,
    }


def test_the_title_waits_for_the_end(home: Path) -> None:
    """The title is state.json's as the session ends (renamed after the first turns)."""
    root = gen.write(home)
    path = next(root.rglob(f"{gen.MAIN}/wire.jsonl"))
    converter = KimiConverter(path)
    outs = [out for n, line in enumerate(path.read_bytes().splitlines(), start=1)
            for out in converter.feed(n, line)]  # fmt: skip
    assert not [o for o in outs if o.kind == "session/title"]
    state = path.parent / "state.json"
    state.write_bytes(orjson.dumps({"custom_title": "Seeded jitter"}))
    ends = [orjson.loads(o.body) for o in converter.idle()]
    assert [(e["type"], e["seq"]) for e in ends] == [("session/title", 17), ("session/end", 18)]
    assert ends[0]["payload"]["title"] == "Seeded jitter"


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path, home: Path
) -> None:
    root = gen.write(home)
    async with imported(nc, nats_url, subjects, tmp_path, root, "kimi",
                        expected=EVENTS) as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 18), (CHILD, 5), (OTHER, 4)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "⟦Flaky retry test⟧" in lineage
        spawned = await ask(nc, worker, "session_event_trace", CHILD, session_id=CHILD, seq=1)
        assert f"{MAIN} seq 7 · tool/call" in spawned.split("Cites (")[1]
        found = await ask(nc, worker, "session_search", MAIN, query="retry callers net db")
        assert CHILD in found


async def test_watch_follows_an_appended_turn(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, home: Path
) -> None:
    root = gen.write(home, upto=11)
    path = next(root.rglob(f"{gen.MAIN}/wire.jsonl"))
    rest = gen.wire_lines(gen.main_records()[11:], start=11)
    # Up to the sub-agent's events: main start + 6; the sub-agent 3, the other 3. Then the
    # rest of the main log: 9 more.
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", root, "kimi", path,
                             rest, before=13, after=22)  # fmt: skip
    assert "published 22 events" in said


def test_kimi_codes_log_is_not_taken_for_this_format(tmp_path: Path) -> None:
    header = b'{"type": "metadata", "protocol_version": "1.4"}\n'
    other = b'{"type": "config.update", "profileName": "agent"}\n'
    path = tmp_path / "agents" / "main" / "wire.jsonl"
    assert not KimiImporter().detect(path, [header, other])
    assert KimiImporter().detect(path, [header])  # a session that has only begun


RECORDED = Path(__file__).parent / "fixtures" / "kimi" / "kimi-cli-1.52.0"


def test_the_recorded_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded from kimi-cli 1.52.0's own CLI (its Typer app; the package's entry point
    only prints a deprecation notice) on a synthetic task, offline, against a scripted
    OpenAI-compatible model (the rec branch's ScriptedModelServer): two reads (one of a
    missing file), an Agent sub-agent that runs a shell command, then ``-C`` turns: a
    question, ``/compact``, another question. The context files (Kimi's system prompt) are
    left out: the importer does not read them."""
    monkeypatch.setenv("KIMI_SHARE_DIR", str(RECORDED))
    sessions, _, tally = by_session("kimi", RECORDED / "sessions")
    session = "4ee7600c-dc80-4d15-ba0a-b7b36f466892"
    main, child = sessions[f"kimi-{session}"], sessions[f"kimi-{session}-agent-afb1190a2"]
    assert main[0]["payload"]["cwd"] == "/tmp/kimirec/task"
    results = [e for e in main if e["type"] == "tool/result"]
    assert [bool(r["payload"].get("is_error")) for r in results] == [False, True, False]
    assert "missing.txt" in results[1]["payload"]["output"]  # the error's message
    assert all(r.get("cites") for r in results)
    agent_call = next(e for e in main if e["payload"].get("tool") == "Agent")
    assert child[0]["cites"] == [{"session_id": f"kimi-{session}", "seq": agent_call["seq"]}]
    harness = [e["type"] for e in main if e["type"] in ("command", "compaction", "command/output")]
    assert harness == ["command", "compaction", "command/output"]
    assert tally.skipped["record:SubagentEvent"] == 15 and not tally.problems


def test_a_call_cut_off_when_its_turn_ends() -> None:
    """The recording (recorded/kimi, 1.52.0): a turn interrupted (SIGINT) while its Shell
    command runs ends (``TurnEnd``) with the call and no ``ToolResult``. The call gets a
    result marked ``interrupted``, and nothing else does."""
    root = Path(__file__).parent / "recorded" / "kimi" / "sessions"
    sessions, _, _ = by_session("kimi", root)
    for session, events in sessions.items():
        calls = {e["seq"]: e for e in events if e["type"] == "tool/call"}
        results = [e for e in events if e["type"] == "tool/result"]
        cited = [c["seq"] for r in results for c in r.get("cites", [])]
        assert sorted(cited) == sorted(calls), session
        cut = [r for r in results if r["payload"].get("interrupted")]
        if not events[0]["payload"].get("parent_session_id"):  # the main session
            assert len(cut) == 1 and cut[0]["payload"]["is_error"] is True
            (call,) = [calls[c["seq"]] for c in cut[0]["cites"]]
            assert "sleep" in orjson.dumps(call["payload"]["input"]).decode()
        else:
            assert not cut


def test_a_sub_agent_before_its_own_log(home: Path) -> None:
    """Before 1.x, a Task sub-agent's events were only copied into its parent's log: they
    are its child session, whose start cites the Task call."""
    path = gen.write_legacy(home)
    sessions, _, tally = by_session("kimi", path)
    parent = f"kimi-{gen.LEGACY}"
    child = safe_id(f"{gen.LEGACY}-agent-{gen.TASK_CALL}", prefix="kimi-")
    assert [e["type"] for e in sessions[parent]] == [
        "session/start", "message/user", "tool/call", "tool/result", "message/assistant"
    ]  # fmt: skip
    kid = sessions[child]
    assert [e["type"] for e in kid] == [
        "session/start", "message/user", "tool/call", "tool/result", "message/assistant"
    ]  # fmt: skip
    assert kid[0]["payload"]["parent_session_id"] == parent
    assert kid[0]["cites"] == [{"session_id": parent, "seq": 3}]  # the Task call
    assert kid[3]["cites"] == [{"session_id": child, "seq": 3}]
    assert tally.skipped == {"record:SubagentEvent:StepBegin": 1}


def test_a_call_still_streaming_when_others_results_come(home: Path) -> None:
    """A tool starts while the model still streams the next call: the merged record is
    split, the rest of the arguments arriving after other records (seen in real logs)."""
    records = [
        ("TurnBegin", {"user_input": "Read both configs"}),
        ("ToolCall", gen.call("tool_a", "ReadFile", {"path": "a.toml"})),
        ("ToolCall", {**gen.call("tool_b", "ReadFile", {}), "function": {
            "name": "ReadFile", "arguments": '{"path": "b.'}}),
        ("ToolResult", gen.result("tool_a", "a = 1")),
        ("StatusUpdate", {"context_tokens": 10}),
        ("ToolCallPart", {"arguments_part": 'toml"}'}),
        ("ToolResult", gen.result("tool_b", "b = 2")),
    ]  # fmt: skip
    folder = gen.sessions_dir(home, gen.CWD) / gen.OTHER
    folder.mkdir(parents=True)
    (folder / "wire.jsonl").write_bytes(gen.wire_lines(records))
    sessions, _, tally = by_session("kimi", folder / "wire.jsonl")
    got = [(e["type"], e["payload"].get("input"), e.get("cites")) for e in sessions[OTHER][2:]]
    assert got == [
        ("tool/call", {"path": "a.toml"}, None),
        ("tool/result", None, [{"session_id": OTHER, "seq": 3}]),
        ("tool/call", {"path": "b.toml"}, None),
        ("tool/result", None, [{"session_id": OTHER, "seq": 5}]),
    ]
    assert "record:ToolCallPart" not in tally.skipped
