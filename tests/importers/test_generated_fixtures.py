"""Real-file structure (generated fixtures): titles, harness text typed for what it is."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from contracts.events import Refusal, validate_event
from tests.importers import fixture_gen as gen
from tests.importers._agent_e2e import by_session
from tests.importers._corpus import bodies
from worker.importers import make_converter
from worker.importers.base import Converter, SpawnLinks, Tally, safe_id
from worker.importers.pipeline import convert_file
from worker.importers.skips import BUILT_IN, reason_for

FRESH_FILE = gen.PROJECT / f"{gen.FRESH}.jsonl"
AGENT_FILE = gen.PROJECT / gen.FRESH / "subagents" / f"agent-{gen.AGENT}.jsonl"
RENAMED_FILE = gen.PROJECT / f"{gen.RENAMED}.jsonl"
CONTINUED_FILE = gen.PROJECT / f"{gen.CONTINUED}.jsonl"
CODEX_OLD_FILE = gen.CODEX_DIR / "01" / f"rollout-2025-02-01T09-00-00-{gen.CODEX_OLD}.jsonl"
CODEX_NEW_FILE = gen.CODEX_DIR / "02" / f"rollout-2025-02-02T09-00-00-{gen.CODEX_NEW}.jsonl"


def test_the_committed_fixtures_are_what_the_generator_writes() -> None:
    written = gen.files()
    on_disk = {p for p in gen.ROOT.rglob("*") if p.is_file()}
    assert on_disk == set(written)
    for path, records in written.items():
        assert path.read_bytes() == gen.render(records), path


def _convert(
    fmt: str, path: Path, links: SpawnLinks | None = None
) -> tuple[list[dict[str, Any]], Tally]:
    outs, tally = convert_file(fmt, path, links=links)
    assert not tally.problems
    for out in outs:
        assert not isinstance(validate_event(out.body, max_event_bytes=1 << 20), Refusal)
    return bodies(outs), tally


def _typed(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(type, surface, the start of its text) of the conversation events."""
    return [
        (e["type"], e["surface"], str(e["payload"].get("text", ""))[:24])
        for e in events
        if e["type"] not in ("session/start", "tool/call", "tool/result")
    ]


def test_summaries_of_other_sessions_title_nothing_and_harness_text_is_typed() -> None:
    events, tally = _convert("claude-code", FRESH_FILE)
    assert {e["session_id"] for e in events} == {gen.FRESH}
    assert not [e for e in events if e["type"] == "session/title"]
    assert tally.skipped["record:summary:leaf-not-in-file"] == len(gen.FOREIGN_SUMMARIES)
    assert _typed(events) == [
        ("message/context", "system", gen.CAVEAT[:24]),
        ("command", "user", "<command-name>/clear</co"),
        ("command/output", "tool", "<local-command-stdout></"),
        ("message/user", "user", gen.FRESH_PROMPT[:24]),
        ("message/context", "system", "<task-notification>\n<tas"),
        ("message/context", "system", "[Request interrupted by "),
        ("message/assistant", "assistant", "Most home grinders use 3"),
    ]
    command = next(e for e in events if e["type"] == "command")
    assert command["payload"]["command"] == "/clear"


def test_a_sub_agent_is_titled_by_its_task_description() -> None:
    links: SpawnLinks = {}
    _convert("claude-code", FRESH_FILE, links)
    events, _ = _convert("claude-code", AGENT_FILE, links)
    assert events[0]["payload"]["parent_session_id"] == gen.FRESH
    assert events[1]["type"] == "session/title"
    assert events[1]["payload"]["title"] == gen.TASK_DESCRIPTION


def test_a_custom_title_wins_over_the_sessions_own_summary() -> None:
    events, _ = _convert("claude-code", RENAMED_FILE)
    titles = [e["payload"]["title"] for e in events if e["type"] == "session/title"]
    assert titles == [gen.SUMMARY_TITLE, gen.CUSTOM_TITLE]  # the latest folded title wins
    assert [t[:2] for t in _typed(events) if t[0] != "session/title"] == [
        ("message/context", "system"),
        ("message/user", "user"),
        ("message/assistant", "assistant"),
        ("command", "user"),
        ("command", "user"),
        ("command/output", "tool"),
    ]


