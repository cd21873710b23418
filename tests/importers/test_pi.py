"""Pi coding agent sessions: the converter over a generated history (a tree with a branch,
version 1, a session forked into its own file), then the real ``import`` and ``watch``
into a real nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from tests.importers import gen_pi as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers import registry
from worker.importers.detect import detect, expand

FMT = "pi"


def test_a_branch_is_a_fork_and_entries_map(tmp_path: Path) -> None:
    sessions, outs, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main, fork = sessions[gen.MAIN], sessions[gen.FORK]
    assert [e["type"] for e in main] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "message/assistant", "session/title",
    ]  # fmt: skip
    assert main[0]["payload"]["cwd"] == gen.CWD
    assert main[2]["payload"]["thinking"] == "Could be wiring or calibration."
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    assert main[7]["payload"]["title"] == gen.TITLE
    # The branch from e02: a child session citing the prompt it grows from.
    assert fork[0]["payload"]["parent_session_id"] == gen.MAIN
    assert fork[0]["cites"] == [{"session_id": gen.MAIN, "seq": 2}]
    assert [e["type"] for e in fork[1:]] == [
        "message/context", "message/user", "command", "command/output", "message/assistant",
        "compaction", "message/context",
    ]  # fmt: skip
    assert fork[4]["payload"]["exit_code"] == 0
    assert fork[6]["replaces"] == [2, 3, 4, 5]  # up to the first kept entry (e10)
    assert tally.skipped == gen.SKIPPED
    # Version 1 (no ids) reads in order; its empty cwd is no cwd.
    assert [e["type"] for e in sessions[gen.OLD]] == [
        "session/start",
        "message/user",
        "message/assistant",
    ]
    assert {o.key for o in outs if o.session_id == gen.OLD} == {NO_CWD_KEY}
    # A session forked into its own file is a child of the session it names.
    assert sessions[gen.SPLIT][0]["payload"]["parent_session_id"] == gen.MAIN


def test_detection(tmp_path: Path) -> None:
    files = list(expand([gen.write(tmp_path)], FMT))
    assert len(files) == 3 and {detect(f) for f in files} == {FMT}


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "record:future_entry:new 1" in said
        for session in (gen.MAIN, gen.FORK):  # each with the end of an old session
            await assert_events(nc, worker, gen.SPLIT, session, gen.EVENTS[session] + 1)
        trace = await ask(nc, worker, "session_trace", gen.SPLIT, session_id=gen.MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace
        descendants = trace.split("Descendants")[1]
        assert gen.FORK in descendants and gen.SPLIT in descendants
        fork = await ask(nc, worker, "session_event_trace", gen.SPLIT, session_id=gen.FORK, seq=1)
        assert f"{gen.MAIN} seq 2 · message/user" in fork.split("Cites (")[1]
        found = await ask(nc, worker, "session_search", gen.SPLIT, query="calibration defaults")
        assert gen.FORK in found
        hits = await ask(nc, worker, "session_event_search", gen.SPLIT, session_id=gen.MAIN,
                         query="read_tamper")  # fmt: skip
        assert "tool/result" in hits


async def test_watch_follows_a_tree_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = tmp_path / "sessions" / gen.FOLDER
    folder.mkdir(parents=True)
    records = [gen.lines([r]) for r in gen.main_session()]
    file = folder / f"2025-08-01T07-00-00-000Z_{gen.MAIN}.jsonl"
    file.write_bytes(b"".join(records[:3]) + records[3][:30])  # header, e01, e02; e03 half
    rest = records[3][30:] + b"".join(records[4:])
    total = gen.EVENTS[gen.MAIN] + gen.EVENTS[gen.FORK]
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", tmp_path / "sessions",
                             FMT, file, rest, before=2, after=total)  # fmt: skip
    assert f"published {total} events (0 already in the stream)" in said


RECORDED = Path(__file__).parent / "recorded" / "pi" / "sessions"


def test_a_recorded_interrupted_tool_call_gets_a_result_marked_interrupted() -> None:
    """Pi 0.73 writes no ``toolResult`` for a tool interrupted by Ctrl-C: the next entry is
    the next prompt. A user message while a call of the session is open ends that call:
    its result is published marked ``interrupted`` (``is_error``, no output)."""
    sessions, _, _ = by_session(FMT, RECORDED)
    (events,) = sessions.values()
    calls = {e["seq"]: e for e in events if e["type"] == "tool/call"}
    results = [e for e in events if e["type"] == "tool/result"]
    cited = [c["seq"] for r in results for c in r.get("cites", [])]
    assert sorted(cited) == sorted(calls)
    (interrupted,) = [r for r in results if r["payload"].get("interrupted")]
    call = calls[interrupted["cites"][0]["seq"]]
    assert "time.sleep(60)" in call["payload"]["arguments"]["command"]
    assert interrupted["payload"]["is_error"] is True and interrupted["payload"]["output"] == ""
    after = [e for e in events if e["seq"] > interrupted["seq"]]
    assert (
        after[0]["type"] == "message/user" and "What did we change" in after[0]["payload"]["text"]
    )


def test_a_recorded_image_in_a_prompt_is_counted_not_dropped() -> None:
    """``pi -p @red.png "..."``: the user message holds the text and an ``image`` block; the
    image is not searchable text, so it is skipped, and counted."""
    sessions, _, tally = by_session(FMT, RECORDED)
    (events,) = sessions.values()
    prompt = next(e for e in events if "What does this image show?" in e["payload"].get("text", ""))
    assert prompt["type"] == "message/user"
    assert tally.skipped["user-block:image"] == 1


def test_reasoning_kept_only_encrypted_is_counted_not_published_blank(tmp_path: Path) -> None:
    folder = tmp_path / ".pi" / "agent" / "sessions" / gen.FOLDER
    folder.mkdir(parents=True)
    (folder / f"{gen.ENCRYPTED}.jsonl").write_bytes(gen.lines(gen.encrypted_thinking_session()))
    sessions, _, tally = by_session("pi", folder)
    assert [e["type"] for e in sessions[gen.ENCRYPTED]] == [
        "session/start", "message/user", "message/assistant",
    ]  # fmt: skip
    assert tally.skipped["message:assistant:thinking:encrypted"] == 1
    tally.explain(registry.get("pi").skip_reason)
    assert not tally.unknown, tally.unknown
