"""gptme conversations: the converter over a generated history (tool-format and markdown
calls, a tool error, a sub-agent, a compaction notice, a title from config.toml), then the
real ``import`` and ``watch`` into a real nats-server and worker, read back through the
tools."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_gptme as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers import registry
from worker.importers.detect import detect, expand
from worker.importers.gptme import GptmeConverter, tool_calls

FMT = "gptme"


def test_messages_calls_results_and_links(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "session/title", "message/context", "message/user",
        "message/assistant", "tool/call", "tool/result", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result", "compaction", "message/user",
        "message/assistant", "tool/call", "tool/result", "message/assistant",
        "message/context", "tool/call", "tool/result",
    ]  # fmt: skip
    # config.toml's workspace, written with ``~``, is under this machine's home.
    assert main[0]["payload"]["cwd"] == str(Path.home() / gen.WORKSPACE)
    assert main[1]["payload"]["title"] == gen.TITLE
    assert main[2]["payload"]["hidden"] is True  # the system prompt
    # The call is taken out of the text; its arguments are the call's JSON.
    assert main[4]["payload"]["text"] == "Let me look at the cache."
    assert main[5]["payload"] == {"tool": "shell", "call_id": "call_ls",
                                  "arguments": {"command": "ls"},
                                  "source_type": "message:assistant:tool"}  # fmt: skip
    assert main[6]["cites"] == [{"session_id": gen.MAIN, "seq": 6}]
    assert main[8]["payload"]["is_error"] is True
    assert "is_error" not in main[6]["payload"]
    assert main[12]["replaces"] == list(range(3, 13))
    assert main[13]["payload"]["files"] == ["/home/dev/proj/weather/cache.py"]
    assert main[15]["payload"]["arguments"]["path"] == "cache.py"
    assert main[18]["payload"]["text"] == gen.NUDGE  # gptme's nudge, not the user's words
    assert tally.skipped == gen.SKIPPED and tally.unknown == gen.SKIPPED
    # The sub-agent: the parent's id from subagent-meta.json, its start cites the call.
    sub = sessions[gen.SUB]
    assert sub[0]["payload"]["parent_session_id"] == gen.MAIN
    assert sub[0]["cites"] == [{"session_id": gen.MAIN, "seq": 11}]
    assert sub[0]["payload"]["cwd"] == main[0]["payload"]["cwd"]  # its meta's workdir
    # Markdown format: a fenced shell block is a call, the next system message its result;
    # a toml block is no tool. The workspace symlink gives the cwd.
    old = sessions[gen.OLD]
    assert [e["type"] for e in old] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant",
    ]  # fmt: skip
    assert old[0]["payload"]["cwd"] == gen.OLD_CWD
    assert old[3]["payload"]["arguments"]["content"] == "pytest -q --durations=3\n"
    assert old[4]["cites"] == [{"session_id": gen.OLD, "seq": 4}]


def test_reasoning_in_think_blocks(tmp_path: Path) -> None:
    """gptme keeps the model's reasoning in the message's text as a ``<think>`` block (the
    recording, 0.35.1): it is the message's reasoning, not its text."""
    recorded = Path(__file__).parent / "recorded" / "gptme" / "sessions"
    sessions, _, _ = by_session(FMT, recorded)
    said = [e["payload"] for evs in sessions.values() for e in evs
            if e["type"] == "message/assistant"]  # fmt: skip
    assert not [p for p in said if "<think>" in p.get("text", "")]
    reasoning = [p["reasoning"] for p in said if "reasoning" in p]
    assert "First run the failing test to see the error." in reasoning
    # A reply of reasoning and a call alone: its message has no text.
    assert any(p.get("text", "") == "" for p in said if "reasoning" in p)


def test_a_command_interrupted_by_the_user() -> None:
    """The recording (0.35.1): a turn interrupted (SIGINT) while its shell command runs;
    gptme answers the call with "Interrupted by user", an error marked ``interrupted``."""
    recorded = Path(__file__).parent / "recorded" / "gptme" / "sessions"
    sessions, _, _ = by_session(FMT, recorded)
    events = [e for evs in sessions.values() for e in evs]
    (slow,) = [e for e in events if e["type"] == "tool/call"
               and "sleep" in e["payload"]["arguments"].get("command", "")]  # fmt: skip
    cites = [{"session_id": slow["session_id"], "seq": slow["seq"]}]
    (result,) = [e for e in events if e["type"] == "tool/result" and e["cites"] == cites]
    assert result["payload"]["is_error"] is True and result["payload"]["interrupted"] is True
    assert not [e for e in events if e["type"] == "tool/result" and e is not result
                and e["payload"].get("interrupted")]  # fmt: skip