def test_a_custom_title_before_a_summary_of_the_same_session_keeps_winning(tmp_path: Path) -> None:
    lines = RENAMED_FILE.read_bytes().splitlines(keepends=True)
    custom = next(line for line in lines if b'"custom-title"' in line)
    summary = next(line for line in lines if b'"summary"' in line)
    reordered = [line for line in lines if line not in (custom, summary)]
    path = tmp_path / RENAMED_FILE.name
    path.write_bytes(custom + b"".join(reordered) + summary)
    events, tally = _convert("claude-code", path)
    titles = [e["payload"]["title"] for e in events if e["type"] == "session/title"]
    assert titles == [gen.CUSTOM_TITLE]
    assert tally.skipped["record:summary:custom-title-wins"] == 1


def test_a_continuation_summary_without_its_flag_is_a_compaction() -> None:
    events, _ = _convert("claude-code", CONTINUED_FILE)
    assert [e["type"] for e in events] == [
        "session/start", "compaction", "message/user", "message/assistant",
    ]  # fmt: skip
    assert events[2]["payload"]["text"] == gen.CONTINUED_PROMPT


@pytest.mark.parametrize(
    ("path", "session", "expected"),
    [
        (CODEX_OLD_FILE, gen.CODEX_OLD, [
            ("message/context", "system", "<user_instructions>\n\nRun"),
            ("message/context", "system", gen.ENVIRONMENT[:24]),
            ("message/user", "user", gen.CODEX_OLD_PROMPT[:24]),
            ("message/assistant", "assistant", "The timer uses monotonic"),
        ]),
        (CODEX_NEW_FILE, gen.CODEX_NEW, [
            ("message/context", "system", "# AGENTS.md instructions"),
            ("message/context", "system", "# Context from my IDE se"),
            ("message/user", "user", gen.CODEX_NEW_PROMPT[:24]),
            ("command", "user", "<user_shell_command>\n<co"),
            ("message/assistant", "assistant", "Renamed it in brew.py an"),
        ]),
    ],
)  # fmt: skip
def test_codex_harness_text_is_context_and_the_request_is_the_users(
    path: Path, session: str, expected: list[tuple[str, str, str]]
) -> None:
    events, tally = _convert("codex", path)
    assert {e["session_id"] for e in events} == {safe_id(session)}
    assert _typed(events) == expected
    if session == gen.CODEX_NEW:
        assert tally.skipped["user-part:input_image"] == 1
        assert not [e for e in events if gen.IMAGE_DATA in str(e["payload"])]
        context = events[1]["payload"]["text"]
        assert "<environment_context>" in context  # both parts of one message, one event
        ide = next(e for e in events if e["payload"].get("text", "").startswith("# Context"))
        assert gen.CODEX_NEW_PROMPT not in ide["payload"]["text"]


def _quiet_ends(converter: Converter, before: datetime) -> list[dict[str, Any]]:
    return bodies(converter.end_quiet(before))


def test_import_ends_a_session_whose_last_event_is_older_than_idle() -> None:
    converter = make_converter("claude-code", CONTINUED_FILE)
    lines = CONTINUED_FILE.read_bytes().splitlines()
    last = [orjson.loads(out.body) for n, line in enumerate(lines, 1)
            for out in converter.feed(n, line)][-1]  # fmt: skip
    converter.finish()
    last_time = datetime.fromisoformat(last["time"])
    # Not older than the cut-off: still live.
    assert _quiet_ends(converter, last_time) == []
    ends = _quiet_ends(converter, last_time + timedelta(milliseconds=1))
    assert [(e["type"], e["seq"], e["time"]) for e in ends] == [
        ("session/end", last["seq"] + 1, last["time"])
    ]
    assert ends[0]["payload"]["reason"] == "idle"
    assert _quiet_ends(converter, datetime.now(UTC)) == []  # once


