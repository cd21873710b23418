"""Letta Code's local backend (Pi's session format under ~/.letta/lc-local-backend): the
converter over a generated history (a title from conversation.json, a failing tool, a
compaction, a default conversation named by its agent), detection before pi, then the real
``import`` and ``watch`` into a real nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_letta_code as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers import registry
from worker.importers.detect import detect, expand
from worker.importers.letta_code import conversation_key

FMT = "letta-code"


def test_pi_entries_under_the_conversation_key(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "session/title", "message/context", "message/user",
        "message/assistant", "tool/call", "tool/result", "message/assistant", "compaction",
        "message/user", "message/assistant", "message/context",
    ]  # fmt: skip
    # The reminder before the prompt is context; the prompt is the user's.
    assert main[3]["payload"]["text"] == "open the vents at 28 degrees, not 32"
    assert main[0]["payload"]["source"] == FMT and main[0]["payload"]["cwd"] == gen.CWD
    assert main[0]["payload"]["agent_id"] == gen.AGENT
    assert main[1]["payload"]["title"] == gen.TITLE
    assert main[6]["payload"]["is_error"] is True
    assert main[6]["cites"] == [{"session_id": gen.MAIN, "seq": 6}]
    assert main[8]["replaces"] == [3, 4, 5, 6, 7]  # up to the first kept entry
    # A default conversation's id is "default": the key names its agent.
    assert [e["type"] for e in sessions[gen.DEFAULT]][1:] == ["message/user", "message/assistant"]
    assert tally.skipped == gen.SKIPPED
    assert registry.get(FMT).skip_reason("record:model_change") is not None


def test_a_sub_agent_cites_its_agent_call(tmp_path: Path) -> None:
    """The Agent tool runs a sub-agent in its own agent's default conversation; the call's
    result names it (as in the recording of Letta Code 0.32.18)."""
    sessions, _, _ = by_session(FMT, gen.write_with_subagent(tmp_path))
    call = next(e for e in sessions[gen.PARENT] if e["type"] == "tool/call")
    start = sessions[gen.SUB][0]
    assert start["payload"]["parent_session_id"] == gen.PARENT
    assert start["cites"] == [{"session_id": gen.PARENT, "seq": call["seq"]}]
    titles = [e["payload"]["title"] for e in sessions[gen.SUB] if e["type"] == "session/title"]
    assert titles == [gen.SUB_TITLE]


def test_detected_before_pi_and_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = gen.write(tmp_path)
    files = list(expand([root], FMT))
    assert len(files) == 2 and {detect(f) for f in files} == {FMT}
    assert {conversation_key(f.parent) for f in files} == {gen.KEY, gen.DEFAULT_KEY}
    # Without its conversation.json the same file is Pi's.
    (files[0].parent / "conversation.json").unlink()
    assert detect(files[0]) == "pi"
    monkeypatch.setenv("LETTA_LOCAL_BACKEND_DIR", str(tmp_path / "lb"))
    assert registry.get(FMT).default_locations() == [tmp_path / "lb" / "conversations"]


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "record:model_change 1" in said
        for session in (gen.MAIN, gen.DEFAULT):  # each with the end of an old session
            await assert_events(nc, worker, gen.MAIN, session, gen.EVENTS[session] + 1)
        trace = await ask(nc, worker, "session_trace", gen.MAIN, session_id=gen.MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace
        found = await ask(nc, worker, "session_search", gen.MAIN, query="humidity target")
        assert gen.DEFAULT in found


async def test_watch_follows_a_conversation_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    conversations = tmp_path / "conversations"
    records = [gen.lines([r]) for r in gen.conversation()]
    file = gen.write_conversation(conversations, gen.KEY, [],
                                  gen.record(gen.AGENT, "local-conv-2", gen.TITLE))  # fmt: skip
    file.write_bytes(b"".join(records[:2]) + records[2][:30])  # header, prompt; reply half
    rest = records[2][30:] + b"".join(records[3:])
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", conversations, FMT,
                             file, rest, before=4, after=gen.EVENTS[gen.MAIN])  # fmt: skip
    assert f"published {gen.EVENTS[gen.MAIN]} events" in said
