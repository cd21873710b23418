"""Gemini CLI chats: the converter over a generated history (both layouts), then the real
``import`` and ``watch`` into a real nats-server and worker, read back through the tools."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from tests._harness import until
from tests.importers import gen_gemini_cli as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask, sessionquery
from tests.importers.test_watch import has, start, stop, watch_command
from tests.importers.test_watch import said as said_by
from worker.importers.detect import detect, expand
from worker.importers.gemini_cli import GeminiCliImporter
from worker.importers.pipeline import convert_file
from worker.importers.plugin import ConvertOptions, UnreadableSource
from worker.importers.skips import BUILT_IN, reason_for

FMT = "gemini-cli"


def test_both_layouts_convert_with_lineage_tools_and_titles(tmp_path: Path) -> None:
    tmp = gen.write(tmp_path)
    sessions, outs, tally = by_session(FMT, tmp)
    assert {k: len(v) for k, v in sessions.items()} == {
        gen.MAIN: gen.MAIN_EVENTS,
        gen.SUB: gen.SUB_EVENTS,
        gen.LEGACY: gen.LEGACY_EVENTS,
        gen.OLD_MAIN: gen.OLD_MAIN_EVENTS,
        gen.AGENT_FOUND: gen.FOUND_EVENTS,
        gen.AGENT_FAILED: gen.FAILED_EVENTS,
    }
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "message/context",
        "session/title", "message/user", "message/user", "message/assistant",
    ]  # fmt: skip
    payloads = [e["payload"] for e in main]
    assert main[0]["payload"]["cwd"] == gen.CWD  # from the project folder's marker
    assert payloads[2] == {"thinking": "Checking pump: The pressure may be too high.",
                           "source_type": "gemini:thought"}  # fmt: skip
    # The message appended three times gave its call once and its result once, citing it.
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    assert "pressure_bar: 15" in str(payloads[5]["output"])
    assert payloads[9]["title"] == gen.SUMMARY
    assert tally.skipped == gen.MAIN_SKIPPED
    # The sub-agent: a child of the session, citing the call that names it, titled by it.
    sub = sessions[gen.SUB]
    assert sub[0]["payload"]["parent_session_id"] == gen.MAIN
    assert sub[0]["cites"] == [{"session_id": gen.MAIN, "seq": 7}]
    assert sub[1]["payload"]["title"] == gen.SUB_TASK
    assert sub[4]["payload"]["output"] == "pattern matched 0 files"
    assert sub[4]["payload"]["status"] == "error"
    # Its summary is its result: searchable context at its end, never its title.
    assert [e["type"] for e in sub if e["type"] == "session/title"] == ["session/title"]
    assert (sub[-1]["type"], sub[-1]["payload"]["text"]) == ("message/context", gen.SUB_RESULT)
    # The older layout: no marker, so no cwd (the no-cwd workspace), never a guessed one.
    legacy = sessions[gen.LEGACY]
    assert legacy[0]["payload"]["cwd"] is None
    assert {o.key for o in outs if o.session_id == gen.LEGACY} == {NO_CWD_KEY}
    assert legacy[4]["payload"]["output"] == "calibrated: burr gap 0.2 mm"
    assert [e["type"] for e in legacy][-1] == "message/context"


def test_older_sub_agent_documents_are_children_citing_their_calls(tmp_path: Path) -> None:
    """``chats/<parent>/<agent id>.json`` (March–April 2026): the parent's calls do not
    name the sub-agent; the one finished is found by its summary in a call's result, the
    one that timed out (no summary) by when the call completed."""
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert not tally.problems
    found, failed = sessions[gen.AGENT_FOUND], sessions[gen.AGENT_FAILED]
    for sub, call_seq, task in ((found, 3, gen.FOUND_TASK), (failed, 5, gen.FAILED_TASK)):
        assert sub[0]["payload"]["parent_session_id"] == gen.OLD_MAIN
        assert sub[0]["payload"]["kind"] == "subagent"
        assert sub[0]["cites"] == [{"session_id": gen.OLD_MAIN, "seq": call_seq}]
        assert sessions[gen.OLD_MAIN][call_seq - 1]["type"] == "tool/call"
        assert sub[0]["payload"]["cwd"] == gen.OLD_CWD
        assert [e["payload"]["title"] for e in sub if e["type"] == "session/title"] == [task]
    # The summary (the result cut to 200 characters) is kept at the end, as context.
    assert (found[-1]["type"], found[-1]["payload"]["text"]) == (
        "message/context",
        gen.FOUND_SUMMARY,
    )
    assert all(e["payload"].get("text") != gen.FOUND_SUMMARY for e in found[:-1])
    assert [e["type"] for e in failed][-1] == "tool/result"


def test_sub_agent_calls_with_masked_outputs_are_still_found(tmp_path: Path) -> None:
    """The CLI masks a long tool output (``<tool_output_masked>`` and the original as
    JSON): the call is still a sub-agent's, told apart by when it completed."""
    chats = gen.write_old(tmp_path)
    parent = gen.old_session()
    for message in parent["messages"]:
        for call in message.get("toolCalls", []):
            response = call["result"][0]["functionResponse"]["response"]
            response["output"] = "<tool_output_masked>\n" + orjson.dumps(response).decode()
            del call["resultDisplay"]
    path = chats / f"session-2026-03-20T10-00-{gen.OLD_MAIN[:8]}.json"
    path.write_bytes(orjson.dumps(parent))
    sessions, _, _ = by_session(FMT, tmp_path)
    assert sessions[gen.AGENT_FOUND][0]["cites"] == [{"session_id": gen.OLD_MAIN, "seq": 3}]
    assert sessions[gen.AGENT_FAILED][0]["cites"] == [{"session_id": gen.OLD_MAIN, "seq": 5}]