def test_aider_keeps_its_last_session_open_while_the_file_is_written(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "# aider chat started at 2025-03-01 09:00:00\n\n#### first\n\nok\n\n"
        "# aider chat started at 2025-03-01 10:00:00\n\n#### second\n\nok\n"
    )
    before = datetime.now(UTC) - timedelta(minutes=30)

    def ends() -> list[dict[str, Any]]:
        converter = make_converter("aider", path, assume_tz=UTC)
        for n, line in enumerate(path.read_bytes().splitlines(), 1):
            converter.feed(n, line)
        converter.finish()
        return _quiet_ends(converter, before)

    # Aider's events carry their session's start time; the file was written just now.
    assert ends() == []
    os.utime(path, (before.timestamp() - 60, before.timestamp() - 60))
    assert [e["type"] for e in ends()] == ["session/end"]


def test_a_generated_title_titles_unless_renamed_and_bookkeeping_is_known(tmp_path: Path) -> None:
    """Newer Claude Code writes ``ai-title`` (its own title for the session) and bookkeeping
    records (seen in real homes): the title is the session's unless a /rename wins."""
    lines = RENAMED_FILE.read_bytes().splitlines(keepends=True)
    custom = next(line for line in lines if b'"custom-title"' in line)
    rest = [line for line in lines if line != custom]

    def record(kind: str, **fields: object) -> bytes:
        return orjson.dumps({"type": kind, "sessionId": gen.RENAMED, **fields}) + b"\n"

    generated = record("ai-title", aiTitle="Descaling schedule in settings")
    bookkeeping = [
        record("last-prompt", lastPrompt="move the descaling schedule into settings"),
        record("permission-mode", permissionMode="default"),
        record("agent-name", agentName="barista"),
        record("pr-link", prNumber=7, prUrl="https://example.invalid/pull/7"),
        record("teleported-from", remoteSessionId="session_x", messageCount=0),
        orjson.dumps({"type": "attachment", "sessionId": gen.RENAMED, "uuid": "att-1",
                      "attachment": {"type": "hook_success", "content": ""}}) + b"\n",
    ]  # fmt: skip
    path = tmp_path / RENAMED_FILE.name
    path.write_bytes(generated + b"".join(rest) + b"".join(bookkeeping))
    events, tally = _convert("claude-code", path)
    titles = [e["payload"]["title"] for e in events if e["type"] == "session/title"]
    assert titles == ["Descaling schedule in settings", gen.SUMMARY_TITLE]
    tally.explain(lambda what: reason_for(what, BUILT_IN["claude-code"]))
    assert not tally.unknown, tally.unknown
    # A /rename read first wins over the generated title that follows.
    path.write_bytes(custom + b"".join(rest) + generated)
    events, tally = _convert("claude-code", path)
    titles = [e["payload"]["title"] for e in events if e["type"] == "session/title"]
    assert titles == [gen.SUMMARY_TITLE, gen.CUSTOM_TITLE] or titles == [gen.CUSTOM_TITLE]
    assert tally.skipped["record:ai-title:custom-title-wins"] == 1


def test_a_sub_agent_whose_call_has_no_result_cites_the_call_given_its_prompt(
    tmp_path: Path,
) -> None:
    """A sub-agent still running, or cut off (seen in real homes): its Task call has no
    result naming it yet. Its first message is the call's prompt: that is its call."""
    lines = FRESH_FILE.read_bytes().splitlines(keepends=True)
    main = tmp_path / FRESH_FILE.name
    main.write_bytes(b"".join(line for line in lines if b'"toolUseResult"' not in line))
    links: SpawnLinks = {}
    parent, _ = _convert("claude-code", main, links)
    call = next(e for e in parent if e["type"] == "tool/call")
    events, _ = _convert("claude-code", AGENT_FILE, links)
    assert events[0]["payload"]["parent_session_id"] == gen.FRESH
    assert events[0]["cites"] == [{"session_id": gen.FRESH, "seq": call["seq"]}]
    assert events[1]["payload"]["title"] == gen.TASK_DESCRIPTION


