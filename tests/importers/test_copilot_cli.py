"""GitHub Copilot CLI sessions: the converter over a generated history (the session folder
and the older flat file), then the real ``import`` and ``watch`` into a real nats-server
and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from tests.importers import gen_copilot_cli as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers.detect import detect, expand

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
        "message/user", "message/assistant", "message/context", "session/title", "session/end",
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
    assert main[13]["payload"]["reason"] == "shutdown"
    assert tally.skipped == gen.MAIN_SKIPPED
    # The older flat file: no context and no workspace.yaml, so no cwd.
    assert sessions[gen.OLD][0]["payload"]["cwd"] is None
    assert {o.key for o in outs if o.session_id == gen.OLD} == {NO_CWD_KEY}


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
        await assert_events(nc, worker, gen.MAIN, gen.MAIN, gen.MAIN_EVENTS)  # shut down
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


async def test_watch_follows_a_session_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    state = tmp_path / "session-state"
    folder = state / gen.MAIN
    folder.mkdir(parents=True)
    lines = [line + b"\n" for line in gen.main_session().bytes().splitlines()]
    file = folder / "events.jsonl"
    file.write_bytes(b"".join(lines[:3]) + lines[3][:20])  # start, model change, prompt; half
    rest = lines[3][20:] + b"".join(lines[4:])
    # No workspace.yaml: no title; the shutdown ends the session.
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", state, FMT, file, rest,
                             before=2, after=gen.MAIN_EVENTS - 1)  # fmt: skip
    assert f"published {gen.MAIN_EVENTS - 1} events (0 already in the stream)" in said