def test_a_sub_agent_without_marker_or_directories_takes_its_parents_cwd(
    tmp_path: Path,
) -> None:
    """No marker (a digest-named folder); the parent has a workspace directory (added with
    ``/dir add``) and the sub-agent none: the sub-agent is in its parent's workspace."""
    chats = gen.write_old(tmp_path)
    (chats.parent / ".project_root").unlink()
    parent = chats / f"session-2026-03-20T10-00-{gen.OLD_MAIN[:8]}.json"
    parent.write_bytes(orjson.dumps({**gen.old_session(), "directories": [gen.OLD_CWD]}))
    for agent in (gen.AGENT_FOUND, gen.AGENT_FAILED):
        path = chats / gen.OLD_MAIN / f"{agent}.json"
        path.write_bytes(orjson.dumps({**gen.old_agent(agent), "directories": []}))
    sessions, _, _ = by_session(FMT, tmp_path)
    assert {sid: events[0]["payload"]["cwd"] for sid, events in sessions.items()} == {
        gen.OLD_MAIN: gen.OLD_CWD,
        gen.AGENT_FOUND: gen.OLD_CWD,
        gen.AGENT_FAILED: gen.OLD_CWD,
    }


def test_detection_and_which_files_are_sources(tmp_path: Path) -> None:
    tmp = gen.write(tmp_path)
    files = list(expand([tmp], FMT))
    assert [f.name for f in files] == [  # by project; a project's sessions before sub-agents
        f"session-2025-05-02T10-00-{gen.LEGACY[:8]}.json",
        f"session-2025-06-01T09-00-{gen.MAIN[:8]}.jsonl", f"{gen.SUB}.jsonl",
        f"session-2026-03-20T10-00-{gen.OLD_MAIN[:8]}.json", f"{gen.AGENT_FAILED}.json",
        f"{gen.AGENT_FOUND}.json",
    ]  # fmt: skip
    assert {detect(f) for f in files} == {FMT}
    assert list(expand([tmp], "auto")) == sorted(files, key=str)
    # Resumed by a newer CLI, a .json gets a .jsonl copy beside it: only the copy is read.
    legacy = files[0]
    legacy.with_suffix(".jsonl").write_bytes(b"")
    assert not GeminiCliImporter().accepts(legacy)