def test_codex_encrypted_reasoning_without_a_summary_is_skipped(tmp_path: Path) -> None:
    """Codex 0.9x writes ``reasoning`` items whose ``summary`` is an empty list beside the
    encrypted content (seen in real rollouts): nothing readable, no ``[]`` message."""
    lines = CODEX_NEW_FILE.read_bytes().splitlines(keepends=True)
    encrypted = {"timestamp": "2025-02-02T09:00:30.000Z", "type": "response_item",
                 "payload": {"type": "reasoning", "summary": [], "content": None,
                             "encrypted_content": "gAAAA"}}  # fmt: skip
    path = tmp_path / CODEX_NEW_FILE.name
    path.write_bytes(b"".join(lines) + orjson.dumps(encrypted) + b"\n")
    before, _ = _convert("codex", CODEX_NEW_FILE)
    after, tally = _convert("codex", path)
    assert len(after) == len(before)
    assert tally.skipped["response_item:reasoning:unreadable"] >= 1


def test_a_resumed_sessions_copy_of_an_earlier_sessions_records_is_not_imported_again(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.x starts a resumed session's file with copies of the earlier
    session's first records, their ``sessionId`` the earlier one's (seen in a real home:
    the earlier session's own file then read after its end, 215 events dead-lettered)."""
    earlier = tmp_path / FRESH_FILE.name
    earlier.write_bytes(FRESH_FILE.read_bytes())
    copied = [line for line in FRESH_FILE.read_bytes().splitlines(keepends=True)
              if b'"type":"user"' in line][:3]  # fmt: skip
    later = tmp_path / "0000aaaa-0000-4000-8000-000000000001.jsonl"  # sorts first
    own = RENAMED_FILE.read_bytes().replace(gen.RENAMED.encode(), later.stem.encode())
    later.write_bytes(b"".join(copied) + own)
    alone, _ = _convert("claude-code", earlier)
    sessions, _, tally = by_session("claude-code", tmp_path)
    assert len(sessions[gen.FRESH]) == len(alone)  # from its own file, once
    assert [e["seq"] for e in sessions[gen.FRESH]] == list(range(1, len(alone) + 1))
    assert later.stem in sessions
    assert tally.skipped["record:user:copied"] == 3
    assert reason_for("record:user:copied", BUILT_IN["claude-code"])


def test_server_tool_calls_and_their_results_inside_the_reply_pair(tmp_path: Path) -> None:
    """A server-side tool (web search, a provider's web reader) runs within the model's
    reply: ``server_tool_use`` and its ``*tool_result`` are both assistant blocks (seen in
    a real 2.1.2x home)."""
    session = "5e5e5e5e-0000-4000-8000-000000000001"
    base = {"sessionId": session, "cwd": "/home/dev/cafe", "version": "2.1.23",
            "isSidechain": False, "timestamp": "2026-01-24T11:48:23.920Z"}  # fmt: skip
    reply = [
        {"type": "server_tool_use", "id": "srv_1", "name": "web_search",
         "input": {"query": "espresso grinder burr sizes"}},
        {"type": "web_search_tool_result", "tool_use_id": "srv_1",
         "content": [{"type": "web_search_result", "title": "Burr sizes", "url": "u"}]},
        {"type": "text", "text": "Burrs of 38 to 64 mm are common."},
    ]  # fmt: skip
    records = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "which burr sizes are common?"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": reply}},
    ]  # fmt: skip
    path = tmp_path / f"{session}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    events, tally = _convert("claude-code", path)
    assert [e["type"] for e in events] == [
        "session/start", "message/user", "tool/call", "tool/result", "message/assistant",
    ]  # fmt: skip
    assert events[3]["cites"] == [{"session_id": session, "seq": 3}]
    assert "Burr sizes" in events[3]["payload"]["output"]
    assert not tally.skipped
