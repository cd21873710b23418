"""Qwen Code chats: the converter over a generated history (a sub-agent's sidechain, a
compression, a sub-session), then the real ``import`` and ``watch`` into a real
nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_qwen_code as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers.detect import detect, expand
from worker.importers.pipeline import convert_file
from worker.importers.skips import BUILT_IN, reason_for

FMT = "qwen-code"


def test_records_map_with_sidechains_and_compression(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "command", "compaction",
        "session/title", "message/user", "message/assistant",
    ]  # fmt: skip
    start = main[0]["payload"]
    assert (start["cwd"], start["gitBranch"], start["version"]) == (gen.CWD, "main", "0.0.14")
    assert main[2]["payload"]["thinking"] == "The cut-off sensor may be stuck."
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    assert main[7]["payload"]["is_error"] is True
    assert main[9]["replaces"] == list(range(2, 10))
    assert "thermostat cut-off is a TODO" in main[9]["payload"]["summary"]
    assert main[10]["payload"]["title"] == gen.TITLE
    side = sessions[gen.SIDE]
    assert side[0]["payload"]["parent_session_id"] == gen.MAIN
    assert sessions[gen.SUB][0]["payload"]["parent_session_id"] == gen.MAIN
    assert tally.skipped == gen.SKIPPED


def test_detection_before_claude_code(tmp_path: Path) -> None:
    files = list(expand([gen.write(tmp_path)], FMT))
    # Its records have a sessionId and a uuid, as Claude Code's do: asked first.
    assert len(files) == 2 and {detect(f) for f in files} == {FMT}


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "record:system:ui_telemetry 1" in said
        for session in (gen.MAIN, gen.SIDE):  # each with the end of an old session
            await assert_events(nc, worker, gen.SUB, session, gen.EVENTS[session] + 1)
        trace = await ask(nc, worker, "session_trace", gen.SUB, session_id=gen.MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace
        descendants = trace.split("Descendants")[1]
        assert gen.SIDE in descendants and gen.SUB in descendants
        found = await ask(nc, worker, "session_search", gen.SUB, query="dry_boil")
        assert gen.SIDE in found
        result = await ask(nc, worker, "session_event_trace", gen.SUB, session_id=gen.MAIN, seq=6)
        assert f"{gen.MAIN} seq 5 · tool/call" in result.split("Cites (")[1]


async def test_watch_follows_a_chat_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    chats = tmp_path / "projects" / "-home-dev-kettle" / "chats"
    chats.mkdir(parents=True)
    lines = [line + b"\n" for line in gen.main_chat().bytes().splitlines()]
    file = chats / f"{gen.MAIN}.jsonl"
    file.write_bytes(lines[0] + lines[1][:40])  # the prompt, then half the reply
    total = gen.EVENTS[gen.MAIN] + gen.EVENTS[gen.SIDE]
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", tmp_path / "projects",
                             FMT, file, lines[1][40:] + b"".join(lines[2:]), before=2,
                             after=total)  # fmt: skip
    assert f"published {total} events (0 already in the stream)" in said


RECORDED = Path(__file__).parent / "recorded" / "qwen-code" / "sessions"


def test_a_recorded_sub_agent_file_is_a_child_citing_its_agent_call() -> None:
    """Qwen Code 0.24 writes a sub-agent's records (``isSidechain``, ``agentId``) in a file
    of its own, ``subagents/<session id>/agent-<type>-<call id>.jsonl``, with a
    ``.meta.json`` beside it naming the parent's call (``toolUseId``) and its
    ``description``."""
    files = expand([RECORDED], FMT)
    assert [p.parent.parent.name for p in files] == ["-tmp-sq-record-qwen-code-shop", "subagents"]
    sessions, _, _ = by_session(FMT, RECORDED)
    assert len(sessions) == 2
    (child,) = [s for s, evs in sessions.items() if evs[0]["payload"]["parent_session_id"]]
    start = sessions[child][0]
    parent = sessions[start["payload"]["parent_session_id"]]
    (call,) = [e for e in parent if e["type"] == "tool/call" and e["payload"]["tool"] == "agent"]
    assert start["cites"] == [{"session_id": call["session_id"], "seq": call["seq"]}]
    titles = [e["payload"]["title"] for e in sessions[child] if e["type"] == "session/title"]
    assert titles == ["Check refund handling"]
    types = [e["type"] for e in sessions[child]]
    assert types.count("tool/call") == types.count("tool/result") == 1


def test_a_slash_command_that_printed_nothing_has_no_output_event(tmp_path: Path) -> None:
    path = tmp_path / f"{gen.SLASH}.jsonl"
    path.write_bytes(gen.slash_chat().bytes())
    events, tally = convert_file(FMT, path)
    typed = [(b["type"], b["payload"].get("text")) for b in (orjson.loads(e.body) for e in events)]
    assert typed[1:] == [
        ("message/user", "list my agents"),
        ("command", "/agents create"),
        ("command", "/about"),
        ("command/output", "v0.14"),
    ]
    tally.explain(lambda what: reason_for(what, BUILT_IN[FMT]))
    assert tally.skipped == {"record:system:slash_command:no-output": 1}
    assert not tally.unknown
