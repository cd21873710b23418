"""The format converters alone: fixture files in, our events out (no NATS)."""

from __future__ import annotations

import re
from datetime import UTC, timedelta, timezone
from pathlib import Path

import orjson
import pytest

from contracts.events import Refusal, validate_event
from contracts.ids import ID_PATTERN
from tests.importers._corpus import (
    AIDER_FILE,
    CLAUDE_AGENT,
    CLAUDE_AGENT_FILE,
    CLAUDE_MAIN,
    CLAUDE_SESSION,
    CLAUDE_SIDE,
    CODEX_FILE,
    CODEX_SESSION,
    WORKSPACE,
    bodies,
    by_session,
)
from worker.importers.base import SpawnLinks, iso_time, safe_id
from worker.importers.detect import detect
from worker.importers.pipeline import convert_file

ALL = [
    ("claude-code", CLAUDE_MAIN),
    ("claude-code", CLAUDE_AGENT_FILE),
    ("codex", CODEX_FILE),
    ("aider", AIDER_FILE),
]


@pytest.mark.parametrize(("fmt", "path"), ALL)
def test_every_event_passes_the_index_checks_and_numbering_is_contiguous(
    fmt: str, path: Path
) -> None:
    outs, tally = convert_file(fmt, path, assume_tz=UTC)
    assert outs and tally.events == len(outs)
    for out in outs:
        assert not isinstance(validate_event(out.body, max_event_bytes=1 << 20), Refusal)
        assert out.msg_id == f"{out.session_id}:{out.seq}"
    for session_id, events in by_session(bodies(outs)).items():
        assert re.fullmatch(ID_PATTERN.strip("^$"), session_id)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert events[0]["type"] == "session/start"
        assert all(e["time"].endswith("Z") for e in events)
        assert events[0]["payload"]["source"] == fmt
    assert not [p for p in tally.problems if "event not imported" in p.message]


@pytest.mark.parametrize(("fmt", "path"), ALL)
def test_converting_twice_gives_the_same_bytes(fmt: str, path: Path) -> None:
    first, _ = convert_file(fmt, path, assume_tz=UTC)
    second, _ = convert_file(fmt, path, assume_tz=UTC)
    assert first == second


def test_claude_code_sessions_tool_citations_compaction_and_skips() -> None:
    outs, tally = convert_file("claude-code", CLAUDE_MAIN)
    sessions = by_session(bodies(outs))
    assert set(sessions) == {CLAUDE_SESSION, CLAUDE_SIDE}
    main = sessions[CLAUDE_SESSION]
    start = main[0]["payload"]
    assert start["cwd"] == WORKSPACE and start["parent_session_id"] is None
    types = [e["type"] for e in main]
    # The summary line came first; it titles the session once its leaf record is read.
    assert types == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "tool/call", "tool/result", "compaction", "message/assistant", "message/assistant",
        "session/title",
    ]  # fmt: skip
    calls = {e["payload"]["tool_use_id"]: e["seq"] for e in main if e["type"] == "tool/call"}
    for result in (e for e in main if e["type"] == "tool/result"):
        call_seq = calls[result["payload"]["tool_use_id"]]
        assert result["cites"] == [{"session_id": CLAUDE_SESSION, "seq": call_seq}]
    compaction = main[7]
    # The boundary names the last record it summarised: everything before it but the frame.
    assert compaction["replaces"] == [2, 3, 4, 5, 6, 7]
    assert compaction["payload"]["trigger"] == "auto"
    assert "datetime.now()" in compaction["payload"]["summary"]
    assert main[8]["payload"]["thinking"].startswith("The fix")
    side = sessions[CLAUDE_SIDE]
    assert side[0]["payload"]["parent_session_id"] == CLAUDE_SESSION
    assert [e["type"] for e in side] == ["session/start", "message/user", "message/assistant"]
    # Unknown record types are counted, and the malformed line 8 is reported, not fatal.
    assert tally.skipped["record:file-history-snapshot"] == 1
    assert tally.skipped["system:informational"] == 1
    assert [(p.line_no, p.message.split(":")[0]) for p in tally.problems] == [(8, "invalid JSON")]
    assert str(tally.problems[0]).startswith(f"{CLAUDE_MAIN}:8: invalid JSON")