def test_a_half_written_document_waits_for_watch_and_is_reported_by_import(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats" / "session-2025-05-02T10-00-half.json"
    path.parent.mkdir()
    whole = orjson.dumps(gen.legacy_session())
    path.write_bytes(whole[: len(whole) // 2])
    importer = GeminiCliImporter()
    assert list(importer.records(path, complete=False)) == []
    with pytest.raises(UnreadableSource, match="not a whole JSON document"):
        list(importer.records(path, complete=True))
    path.write_bytes(whole)  # written out: the records after the ones already read
    assert [r.position for r in importer.records(path, after=2, complete=False)] == [3, 4]


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    tmp = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, tmp, FMT) as (worker, said):
        assert "skipped records: record:$rewindTo 1, record:unknown 1" in said
        await assert_events(nc, worker, gen.SUB, gen.MAIN, gen.MAIN_EVENTS + 1)  # + its end
        await assert_events(nc, worker, gen.SUB, gen.SUB, gen.SUB_EVENTS + 1)
        trace = await ask(nc, worker, "session_trace", gen.SUB, session_id=gen.MAIN)
        assert f"⟦{gen.SUMMARY}⟧" in trace and gen.SUB in trace.split("Descendants")[1]
        spawned = await ask(nc, worker, "session_event_trace", gen.SUB, session_id=gen.SUB, seq=1)
        assert f"{gen.MAIN} seq 7 · tool/call" in spawned.split("Cites (")[1]
        # The older layout's sub-agents: children of their parent, each citing its call,
        # titled by the call, their summaries searchable but no title.
        old = await ask(nc, worker, "session_trace", gen.OLD_MAIN, session_id=gen.OLD_MAIN)
        assert gen.AGENT_FOUND in old.split("Descendants")[1]
        assert gen.AGENT_FAILED in old.split("Descendants")[1]
        for agent, seq in ((gen.AGENT_FOUND, 3), (gen.AGENT_FAILED, 5)):
            start = await ask(nc, worker, "session_event_trace", gen.OLD_MAIN, session_id=agent,
                              seq=1)  # fmt: skip
            assert f"{gen.OLD_MAIN} seq {seq} · tool/call" in start.split("Cites (")[1]
        await assert_events(nc, worker, gen.OLD_MAIN, gen.AGENT_FOUND, gen.FOUND_EVENTS + 1)
        hits = await ask(nc, worker, "session_event_search", gen.OLD_MAIN,
                         session_id=gen.AGENT_FOUND, query="load_presets")  # fmt: skip
        assert "message/context" in hits
        assert "SummaryOfFindings" not in old
        result = await ask(nc, worker, "session_event_trace", gen.SUB, session_id=gen.MAIN, seq=6)
        assert f"{gen.MAIN} seq 5 · tool/call" in result.split("Cites (")[1]
        found = await ask(nc, worker, "session_search", gen.SUB, query="quiet pump profile")
        assert gen.MAIN in found
        hits = await ask(nc, worker, "session_event_search", gen.SUB, session_id=gen.MAIN,
                         query="pressure_bar")  # fmt: skip
        assert "tool/result" in hits
        # The older session is in the no-cwd workspace: a caller of the project never sees
        # it, a caller from that workspace does.
        assert gen.LEGACY not in await ask(nc, worker, "session_search", gen.SUB, query="burrs")
        read = await ask(nc, worker, "session_event_read", gen.LEGACY, session_id=gen.LEGACY,
                         seq=5)  # fmt: skip
        assert "burr gap 0.2 mm" in read


async def test_watch_follows_a_chat_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    chats = tmp_path / "tmp" / "espresso-app" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(gen.CWD)
    lines = [orjson.dumps(r) + b"\n" for r in gen.main_session()]
    file = chats / f"session-2025-06-01T09-00-{gen.MAIN[:8]}.jsonl"
    # The header and the first prompt, then half of the next record: held until whole.
    file.write_bytes(b"".join(lines[:2]) + lines[2][:25])
    rest = lines[2][25:] + b"".join(lines[3:])
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", tmp_path / "tmp", FMT,
                             file, rest, before=2, after=gen.MAIN_EVENTS)  # fmt: skip
    assert f"published {gen.MAIN_EVENTS} events (0 already in the stream)" in said


async def test_watch_reads_a_rewritten_document_from_where_it_stopped(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    """The older layout is rewritten whole after each turn: watch publishes the messages
    added since, and a restarted watch resumes at the stored message index."""
    chats = tmp_path / "tmp" / gen.PROJECT_HASH / "chats"
    chats.mkdir(parents=True)
    file = chats / f"session-2025-05-02T10-00-{gen.LEGACY[:8]}.json"
    whole = gen.legacy_session()
    first = {**whole, "messages": whole["messages"][:1]}
    file.write_bytes(orjson.dumps(first, option=orjson.OPT_INDENT_2))
    rewritten = orjson.dumps(whole, option=orjson.OPT_INDENT_2)
    command = watch_command(nats_url, subjects, f"watch-{unique}", tmp_path / "tmp", fmt=FMT)
    process = start(command)
    try:
        await until(lambda: has(nc, subjects, 2), within=20)  # start, first prompt
        file.write_bytes(rewritten)
        await until(lambda: has(nc, subjects, gen.LEGACY_EVENTS), within=20)
    finally:
        code, said = stop(process)
    assert code == 0 and f"published {gen.LEGACY_EVENTS} events" in said, said
    again = start(watch_command(nats_url, subjects, f"watch-{unique}", tmp_path / "tmp",
                                fmt=FMT, quiet=False))  # fmt: skip
    await until(lambda: "1/1 files" in said_by(again), within=30)
    code, said = stop(again)
    assert code == 0 and "published 0 events (0 already in the stream)" in said, said
    await nc.jetstream().delete_stream(subjects.events_stream)


def test_json_lines_under_the_old_name_are_read_as_lines(tmp_path: Path) -> None:
    path = tmp_path / "chats" / f"session-2025-06-01T09-00-{gen.MAIN[:8]}.json"
    path.parent.mkdir()
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in gen.main_session()))
    assert detect(path) == FMT
    events, tally = convert_file(FMT, path)
    assert len(events) == gen.MAIN_EVENTS and tally.skipped == gen.MAIN_SKIPPED


