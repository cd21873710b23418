"""Continue CLI: converter checks (tool call states, context items, compaction rewriting
the file, a running tool), an import read back with the five tools, and ``watch``
following a session file the CLI rewrites."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_continue as gen
from tests.importers._agent_e2e import assert_events, by_session, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import continue_cli
from worker.importers.continue_cli import ContinueConverter, ContinueImporter
from worker.importers.plugin import ConvertOptions

# Recorded from the real cn 1.5.47 on a synthetic task, in a network namespace with only
# the loopback up, against a scripted OpenAI-compatible model (the rec branch's
# ScriptedModelServer): `cn -p <prompt> --config <scripted model> --auto`, then `--resume`
# three times (the third is `/compact`, which headless cn reports but does not save).
RECORDED = Path(__file__).parent / "fixtures" / "continue" / "cn-1.5.47" / "sessions"
MAIN = f"continue-{gen.MAIN}"
COMPACTED = f"continue-{gen.COMPACTED}"
# Main: start, user, context, text, 3 x (call, result), user, text = 12, plus title and
# end; the compacted one: start, compaction, user, text, plus end (its title is the
# placeholder).
EVENTS = 14 + 5


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("continue", continue_cli.read_session(path))


def converter(path: Path) -> ContinueConverter:
    made = ContinueImporter().converter(path, ConvertOptions())
    assert isinstance(made, ContinueConverter)
    return made


def fed(made: ContinueConverter) -> list[dict[str, Any]]:
    return [orjson.loads(out.body) for out in made.feed(1, b"")]


def test_a_session_gives_the_conversation(tmp_path: Path) -> None:
    folder = gen.write(tmp_path)
    reading = continue_cli.read_session(folder / f"{gen.MAIN}.json")
    got = reading_events("continue", reading)
    assert [(e["type"], e["payload"].get("tool")) for e in got] == [
        ("session/start", None), ("message/user", None), ("message/context", None),
        ("message/assistant", None), ("tool/call", "Read"), ("tool/result", "Read"),
        ("tool/call", "Subagent"), ("tool/result", "Subagent"), ("tool/call", "Bash"),
        ("tool/result", "Bash"), ("message/user", None), ("message/assistant", None),
    ]  # fmt: skip
    start = got[0]
    assert start["payload"]["cwd"] == gen.CWD
    assert start["time"] == "2025-11-24T16:00:00.000Z"  # sessions.json's dateCreated
    assert got[2]["payload"]["text"].startswith("orders.py\ndef list_orders()")
    assert got[4]["payload"]["input"] == {"filepath": "api/orders.py"}
    assert got[5]["cites"] == [{"session_id": MAIN, "seq": 5}]
    assert got[9]["payload"]["is_error"] is True and got[9]["cites"][0]["seq"] == 9
    assert reading.sessions[0].title == "Orders pagination"
    assert reading.skipped == {"part:imageUrl": 1}
    other = continue_cli.read_session(folder / f"{gen.COMPACTED}.json")
    assert other.sessions[0].cwd == "/home/dev/shop app"  # the IDE's file:// URI
    assert other.sessions[0].title is None  # "Untitled Session"
    assert [e["type"] for e in reading_events("continue", other)][1] == "compaction"


def test_the_recorded_session(tmp_path: Path) -> None:
    sessions, _, tally = by_session("continue", RECORDED)
    (only,) = sessions.values()
    assert [e["type"] for e in only] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result", "tool/call", "tool/result",
        "message/assistant", "message/user", "message/assistant", "message/user",
        "message/assistant",
    ]  # fmt: skip
    assert only[0]["payload"]["cwd"] == "/tmp/cnrec/task"
    results = [e for e in only if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [4, 7, 9]
    # Reading a missing file is the one errored call; the failing shell command is "done".
    assert [r["payload"].get("is_error", False) for r in results] == [False, True, False]
    assert "File does not exist" in results[1]["payload"]["output"]
    assert not tally.skipped and not tally.problems


def test_compaction_rewrites_the_file_and_numbers_go_on(tmp_path: Path) -> None:
    path = gen.write_session(tmp_path / "sessions", gen.COMPACTED, "Export", "/w",
                             gen.main_history())  # fmt: skip
    made = converter(path)
    before = fed(made)
    assert len(before) == 12
    # /compact: the file now holds the summary and what follows it.
    gen.write_session(tmp_path / "sessions", gen.COMPACTED, "Export", "/w",
                      gen.compacted_history(more=False))  # fmt: skip
    after = fed(made)
    assert [(e["seq"], e["type"]) for e in after] == [(13, "compaction"), (14, "message/user")]
    assert after[0]["replaces"] == list(range(2, 13))
    token = orjson.loads(orjson.dumps(made.token()))  # as watch stores it
    gen.write_session(tmp_path / "sessions", gen.COMPACTED, "Export", "/w",
                      gen.compacted_history())  # fmt: skip
    resumed = converter(path)
    resumed.restore(token)
    assert [(e["seq"], e["type"]) for e in fed(resumed)] == [(15, "message/assistant")]


def test_a_running_tool_waits_until_the_history_goes_on(tmp_path: Path) -> None:
    running = gen.main_history(running=True)
    path = gen.write_session(tmp_path / "sessions", gen.MAIN, "t", gen.CWD, running)
    assert [e["type"] for e in events(path)][-1] == "tool/call"  # its result waits
    # The CLI quit while it ran: the next turn leaves it as it was.
    path = gen.write_session(tmp_path / "sessions", gen.MAIN, "t", gen.CWD,
                             [*running, gen.user("Skip the tests")])  # fmt: skip
    got = events(path)
    assert [e["type"] for e in got][-2:] == ["tool/result", "message/user"]
    assert got[-2]["payload"]["status"] == "calling"


def test_detection_claims_only_session_files(tmp_path: Path) -> None:
    folder = gen.write(tmp_path)
    importer = ContinueImporter()
    assert [p.name for p in importer.files(tmp_path)] == sorted(
        [f"{gen.MAIN}.json", f"{gen.COMPACTED}.json"]
    )
    assert not importer.detect(folder / "sessions.json", [b"[\n", b'  {"sessionId": "x"\n'])


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path / "home")
    # The history has no times: events take the file's, which is now; --idle-seconds 0
    # ends the sessions all the same.
    async with imported(nc, nats_url, subjects, tmp_path, folder, "continue",
                        expected=EVENTS, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((MAIN, 14), (COMPACTED, 5)):
            await assert_events(nc, worker, session, session, count)
        lineage = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert "⟦Orders pagination⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=10)
        assert f"{MAIN} seq 9 · tool/call" in cites_of(result)
        context = await ask(nc, worker, "session_event_read", MAIN, session_id=MAIN, seq=3)
        assert "message/context" in context and "list_orders" in context


async def test_watch_follows_the_rewritten_file(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path)
    path = gen.write_session(folder, gen.MAIN, "Orders pagination", gen.CWD,
                             gen.main_history(running=True))  # fmt: skip

    def rest() -> None:
        gen.write_session(folder, gen.MAIN, "Orders pagination", gen.CWD, gen.main_history())

    # Main: start and 8 events up to the running command's call (its result waits); the
    # compacted session 4. Then the result, the user's text and the answer: 3 more.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "continue", path,
                       before=9, grow=rest, after=12)  # fmt: skip
