"""Codebuff chats (``chat-messages.json`` rewritten whole per turn, the cwd from
``run-state.json``): the converter over a generated history (reasoning, a tool, a failed
sub-agent, a question answered, an error, a chat without run state), then the real
``import`` and ``watch`` into a real nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_codebuff as gen
from tests.importers._agent_e2e import assert_events, by_session, imported
from tests.importers._sources import watch_growth
from tests.importers.test_import_tools import ask
from worker.importers.detect import detect, expand

FMT = "codebuff"


def test_blocks_sub_agents_and_the_run_state_cwd(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main, child, old = sessions[gen.MAIN], sessions[gen.CHILD], sessions[gen.OLD]
    assert [e["type"] for e in main] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "tool/call", "tool/result",
        "message/assistant", "message/context",
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] == gen.CWD
    assert main[0]["time"] == "2026-11-03T10:15:00.000Z"  # the chat id
    assert main[1]["time"] == "2026-11-03T10:15:01.000Z"  # the message id's milliseconds
    assert main[1]["payload"]["files"] == ["bins/bin3.py"]
    assert main[2]["payload"]["thinking"] == "Humidity may be the cause."
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    # The failed sub-agent: its result is an error; its session cites the spawning call.
    assert main[6]["payload"]["tool"] == "spawn_agents"
    assert main[7]["payload"]["is_error"] is True
    assert child[0]["payload"]["parent_session_id"] == gen.MAIN
    assert child[0]["cites"] == [{"session_id": gen.MAIN, "seq": 7}]
    assert [e["type"] for e in child[1:]] == ["message/user", "tool/call", "tool/result"]
    assert "selectedOption" in main[9]["payload"]["output"]
    assert main[11]["payload"]["is_error"] is True
    assert tally.skipped == gen.SKIPPED
    assert old[0]["payload"]["cwd"] is None  # no run-state.json: no cwd


def test_detection(tmp_path: Path) -> None:
    files = list(expand([gen.write(tmp_path)], FMT))
    assert len(files) == 2 and {detect(f) for f in files} == {FMT}
    assert all((f.parent / "run-state.json").exists() or gen.OLD_CHAT in str(f) for f in files)


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "block:mode-divider 1" in said
        for session in (gen.MAIN, gen.CHILD):  # each with the end of an old session
            await assert_events(nc, worker, gen.MAIN, session, gen.EVENTS[session] + 1)
        trace = await ask(nc, worker, "session_trace", gen.MAIN, session_id=gen.MAIN)
        assert gen.CHILD in trace.split("Descendants")[1]
        hits = await ask(nc, worker, "session_event_search", gen.MAIN, session_id=gen.MAIN,
                         query="humidity")  # fmt: skip
        assert "tool/result" in hits


async def test_watch_follows_a_chat_rewritten_per_turn(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    projects = tmp_path / "projects"
    listed = gen.messages()
    file = gen.write_chat(projects, gen.CHAT, listed[:2], state=True)

    def next_turn() -> None:
        file.write_bytes(orjson.dumps(listed, option=orjson.OPT_INDENT_2))

    total = gen.EVENTS[gen.MAIN] + gen.EVENTS[gen.CHILD]
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", FMT, projects, before=2,
                       grow=next_turn, after=total)  # fmt: skip