def test_times_without_a_zone_and_unavailable_tools(tmp_path: Path) -> None:
    """gptme writes local times without a zone (read in ``assume_tz``); a call of a tool
    not enabled gets the writer's "not available" result: an error."""
    folder = gen.write_main(tmp_path, side_files=False)
    converter = GptmeConverter(
        folder / "conversation.jsonl", assume_tz=timezone(timedelta(hours=2))
    )
    records = [
        {"role": "user", "content": "read it", "timestamp": "2025-08-02T09:00:00.5"},
        {"role": "assistant", "content": '@read(c1): {"path": "x"}',
         "timestamp": "2025-08-02T09:01:00"},
        {"role": "system", "call_id": "c1", "timestamp": "2025-08-02T09:02:00",
         "content": "Tool 'read' is not available for execution. Add --tools +read to enable it."},
    ]  # fmt: skip
    events = [orjson.loads(o.body) for n, r in enumerate(records, 1)
              for o in converter.feed(n, orjson.dumps(r))]  # fmt: skip
    assert events[0]["time"] == "2025-08-02T07:00:00.500Z"
    assert events[-1]["type"] == "tool/result" and events[-1]["payload"]["is_error"] is True
    assert events[-1]["time"] == "2025-08-02T07:02:00.000Z"


def test_tool_calls_in_text() -> None:
    text, calls = tool_calls(
        'Two calls.\n@shell(c1): {"command": "echo \'}\'"}\n'
        '```python\n@shell(c9): {"command": "an example"}\n```\n'
        '@save(c2): {"path": "a.txt", "content": "x"}\nDone.'
    )
    assert [c["call_id"] for c in calls] == ["c1", "c2"]
    assert calls[0]["arguments"] == {"command": "echo '}'"}
    assert text.startswith("Two calls.") and "@shell(c1)" not in text and "Done." in text
    assert "@shell(c9)" in text  # an example inside a code block is no call
    cut_off, none = tool_calls('@shell(c3): {"command": "ec')
    assert none == [] and cut_off.startswith("@shell(c3)")


def test_detection_and_files(tmp_path: Path) -> None:
    logs = gen.write(tmp_path)
    files = list(expand([logs], FMT))
    # The main branch of each conversation only, the sub-agent's last.
    assert [f.parent.name for f in files] == [gen.OLD_DIR, gen.MAIN_DIR, gen.SUB_DIR]
    assert {detect(f) for f in files} == {FMT}
    branch = logs / gen.MAIN_DIR / "branches" / "try-ttl.jsonl"
    assert detect(branch) != FMT


def test_default_locations(monkeypatch: object, tmp_path: Path) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    importer = registry.get(FMT)
    monkeypatch.delenv("GPTME_LOGS_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert importer.default_locations() == [tmp_path / "data" / "gptme" / "logs"]
    monkeypatch.setenv("GPTME_LOGS_HOME", str(tmp_path / "logs"))
    assert importer.default_locations() == [tmp_path / "logs"]


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "message:developer 1" in said
        for session in (gen.MAIN, gen.SUB):  # each with the end of an old session
            await assert_events(nc, worker, gen.SUB, session, gen.EVENTS[session] + 1)
        # The old conversation is in another workspace: asked from there.
        await assert_events(nc, worker, gen.OLD, gen.OLD, gen.EVENTS[gen.OLD] + 1)
        trace = await ask(nc, worker, "session_trace", gen.SUB, session_id=gen.MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace
        assert gen.SUB in trace.split("Descendants")[1]
        child = await ask(nc, worker, "session_event_trace", gen.SUB, session_id=gen.SUB, seq=1)
        assert f"{gen.MAIN} seq 11 · tool/call" in child.split("Cites (")[1]
        found = await ask(nc, worker, "session_search", gen.MAIN, query="never expire")
        assert gen.SUB in found
        hits = await ask(nc, worker, "session_event_search", gen.SUB, session_id=gen.MAIN,
                         query="NOTES.md")  # fmt: skip
        assert "tool/result" in hits


async def test_watch_follows_a_conversation_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    folder = gen.write_main(logs)
    records = [gen.lines([r]) for r in gen.main_conversation()]
    file = folder / "conversation.jsonl"
    # The system prompt and the first prompt; the first reply half written.
    file.write_bytes(b"".join(records[:2]) + records[2][:25])
    rest = records[2][25:] + b"".join(records[3:])
    total = gen.EVENTS[gen.MAIN]
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", logs, FMT, file, rest,
                             before=4, after=total)  # fmt: skip
    assert f"published {total} events (0 already in the stream)" in said