def test_a_claude_code_sub_agent_file_is_a_child_session() -> None:
    links: SpawnLinks = {}
    convert_file("claude-code", CLAUDE_MAIN, links=links)  # read first, as import does
    outs, tally = convert_file("claude-code", CLAUDE_AGENT_FILE, links=links)
    events = bodies(outs)
    assert {e["session_id"] for e in events} == {CLAUDE_AGENT}
    assert events[0]["payload"]["parent_session_id"] == CLAUDE_SESSION
    # Its start cites the Task call (seq 6) whose result named this agent, and the call's
    # description titles it.
    assert events[0]["cites"] == [{"session_id": CLAUDE_SESSION, "seq": 6}]
    assert events[1]["type"] == "session/title"
    assert events[1]["payload"]["title"] == "Find clock usage"
    alone = bodies(convert_file("claude-code", CLAUDE_AGENT_FILE)[0])
    assert "cites" not in alone[0]  # without the transcript, only the parent links them
    assert events[0]["payload"]["agent_id"] == "a1b2c3d"
    result = next(e for e in events if e["type"] == "tool/result")
    assert result["cites"] == [{"session_id": CLAUDE_AGENT, "seq": 4}]
    assert not tally.problems


def test_codex_rollout() -> None:
    outs, tally = convert_file("codex", CODEX_FILE)
    events = bodies(outs)
    assert {e["session_id"] for e in events} == {CODEX_SESSION}
    assert [e["type"] for e in events] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "compaction", "message/assistant",
    ]  # fmt: skip
    assert events[0]["payload"]["cwd"] == WORKSPACE
    assert "Zeitzonenfehler" in events[1]["payload"]["text"]  # non-English text kept as is
    assert events[4]["cites"] == [{"session_id": CODEX_SESSION, "seq": 4}]
    assert events[4]["payload"]["tool"] == "shell"
    assert events[5]["replaces"] == [2, 3, 4, 5]
    assert events[6]["payload"]["text"].startswith("はい")
    assert tally.skipped["record:future_record"] == 1
    assert tally.skipped["record:event_msg"] == 2
    assert tally.skipped["response_item:message:developer"] == 1
    assert [p.line_no for p in tally.problems] == [9]


def test_aider_history_sessions_end_when_the_next_starts() -> None:
    plus_two = timezone(timedelta(hours=2))
    outs, tally = convert_file("aider", AIDER_FILE, assume_tz=plus_two)
    sessions = list(by_session(bodies(outs)).values())
    assert len(sessions) == 2
    first, second = sessions
    assert first[0]["time"] == "2026-11-29T07:15:02.000Z"  # 09:15:02 at +02:00
    assert first[0]["payload"]["cwd"] == str(AIDER_FILE.absolute().parent)
    assert [e["type"] for e in first] == [
        "session/start", "command/output", "message/user", "message/assistant",
        "command/output", "session/end",
    ]  # fmt: skip
    assert (
        first[2]["payload"]["text"] == "add a retry to the payment client\nwith exponential backoff"
    )
    assert ">>>>>>> REPLACE" in first[3]["payload"]["text"]  # a fence is the assistant's
    assert [e["type"] for e in second] == ["session/start", "message/user", "message/assistant"]
    assert not tally.problems


@pytest.mark.parametrize(("fmt", "path"), ALL)
def test_detection(fmt: str, path: Path) -> None:
    assert detect(path) == fmt


def test_ids_and_times() -> None:
    assert safe_id("abc-DEF_1") == "abc-DEF_1"
    assert safe_id("a.b") != safe_id("a_b")
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,128}", safe_id("x" * 300))
    assert iso_time("2026-01-01T10:00:00+02:00") == "2026-01-01T08:00:00.000Z"
    assert iso_time("2026-01-01T10:00:00") == "2026-01-01T10:00:00.000Z"  # no zone: UTC
    assert iso_time("yesterday") is None