RECORDED = Path(__file__).parent / "recorded" / "gemini-cli" / "sessions"


def test_a_recorded_compression_replaces_what_it_summarised_and_keeps_the_recent_turns() -> None:
    """Gemini CLI 0.61 writes ``/compress`` as a ``$set`` of ``messages``: the summary as a
    user message, the model's acknowledgement (a model message the file never appended),
    then the turns it keeps, copied under new ids. A resume's ``$set`` rewrites the
    history as it was (no new model message): not a compaction."""
    sessions, _, _ = by_session(FMT, RECORDED)
    main = next(events for events in sessions.values() if events[0]["payload"]["kind"] == "main")
    compactions = [e for e in main if e["type"] == "compaction"]
    assert len(compactions) == 1
    compaction = compactions[0]
    assert "<summary>1. Fixed Ledger.balance" in compaction["payload"]["summary"]
    by_seq = {e["seq"]: e for e in main}
    replaced = [by_seq[seq] for seq in compaction["replaces"]]
    texts = [e["payload"].get("text", "") for e in replaced if e["type"] == "message/user"]
    # The fix turn is summarised; the refund turn, kept whole by the CLI, is not replaced.
    assert texts == [
        "The test in test_ledger.py fails. Please find the bug in ledger.py and fix it."
    ]
    assert {e["type"] for e in replaced} >= {"tool/call", "tool/result", "message/assistant"}
    refund = next(e for e in main if e["payload"].get("text", "").startswith("Thanks. Also"))
    assert refund["seq"] not in compaction["replaces"]
    # The copies of the kept turns are not published again.
    assert sum(e["payload"].get("text", "").startswith("Thanks. Also") for e in main) == 1


def test_a_recorded_resume_in_a_later_minute_adds_no_second_start() -> None:
    """Resuming, Gemini CLI 0.61 first starts a new chat file for the session id it is
    given (``session-<now>-<short id>.jsonl``: a header and the session context), then
    goes on in the session's own file: the later file holds no message and is not a
    session of its own. It is read and counted as skipped by design (``file:resume-stub``),
    never passed over unsaid."""
    stubs = sorted((RECORDED / "shop" / "chats").glob("session-*.jsonl"))[1:]
    assert len(stubs) == 2
    files = expand([RECORDED], FMT)
    assert [p for p in files if p.parent.name == "chats"][1:] == stubs
    sessions, _, tally = by_session(FMT, RECORDED)
    assert len(sessions) == 2  # the main session and its sub-agent
    for events in sessions.values():
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert sum(e["type"] == "session/start" for e in events) == 1
    assert tally.skipped["file:resume-stub"] == 2 and "file:header-only" not in tally.skipped
    for stub in stubs:
        outs, one = convert_file(FMT, stub)
        one.explain(GeminiCliImporter().skip_reason)
        assert outs == [] and one.by_design["file:resume-stub"] == 1 and not one.unknown


