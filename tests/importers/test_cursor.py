"""Cursor agent transcripts: the converter over a generated history (a session with a
sub-agent, the older flat layout), then the real ``import`` and ``watch`` into a real
nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from tests.importers import gen_cursor as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers.detect import detect, expand

FMT = "cursor"


def test_blocks_map_and_nothing_is_invented(tmp_path: Path) -> None:
    sessions, outs, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "message/context", "message/user", "message/assistant", "tool/call",
        "tool/result", "tool/call", "tool/result", "message/assistant",
    ]  # fmt: skip
    assert main[1]["payload"]["text"] == "<user_info>OS: linux</user_info>"
    assert main[2]["payload"]["text"] == "the grinder app crashes on start"
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    # A result without an id answers the oldest unanswered call.
    assert main[7]["cites"] == [{"session_id": gen.MAIN, "seq": 7}]
    assert main[7]["payload"]["tool"] == "Shell"
    # No times in the format: the file's. The cwd: the one folder here Cursor's name fits.
    assert {e["time"] for e in main} == {gen.WRITTEN_ISO}
    assert main[0]["payload"]["cwd"] == str(gen.project_dir(tmp_path))
    child = sessions[gen.CHILD][0]["payload"]
    assert (child["parent_session_id"], child["cwd"]) == (gen.MAIN, main[0]["payload"]["cwd"])
    # A project folder naming no folder here: no cwd, the no-cwd workspace.
    assert sessions[gen.OLD][0]["payload"]["cwd"] is None
    assert {o.key for o in outs if o.session_id == gen.OLD} == {NO_CWD_KEY}
    assert tally.skipped == gen.SKIPPED


def test_detection(tmp_path: Path) -> None:
    files = list(expand([gen.write(tmp_path)], FMT))
    assert len(files) == 3 and {detect(f) for f in files} == {FMT}


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "record:turn_ended 1" in said
        await assert_events(nc, worker, gen.CHILD, gen.MAIN, gen.EVENTS[gen.MAIN] + 1)
        assert "sessions without a cwd: 1 (the no-cwd workspace" in said
        trace = await ask(nc, worker, "session_trace", gen.CHILD, session_id=gen.MAIN)
        assert "the grinder app crashes on start" in trace  # the first prompt titles it
        assert gen.CHILD in trace.split("Descendants")[1]
        found = await ask(nc, worker, "session_search", gen.CHILD, query="burr_size default")
        assert gen.MAIN in found
        alone = await ask(nc, worker, "session_search", gen.OLD, query="burr_size default")
        assert gen.MAIN not in alone  # a session without a cwd sees only itself
        result = await ask(nc, worker, "session_event_trace", gen.CHILD, session_id=gen.MAIN,
                           seq=8)  # fmt: skip
        assert f"{gen.MAIN} seq 7 · tool/call" in result.split("Cites (")[1]


async def test_watch_follows_a_transcript_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = tmp_path / "projects" / gen.GONE_SLUG / "agent-transcripts" / gen.MAIN
    folder.mkdir(parents=True)
    records = [gen.lines([r]) for r in gen.main_session()]
    file = folder / f"{gen.MAIN}.jsonl"
    file.write_bytes(records[0] + records[1][:15])  # the prompt, then half a line
    rest = records[1][15:] + b"".join(records[2:])
    total = gen.EVENTS[gen.MAIN]
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", tmp_path / "projects",
                             FMT, file, rest, before=3, after=total)  # fmt: skip
    assert f"published {total} events (0 already in the stream)" in said


def test_a_workspace_not_here_is_read_from_the_paths_its_transcript_shows(
    tmp_path: Path,
) -> None:
    sessions, _, _ = by_session(FMT, gen.write_elsewhere(tmp_path))
    assert sessions[gen.ELSEWHERE][0]["payload"]["cwd"] == gen.ELSEWHERE_CWD
    # Two folders the project folder's name fits: none is chosen.
    assert sessions[gen.AMBIGUOUS][0]["payload"]["cwd"] is None


def test_a_session_showing_no_path_takes_the_one_its_project_folder_shows(
    tmp_path: Path,
) -> None:
    sessions, _, _ = by_session(FMT, gen.write_project_wide(tmp_path))
    # Its own transcript shows the workspace; its .txt does; another session of the
    # project folder does (the same workspace: the folder is named by it).
    for session in (gen.WIDE_SHOWS, gen.WIDE_TEXT, gen.WIDE_SILENT):
        assert sessions[session][0]["payload"]["cwd"] == gen.WIDE_CWD, session