def test_a_codex_sub_agent_or_fork_is_a_child_of_the_session_it_names(tmp_path: Path) -> None:
    lines = [
        {"timestamp": "2026-12-01T10:00:00Z", "type": "session_meta", "payload": {
            "id": "child-1", "cwd": "/w", "source": {"subagent": {"thread_spawn": {
                "parent_thread_id": "parent-1", "depth": 1}}}}},
        {"timestamp": "2026-12-01T10:00:01Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}},
    ]  # fmt: skip
    path = tmp_path / "rollout-child.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    events = bodies(convert_file("codex", path)[0])
    assert events[0]["payload"]["parent_session_id"] == "parent-1"
    fork = {**lines[0], "payload": {"id": "fork-1", "cwd": "/w", "forked_from_id": "parent-2"}}
    path.write_bytes(orjson.dumps(fork) + b"\n")
    assert bodies(convert_file("codex", path)[0])[0]["payload"]["parent_session_id"] == "parent-2"


RECORDED_CODEX = Path(__file__).parent / "recorded" / "codex" / "sessions"


def test_a_recorded_codex_sub_agent_cites_its_spawn_and_keeps_the_messages_between_agents() -> None:
    """Codex 0.171 (multi_agent_v2): ``spawn_agent`` answers with the sub-agent's task name,
    which the sub-agent's ``session_meta`` repeats as its ``agent_path``; the task and the
    answer travel as ``agent_message`` items (their payload encrypted, except here)."""
    links: SpawnLinks = {}
    events = [
        body
        for path in sorted(RECORDED_CODEX.rglob("*.jsonl"))
        for body in bodies(convert_file("codex", path, links=links)[0])
    ]
    starts = [e for e in events if e["type"] == "session/start"]
    child = next(e for e in starts if e["payload"]["parent_session_id"])
    spawn = next(
        e for e in events if e["type"] == "tool/call" and e["payload"]["tool"] == "spawn_agent"
    )
    assert child["cites"] == [{"session_id": spawn["session_id"], "seq": spawn["seq"]}]
    of_child = [e for e in events if e["session_id"] == child["session_id"]]
    assert [e["payload"]["title"] for e in of_child if e["type"] == "session/title"] == [
        "check_refunds"
    ]
    task = [e for e in of_child if e["type"] == "message/user"]
    assert len(task) == 1 and "NEW_TASK" in task[0]["payload"]["text"]
    answer = [
        e
        for e in events
        if e["session_id"] == spawn["session_id"]
        and e["payload"]["source_type"] == "response_item:agent_message"
    ]
    assert len(answer) == 1 and answer[0]["type"] == "message/context"
    assert "subtracts the amount" in answer[0]["payload"]["text"]


def test_a_recorded_codex_command_that_exits_non_zero_is_a_failed_result() -> None:
    """Codex 0.171's ``exec_command`` output is text headed by "Process exited with code
    N"; ``apply_patch``'s by "Exit code: N". A non-zero code is a failed tool call, flagged
    ``is_error`` as every other format flags one."""
    links: SpawnLinks = {}
    results = [
        body
        for path in sorted(RECORDED_CODEX.rglob("*.jsonl"))
        for body in bodies(convert_file("codex", path, links=links)[0])
        if body["type"] == "tool/result"
    ]
    failed = [r["payload"] for r in results if r["payload"].get("is_error")]
    # The first test run (the bug), the read of the missing notes, the command interrupted
    # by Ctrl-C (its output ends "aborted by user").
    assert len(failed) == 3
    assert "FAILED (failures=1)" in failed[0]["output"]
    assert "No such file or directory" in failed[1]["output"]
    assert all("Process exited with code 1" in p["output"] for p in failed[:2])
    assert failed[2]["output"].endswith("aborted by user") and failed[2]["interrupted"] is True
