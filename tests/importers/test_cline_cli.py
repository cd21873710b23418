"""Cline CLI 3.x session folders, on the recording of the real CLI (tests/importers/recorded/
cline): the prompt unwrapped from ``<user_input>``, tool results' text and failures, the
sub-agent as a child whose start cites its ``spawn_agent`` call, detection, and ``watch`` while
the CLI rewrites the conversation."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers._agent_e2e import by_session, converted
from tests.importers._sources import watch_growth
from tests.recording.agents import FIX_PROMPT, SUBAGENT_PROMPT
from worker.importers.cline_cli import messages_file, read_session
from worker.importers.detect import detect, expand

FMT = "cline-cli"
ROOT = Path(__file__).parent / "recorded" / "cline" / "sessions"


def test_the_recorded_session_and_its_sub_agent() -> None:
    sessions, _, tally = by_session(FMT, ROOT)
    assert not tally.problems and not tally.skipped
    (main, lead), (child, sub) = sorted(sessions.items(), key=lambda kv: len(kv[0]))
    assert main.startswith("cline-") and child.startswith(main + "__agent_")
    prompt = lead[1]["payload"]
    assert (prompt["text"], prompt["mode"]) == (FIX_PROMPT, "act")
    results = [e for e in lead if e["type"] == "tool/result"]
    # The failing test run and the missing file are errors; the rest are not.
    assert [bool(e["payload"].get("is_error")) for e in results] == [
        True, False, True, False, False, False,
    ]  # fmt: skip
    assert "AssertionError: 7 != 12" in results[0]["payload"]["output"]
    spawn = next(e for e in lead if e["payload"].get("tool") == "spawn_agent")
    assert sub[0]["payload"]["parent_session_id"] == main
    assert sub[0]["cites"] == [{"session_id": main, "seq": spawn["seq"]}]
    assert sub[1]["payload"]["text"] == SUBAGENT_PROMPT
    # The sub-agent's answer, not the JSON it is wrapped in.
    answer = next(e for e in results if e["cites"][0]["seq"] == spawn["seq"])
    assert answer["payload"]["output"].startswith("refund() appends -amount")


def test_the_title_and_start_come_from_the_session_file() -> None:
    (folder,) = list(expand([ROOT], FMT))
    main = read_session(folder).sessions[0]
    assert main.title == FIX_PROMPT
    assert main.cwd == "/tmp/sq-record/cline/shop"
    assert main.extra["version"] == "3.0.65"


def test_detected_as_a_cline_cli_session_folder() -> None:
    (folder,) = list(expand([ROOT], FMT))
    assert detect(folder) == FMT
    # The extension's importer does not take it: it has no api_conversation_history.json.
    assert list(expand([ROOT], "cline")) == []


async def test_watch_follows_the_session_as_the_cli_rewrites_it(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    (source,) = list(expand([ROOT], FMT))
    folder = tmp_path / "sessions" / source.name
    shutil.copytree(source, folder, copy_function=shutil.copyfile)
    lead = messages_file(folder)
    whole = orjson.loads(lead.read_bytes())
    # The CLI writes the whole conversation again after each message: first the first six.
    lead.write_bytes(orjson.dumps({**whole, "messages": whole["messages"][:6]}))
    before, _ = converted(FMT, folder)

    def the_rest() -> None:
        lead.write_bytes(orjson.dumps(whole))

    the_rest()
    after, _ = converted(FMT, folder)
    lead.write_bytes(orjson.dumps({**whole, "messages": whole["messages"][:6]}))
    assert 0 < before < after
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", FMT, folder,
                       before=before, grow=the_rest, after=after)  # fmt: skip
