"""GitHub Copilot CLI sessions: the converter over a generated history (the session folder
and the older flat file), then the real ``import`` and ``watch`` into a real nats-server
and worker, read back through the tools."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from tests._harness import until
from tests.importers import gen_copilot_cli as gen
from tests.importers._agent_e2e import assert_events, by_session, imported
from tests.importers.test_import_tools import ask, sessionquery
from tests.importers.test_watch import has, start, stop, watch_command
from worker.importers.detect import detect, expand
from worker.importers.pipeline import convert_file
from worker.importers.skips import BUILT_IN, reason_for

FMT = "copilot-cli"


def test_events_map_to_messages_tools_compaction_and_end(tmp_path: Path) -> None:
    state = gen.write(tmp_path)
    sessions, outs, tally = by_session(FMT, state)
    assert {k: len(v) for k, v in sessions.items()} == {
        gen.MAIN: gen.MAIN_EVENTS,
        gen.OLD: gen.OLD_EVENTS,
    }
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "compaction",
        "message/user", "message/assistant", "message/context", "session/title",
        "message/user", "message/assistant",
    ]  # fmt: skip
    start = main[0]["payload"]
    assert (start["cwd"], start["git_branch"], start["version"]) == (gen.CWD, "main", "0.0.369")
    assert main[2]["payload"]["thinking"] == "Probably condensate in the wand."
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    assert main[5]["payload"]["output"].startswith("purge_seconds = 0")
    assert main[7]["payload"]["is_error"] is True
    assert main[7]["payload"]["output"] == "wand.toml does not exist"
    assert main[8]["replaces"] == [2, 3, 4, 5, 6, 7, 8]
    assert main[11]["payload"]["text"] == "abort: user initiated"
    assert main[12]["payload"]["title"] == gen.SUMMARY  # from workspace.yaml
    # Resumed after its shutdown: the session goes on, its second turn is part of it.
    assert main[13]["payload"]["text"] == gen.RESUMED_PROMPT
    assert not [o for o in outs if o.dropped]
    assert tally.skipped == gen.MAIN_SKIPPED
    # The older flat file: no context and no workspace.yaml, so no cwd.
    assert sessions[gen.OLD][0]["payload"]["cwd"] is None
    assert {o.key for o in outs if o.session_id == gen.OLD} == {NO_CWD_KEY}


def test_an_old_session_takes_the_cwd_its_system_prompt_states(tmp_path: Path) -> None:
    sessions, _, _ = by_session(FMT, gen.write_prompted(tmp_path))
    assert sessions[gen.PROMPTED][0]["payload"]["cwd"] == gen.PROMPTED_CWD
    said = [e["type"] for e in sessions[gen.PROMPTED]]
    assert said[:3] == ["session/start", "message/user", "message/assistant"]


def test_sub_agent_markers_without_its_records_are_known_not_drift(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write_marked(tmp_path))
    events = sessions[gen.MARKED]
    call, result = events[2], events[3]
    assert (call["type"], result["type"]) == ("tool/call", "tool/result")
    assert result["cites"] == [{"session_id": gen.MARKED, "seq": call["seq"]}]
    assert tally.skipped["record:subagent.completed"] == 1
    assert reason_for("record:subagent.completed", BUILT_IN[FMT]) is not None  # not drift


def test_detection_and_sources(tmp_path: Path) -> None:
    state = gen.write(tmp_path)
    files = list(expand([state], FMT))
    assert [f.relative_to(state).as_posix() for f in files] == [
        f"{gen.MAIN}/events.jsonl", f"{gen.OLD}.jsonl",
    ]  # fmt: skip
    assert {detect(f) for f in files} == {FMT}


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    state = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, state, FMT) as (worker, said):
        assert "record:hook.start 1" in said
        # Its last record a shutdown long ago: ended by it, after the resumed turn.
        await assert_events(nc, worker, gen.MAIN, gen.MAIN, gen.MAIN_EVENTS + 1)
        end = await ask(nc, worker, "session_event_read", gen.MAIN, session_id=gen.MAIN,
                        seq=gen.MAIN_EVENTS + 1)  # fmt: skip
        assert "shutdown" in end
        resumed = await ask(nc, worker, "session_event_search", gen.MAIN, session_id=gen.MAIN,
                            query="wand drips")  # fmt: skip
        assert "seq 14 · message/user" in resumed
        await assert_events(nc, worker, gen.OLD, gen.OLD, gen.OLD_EVENTS + 1)
        # A caller of the no-cwd workspace never sees the project's session.
        found = await ask(nc, worker, "session_search", gen.OLD, query="purge steamer")
        assert gen.MAIN not in found
        trace = await ask(nc, worker, "session_trace", gen.MAIN, session_id=gen.MAIN)
        assert f"⟦{gen.SUMMARY}⟧" in trace and "persisted" in trace
        result = await ask(nc, worker, "session_event_trace", gen.MAIN, session_id=gen.MAIN, seq=6)
        assert f"{gen.MAIN} seq 5 · tool/call" in result.split("Cites (")[1]
        compaction = await ask(nc, worker, "session_event_trace", gen.MAIN, session_id=gen.MAIN,
                               seq=9)  # fmt: skip
        assert "seq 2 ·" in compaction.split("Replaces (")[1]
        hits = await ask(nc, worker, "session_event_search", gen.MAIN, session_id=gen.MAIN,
                         query="wand.toml")  # fmt: skip
        assert "tool/result" in hits


async def test_watch_keeps_a_resumed_session_and_ends_it_once_quiet(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    """The file ends with a shutdown, then grows with a resume and a turn: nothing is
    ended or dropped while it may go on; once the file is quiet the end is published,
    at the shutdown, after everything."""
    state = tmp_path / "session-state"
    folder = state / gen.MAIN
    folder.mkdir(parents=True)
    lines = [line + b"\n" for line in gen.main_session().bytes().splitlines()]
    file = folder / "events.jsonl"
    first_shutdown = next(n for n, line in enumerate(lines) if b'"session.shutdown"' in line)
    file.write_bytes(b"".join(lines[: first_shutdown + 1]))
    # No workspace.yaml: no title. A live file (idle one hour): no end after the shutdown.
    command = watch_command(nats_url, subjects, f"watch-{unique}", state, fmt=FMT)
    process = start(command)
    try:
        await until(lambda: has(nc, subjects, gen.BEFORE_RESUME), within=20)
        await asyncio.sleep(0.3)  # several polls: the shutdown alone publishes no end
        assert await has(nc, subjects, gen.BEFORE_RESUME)
        with file.open("ab") as fh:
            fh.write(b"".join(lines[first_shutdown + 1 :]))
        await until(lambda: has(nc, subjects, gen.MAIN_EVENTS - 1), within=20)
    finally:
        code, said = stop(process)
    assert code == 0 and "dropped" not in said and "ended" not in said, said
    # Quiet now (untouched for ages): a watch ends the session at its last shutdown.
    os.utime(file, (1, 1))
    again = start(watch_command(nats_url, subjects, f"watch-{unique}", state, fmt=FMT, idle=5))
    try:
        await until(lambda: has(nc, subjects, gen.MAIN_EVENTS), within=30)
    finally:
        code, said = stop(again)
    assert code == 0, said
    js = nc.jetstream()
    last = await js.get_last_msg(subjects.events_stream, subjects.stored_session("*", gen.MAIN))
    assert last.data is not None
    end = orjson.loads(last.data)
    assert (end["type"], end["seq"], end["payload"]["reason"]) == (
        "session/end",
        gen.MAIN_EVENTS,
        "shutdown",
    )
    assert end["time"] == gen.main_session().events[-1]["timestamp"]
    await js.delete_stream(subjects.events_stream)


def test_system_prompt_and_permission_prompts_are_skipped_with_reasons(tmp_path: Path) -> None:
    path = tmp_path / f"{gen.PERMISSION}.jsonl"
    path.write_bytes(gen.permission_session().bytes())
    events, tally = convert_file(FMT, path)
    kinds = [orjson.loads(e.body)["type"] for e in events]
    assert kinds == ["session/start", "message/user", "tool/call", "tool/result",
                     "message/assistant"]  # fmt: skip
    tally.explain(lambda what: reason_for(what, BUILT_IN[FMT]))
    assert tally.skipped == {"record:system.message": 1, "record:permission.requested": 1,
                             "record:permission.completed": 1}  # fmt: skip
    assert not tally.unknown, tally.unknown


RECORDED = Path(__file__).parent / "recorded" / "copilot-cli" / "sessions"


def test_a_recorded_sub_agent_is_a_child_session_citing_its_task_call() -> None:
    """Copilot 1.0.102 writes a sub-agent's records into its parent's file, each with the
    sub-agent's ``agentId``: they were read as the parent's own (the sub-agent's prompt
    a user message of the parent). Its reasoning (``reasoningText``), a failed command's
    exit code and the ``name`` of ``workspace.yaml`` were lost, and the command an abort
    stopped was a call without a result."""
    sessions, _, _ = by_session(FMT, RECORDED)
    (main,) = [s for s, evs in sessions.items() if not evs[0]["payload"]["parent_session_id"]]
    (child,) = set(sessions) - {main}
    start = sessions[child][0]
    (task,) = [
        e for e in sessions[main] if e["type"] == "tool/call" and e["payload"]["tool"] == "task"
    ]
    assert start["payload"]["parent_session_id"] == main
    assert start["cites"] == [{"session_id": main, "seq": task["seq"]}]
    child_texts = [e["payload"].get("text") for e in sessions[child]]
    assert any(t and t.startswith("Check how ledger.py handles refunds") for t in child_texts)
    main_users = [e["payload"]["text"] for e in sessions[main] if e["type"] == "message/user"]
    assert not any(t.startswith("Check how ledger.py") for t in main_users)
    assert sessions[child][-1]["type"] == "session/end"
    assert sessions[child][-1]["payload"]["reason"] == "completed"
    thinking = [e["payload"]["thinking"] for e in sessions[main] if "thinking" in e["payload"]]
    assert thinking[0] == "First run the failing test to see the error."
    results = [e for e in sessions[main] if e["type"] == "tool/result"]
    assert results[0]["payload"]["is_error"] is True  # the failing test run: exit code 1
    titles = [e["payload"]["title"] for e in sessions[main] if e["type"] == "session/title"]
    assert titles == ["Ledger fixes"]  # --name: workspace.yaml's name, user_named
    # SIGINT aborted the turn while its command ran: Copilot wrote no result for it.
    (aborted,) = [e for e in results if e["payload"].get("interrupted")]
    (slow,) = [e for e in sessions[main] if e["seq"] == aborted["cites"][0]["seq"]]
    assert slow["type"] == "tool/call" and "sleep(60)" in slow["payload"]["arguments"]["command"]
    assert aborted["payload"]["is_error"] is True
    notes = [e["payload"]["text"] for e in sessions[main] if e["type"] == "message/context"]
    assert notes == ["abort: user_abort"]


def test_a_warning_is_context(tmp_path: Path) -> None:
    """``session.warning`` (1.0.102's schema: ``warningType``, ``message``) is said to the
    user like ``session.info``: context, not an unknown kind."""
    folder = tmp_path / "session-state" / "9f1c"
    folder.mkdir(parents=True)
    records = [
        {"type": "session.start", "id": "a", "timestamp": "2026-12-07T10:00:00.000Z",
         "data": {"sessionId": "9f1c", "producer": "copilot-agent", "context": {"cwd": "/w"}}},
        {"type": "session.warning", "id": "b", "timestamp": "2026-12-07T10:00:01.000Z",
         "data": {"warningType": "quota", "message": "Near the request limit"}},
    ]  # fmt: skip
    (folder / "events.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    events, tally = convert_file(FMT, folder / "events.jsonl")
    bodies = [orjson.loads(e.body) for e in events]
    assert [b["type"] for b in bodies] == ["session/start", "message/context"]
    assert bodies[1]["payload"]["text"] == "warning: Near the request limit"
    assert not tally.skipped


def test_a_skill_loaded_into_the_context_is_skipped_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / f"{gen.SKILL}.jsonl"
    path.write_bytes(gen.skill_session().bytes())
    events, tally = convert_file(FMT, path)
    kinds = [orjson.loads(e.body)["type"] for e in events]
    assert kinds == ["session/start", "message/user", "tool/call", "tool/result",
                     "message/assistant"]  # fmt: skip
    tally.explain(lambda what: reason_for(what, BUILT_IN[FMT]))
    assert tally.skipped == {"record:skill.invoked": 1}
    assert not tally.unknown, tally.unknown


def test_its_databases_are_reported_by_name_and_a_session_only_the_index_has(
    tmp_path: Path,
) -> None:
    """1.0.102's session-store.db (the cross-session index) and a session's session.db are
    not the conversation, but never silently passed over: each is counted by name with its
    reason, and a session the index lists without an event log is imported from it."""
    state = gen.write(tmp_path)
    store, scratch = gen.write_databases(state)
    files = list(expand([state], FMT))
    assert store in files and scratch in files
    environment = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    done = sessionquery("import", "--format", FMT, str(state), "--dry-run", "--quiet",
                        env=environment)  # fmt: skip
    out = done.stdout.splitlines()
    assert f"{store} ({FMT})" in out and f"{scratch} ({FMT})" in out
    assert any(line.startswith("  skipped by design: file:session-store.db 1") for line in out)
    assert any(line.startswith("  skipped by design: file:session.db 1") for line in out)
    assert not [line for line in done.stderr.splitlines() if "problem" in line.lower()]
    assert "file:session-store.db 1" in done.stderr  # the summary names it too
    for kind in ("file:session-store.db", "file:session.db"):
        assert reason_for(kind, BUILT_IN[FMT])


def test_a_session_whose_event_log_is_gone_is_read_from_the_index(tmp_path: Path) -> None:
    """A session 1.0.102's index lists whose ``events.jsonl`` was deleted is imported from
    the index: its turns' user message and answer, text only, its checkpoint between them
    by time, its summary as title, every event marked ``from_index``. The sessions that have
    their log are not read from the index (their turns would come twice)."""
    state = gen.write(tmp_path)
    store, _ = gen.write_databases(state)
    outgoing, tally = convert_file(FMT, store)
    assert not tally.problems, tally.problems
    events = [orjson.loads(o.body) for o in outgoing]
    sessions = {e["session_id"] for e in events}
    assert sessions == {gen.GONE}
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["type"] for e in events]
    assert kinds == [
        "session/start", "message/user", "message/assistant", "message/context",
        "message/user", "message/assistant", "session/title", "session/end",
    ]  # fmt: skip
    start = events[0]
    assert start["payload"]["cwd"] == gen.CWD and start["payload"]["from_index"] is True
    assert start["time"] == "2026-12-06T09:00:00.000Z"
    (first_asked, first_answer, at), (asked, answer, _) = gen.GONE_TURNS
    assert [e["payload"]["text"] for e in events[1:3]] == [first_asked, first_answer]
    assert events[1]["time"] == at
    assert events[3]["payload"]["text"].startswith("Checkpoint: Purging the wand")
    assert [e["payload"]["text"] for e in events[4:6]] == [asked, answer]
    assert all(e["payload"]["from_index"] is True for e in events[:6])
    assert events[6]["payload"]["title"] == gen.SUMMARY
    assert events[7]["time"] == "2026-12-06T09:05:01.000Z"


def test_a_session_with_its_event_log_is_never_read_from_the_index(tmp_path: Path) -> None:
    state = gen.write(tmp_path)
    store, _ = gen.write_databases(state)
    gone = state / gen.GONE
    gone.mkdir()
    (gone / "events.jsonl").write_bytes(b"")
    outgoing, tally = convert_file(FMT, store)
    assert outgoing == [] and tally.skipped == {"file:session-store.db": 1}