def test_a_resume_stub_is_shown_as_skipped_by_design_by_dry_run(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    done = sessionquery("import", "--format", FMT, str(RECORDED), "--dry-run", "--quiet",
                        env=environment)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    for stub in sorted((RECORDED / "shop" / "chats").glob("session-*.jsonl"))[1:]:
        at = out.index(f"{stub} ({FMT})")
        shown = out[at + 1 : at + 6]
        assert any(line.startswith("  skipped by design: file:resume-stub 1") for line in shown)
    assert "file:resume-stub 2" in done.stderr  # the summary names them too
    assert reason_for("file:resume-stub", BUILT_IN[FMT]) is not None


def test_a_recorded_failed_tool_call_is_flagged_as_every_format_flags_one() -> None:
    sessions, _, _ = by_session(FMT, RECORDED)
    results = [e for evs in sessions.values() for e in evs if e["type"] == "tool/result"]
    failed = [r for r in results if r["payload"].get("is_error")]
    assert [r["payload"]["tool"] for r in failed] == ["read_file"]
    assert failed[0]["payload"]["status"] == "error"
    assert "NOTES.md" in failed[0]["payload"]["output"]


def test_a_recorded_image_in_a_prompt_is_counted_not_dropped() -> None:
    """``gemini -p "@red.png ..."``: the CLI inlines the file as an ``inlineData`` part of the
    user message, between its text parts; it is skipped, and counted (once, although the
    CLI may append the message again)."""
    _, _, tally = by_session(FMT, RECORDED)
    assert tally.skipped["user-part:inlineData:image/png"] == 1


def test_a_migrated_project_imports_each_chat_once_with_its_cwd(tmp_path: Path) -> None:
    gen.write_migrated(tmp_path)
    sessions, _, tally = by_session(FMT, tmp_path)
    for events in sessions.values():  # no session is fed twice: seqs run 1.. once
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert set(sessions) == {gen.MOVED, gen.LEFT, gen.REUSED, gen.REUSED_LATER}
    # The copy the CLI went on in is read; the stale one it left behind is not.
    moved = [e["payload"]["text"] for e in sessions[gen.MOVED] if e["type"] == "message/user"]
    assert moved == ["roast curve", "first crack"]
    # A chat left only in the old folder gets the project's path from the new one.
    assert {events[0]["payload"]["cwd"] for events in sessions.values()} == {gen.MIGRATED_CWD}
    # One id, two files: two conversations.
    later = [
        e["payload"]["text"] for e in sessions[gen.REUSED_LATER] if e["type"] == "message/user"
    ]
    assert later == ["cooling tray"]
    assert len([e for e in sessions[gen.REUSED] if e["type"] == "message/user"]) == 2
    assert not tally.unknown


def test_an_empty_chat_file_is_nothing_yet_not_a_problem(tmp_path: Path) -> None:
    chats = tmp_path / "roaster" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-02-20T14-43-945bf706.json").write_bytes(b"")
    events, tally = convert_file(FMT, chats / "session-2026-02-20T14-43-945bf706.json")
    assert (events, tally.problems) == ([], [])


def test_a_project_folder_without_its_marker_takes_the_registered_path(tmp_path: Path) -> None:
    gen.write_registered(tmp_path / ".gemini")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    assert sessions[gen.REGISTERED][0]["payload"]["cwd"] == gen.REGISTERED_CWD
    assert sessions[gen.DIGESTED][0]["payload"]["cwd"] == gen.DIGESTED_CWD


def test_a_digest_folder_no_newer_folder_continues_is_named_by_a_known_path_above(
    tmp_path: Path,
) -> None:
    gen.write_home_digest(tmp_path / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    assert sessions[gen.IN_PROJECT][0]["payload"]["cwd"] == gen.HOME_PROJECT_CWD
    # The digest is of the home folder as Windows spells it, above the marked project.
    assert sessions[gen.AT_HOME][0]["payload"]["cwd"] == gen.HOME_CWD


def test_the_session_context_a_new_file_opens_with_is_context(tmp_path: Path) -> None:
    gen.write_bootstrapped(tmp_path / ".gemini" / "tmp")
    sessions, _, tally = by_session(FMT, tmp_path / ".gemini" / "tmp")
    events = sessions[gen.BOOTSTRAPPED]
    assert [e["type"] for e in events][:4] == [
        "session/start", "message/context", "message/user", "message/assistant",
    ]  # fmt: skip
    assert events[1]["payload"]["text"] == gen.BOOT_CONTEXT
    assert events[2]["payload"]["text"] == "what fires at cone 6?"
    assert "record:$set:messages" not in tally.skipped  # nothing of it was read before


def test_the_a2a_server_s_chats_are_sessions_of_their_own(tmp_path: Path) -> None:
    # All its files carry one id: each is a session, named by its folder and time.
    gen.write_a2a_server(tmp_path / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    assert sorted(sessions) == [
        "a2a-server-admin-2026-06-04T10-51", "a2a-server-admin-2026-06-26T04-18",
        "a2a-server-code-oss-for-cloud-shell-2026-06-04T11-22",
    ]  # fmt: skip
    editor = sessions["a2a-server-code-oss-for-cloud-shell-2026-06-04T11-22"]
    assert editor[0]["payload"]["cwd"] == "/home/dev/code-oss-for-cloud-shell"
    assert [e["type"] for e in editor][1] == "message/context"


def test_a_chat_file_without_its_header_is_a_session_named_by_the_file(
    tmp_path: Path,
) -> None:
    gen.write_headless(tmp_path / ".gemini" / "tmp")
    sessions, _, tally = by_session(FMT, tmp_path / ".gemini" / "tmp")
    (session,) = sessions
    assert session == gen.HEADLESS_FILE.removesuffix(".jsonl")
    events = sessions[session]
    assert [e["type"] for e in events][:5] == [
        "session/start", "tool/call", "tool/result", "message/user", "message/assistant",
    ]  # fmt: skip
    assert events[0]["payload"]["cwd"] == "/home/dev/kiln"
    assert events[0]["time"] == "2026-06-11T04:31:43.685Z"
    assert tally.skipped["record:header:missing"] == 1
    assert reason_for("record:header:missing", BUILT_IN[FMT]) is not None  # not drift


def test_a_digest_folder_is_named_by_a_path_its_chats_text_mentions(tmp_path: Path) -> None:
    gen.write_mentioned_digest(tmp_path / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    assert sessions[gen.MENTIONING][0]["payload"]["cwd"] == gen.SHOWN_CWD


def test_a_digest_folder_is_named_by_a_path_another_folder_s_chats_mention(
    tmp_path: Path,
) -> None:
    gen.write_named_elsewhere(tmp_path / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    assert sessions[gen.NAMED_ELSEWHERE][0]["payload"]["cwd"] == gen.ELSEWHERE_CWD
    assert sessions[gen.MENTIONING][0]["payload"]["cwd"] == gen.SHOWN_CWD


def test_a_slug_folder_without_its_marker_takes_the_one_shown_folder_of_its_name(
    tmp_path: Path,
) -> None:
    session = gen.write_shown_slug(tmp_path / "one" / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / "one" / ".gemini" / "tmp")
    assert sessions[session][0]["payload"]["cwd"] == gen.SLUG_CWD
    # Two shown folders slug to the folder's name: neither is taken.
    gen.write_shown_slug(tmp_path / "two" / ".gemini" / "tmp", twice=True)
    sessions, _, _ = by_session(FMT, tmp_path / "two" / ".gemini" / "tmp")
    assert sessions[session][0]["payload"]["cwd"] is None


def test_a_digest_folder_of_another_home_is_named_by_a_path_its_chats_show(
    tmp_path: Path,
) -> None:
    gen.write_shown_digest(tmp_path / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    # The folder the digest names, above the paths shown; in the chat that shows none too.
    assert sessions[gen.SHOWING][0]["payload"]["cwd"] == gen.SHOWN_CWD
    assert sessions[gen.SHOWING_NONE][0]["payload"]["cwd"] == gen.SHOWN_CWD


def test_a_digest_folder_of_a_path_spelled_in_capitals_is_named_by_the_marked_project(
    tmp_path: Path,
) -> None:
    # The marker is lowered whole; the digest is of the path with a folder in capitals.
    gen.write_capitals_digest(tmp_path / ".gemini" / "tmp")
    sessions, _, _ = by_session(FMT, tmp_path / ".gemini" / "tmp")
    assert sessions[gen.IN_LOWERED][0]["payload"]["cwd"] == gen.CAPITALS_MARKER
    assert sessions[gen.IN_CAPITALS][0]["payload"]["cwd"] == gen.CAPITALS_CWD


def test_a_skill_extraction_run_is_the_harness_talking_not_the_user(tmp_path: Path) -> None:
    """0.61.0's memory service writes its skill-extraction agent's chat as a sub-agent of
    a session that does not exist (the folder is the run's prompt id) with its prompt as
    the user message: it is a session of its own, titled, whose prompt is harness context
    (``meta``), not the user's words nor a title."""
    tmp = gen.write(tmp_path)
    path = gen.write_skill_extraction(tmp)
    sessions, _, _ = by_session(FMT, tmp)
    run = sessions[gen.EXTRACTOR]
    assert run[0]["type"] == "session/start"
    assert run[0]["payload"]["parent_session_id"] is None and "cites" not in run[0]
    assert run[0]["payload"]["cwd"] == gen.CWD
    kinds = [e["type"] for e in run]
    assert kinds == ["session/start", "session/title", "message/context", "tool/call",
                     "tool/result", "message/assistant"]  # fmt: skip
    assert run[1]["payload"]["title"] == "Skill extraction"
    prompt = run[2]["payload"]
    assert prompt["meta"] is True and prompt["text"] == gen.EXTRACTION_PROMPT
    assert run[4]["cites"] == [{"session_id": gen.EXTRACTOR, "seq": run[3]["seq"]}]
    assert gen.EXTRACTION_RUN not in sessions  # no parent session made up
    _, tally = convert_file(FMT, path)
    assert not tally.skipped and not tally.problems


@pytest.mark.parametrize("context", [True, False], ids=["with-context", "header-alone"])
def test_a_chat_with_no_message_yet_is_skipped_and_counted_then_imported_once_it_has_one(
    tmp_path: Path, context: bool
) -> None:
    """The CLI writes a chat's header (and its bootstrap context) before the first prompt;
    a user who quits leaves the file so. An empty session is noise in lists and searches:
    nothing is published, the file is counted as skipped by design; once a message is
    appended the session is published whole, from its start."""
    path = gen.write_empty(tmp_path / ".gemini" / "tmp", context=context)
    events, tally = convert_file(FMT, path)
    assert events == [] and tally.skipped == {"file:header-only": 1}
    tally.explain(GeminiCliImporter().skip_reason)
    assert not tally.unknown and tally.by_design == {"file:header-only": 1}
    with path.open("ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in gen.first_prompt()))
    events, tally = convert_file(FMT, path)
    bodies = [orjson.loads(e.body) for e in events]
    kinds = [b["type"] for b in bodies]
    assert kinds == ["session/start", *(["message/context"] if context else []), "message/user"]
    assert [b["seq"] for b in bodies] == list(range(1, len(bodies) + 1))
    assert bodies[0]["payload"]["cwd"] == "/home/dev/kiln"
    assert "file:header-only" not in tally.skipped


def test_an_empty_chat_is_neither_ended_nor_counted_twice_while_watched(tmp_path: Path) -> None:
    """``watch``'s converter: quiet while empty (no end, one count however often it idles),
    then the whole session once the prompt comes."""
    path = gen.write_empty(tmp_path / ".gemini" / "tmp")
    converter = GeminiCliImporter().converter(path, ConvertOptions())
    lines = path.read_bytes().splitlines()
    assert [out for n, line in enumerate(lines, 1) for out in converter.feed(n, line)] == []
    assert converter.idle() == [] and converter.idle() == []
    assert converter.tally.skipped == {"file:header-only": 1}
    said = [out.kind for r in gen.first_prompt() for out in converter.feed(9, orjson.dumps(r))]
    assert said == ["session/start", "message/context", "message/user"]
    assert [out.kind for out in converter.idle()] == ["session/end"]
    assert "file:header-only" not in converter.tally.skipped


async def test_watch_publishes_an_empty_chat_only_once_it_has_a_message(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    path = gen.write_empty(tmp_path / "tmp")
    command = watch_command(nats_url, subjects, f"watch-{unique}", tmp_path / "tmp", fmt=FMT,
                            idle=0.3, quiet=False)  # fmt: skip
    process = start(command)
    try:
        await until(lambda: "1/1 files" in said_by(process), within=30)
        await asyncio.sleep(1.5)  # idle several times over: still nothing published
        assert await has(nc, subjects, 0)
        with path.open("ab") as fh:
            fh.write(b"".join(orjson.dumps(r) + b"\n" for r in gen.first_prompt()))
        # start, context, prompt, then its end once quiet again
        await until(lambda: has(nc, subjects, 4), within=20)
    finally:
        code, said = stop(process)
    assert code == 0 and "published 4 events" in said, said
    await nc.jetstream().delete_stream(subjects.events_stream)
