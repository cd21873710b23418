"""Factory Droid sessions: the converter over a generated history (a session and the
sub-agent session it called), a first line rewritten in place, then the real ``import``
and ``watch`` into a real nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_droid as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers.detect import detect, expand
from worker.importers.droid import DroidImporter
from worker.importers.plugin import ConvertOptions

FMT = "droid"


def test_messages_map_and_the_called_session_is_a_child(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main = sessions[gen.MAIN]
    assert [e["type"] for e in main] == [
        "session/start", "session/title", "message/user", "message/assistant", "tool/call",
        "tool/result", "message/assistant", "message/context",
    ]  # fmt: skip
    assert main[0]["time"] == "2025-10-01T15:01:00.000Z"  # the first message's
    assert main[0]["payload"]["cwd"] == gen.CWD and main[1]["payload"]["title"] == gen.TITLE
    assert main[5]["cites"] == [{"session_id": gen.MAIN, "seq": 5}]
    task = sessions[gen.TASK]
    assert task[0]["payload"]["parent_session_id"] == gen.MAIN
    assert "session/title" not in [e["type"] for e in task]  # "New Session" is no title
    assert tally.skipped == gen.SKIPPED


def test_a_rewritten_first_line_keeps_the_positions_and_retitles(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    path = next(p for p in expand([root], FMT) if p.stem == gen.MAIN)
    assert detect(path) == FMT
    importer = DroidImporter()
    converter = importer.converter(path, ConvertOptions())
    read = list(importer.records(path, complete=False))
    for record in read:
        converter.feed(record.number, record.data)
    # Droid renames the session: the first line grows; then a message is appended.
    renamed = gen.header(gen.MAIN, gen.RENAMED, manual=True)
    body = path.read_bytes().split(b"\n", 1)[1]
    path.write_bytes(orjson.dumps(renamed) + b"\n" + body + gen.lines(
        [{"type": "message", "id": "m-006", "timestamp": "2025-10-01T15:06:00.000Z",
          "message": {"role": "user", "content": "thanks"}}]))  # fmt: skip
    new = list(importer.records(path, after=read[-1].position, number=read[-1].number))
    assert [orjson.loads(r.data)["id"] for r in new] == ["m-006"]
    titled = [orjson.loads(o.body) for o in converter.finish()]
    assert [(e["type"], e["payload"]["title"]) for e in titled] == [("session/title", gen.RENAMED)]


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "record:todo_state 1" in said
        await assert_events(nc, worker, gen.TASK, gen.MAIN, gen.EVENTS[gen.MAIN] + 1)
        trace = await ask(nc, worker, "session_trace", gen.TASK, session_id=gen.MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace and gen.TASK in trace.split("Descendants")[1]
        found = await ask(nc, worker, "session_search", gen.TASK, query="double shot basket")
        assert gen.MAIN in found
        result = await ask(nc, worker, "session_event_trace", gen.TASK, session_id=gen.MAIN, seq=6)
        assert f"{gen.MAIN} seq 5 · tool/call" in result.split("Cites (")[1]


async def test_watch_follows_a_session_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = tmp_path / "sessions" / gen.SLUG
    folder.mkdir(parents=True)
    lines = [gen.lines([r]) for r in [gen.header(gen.MAIN, gen.TITLE), *gen.main_messages()]]
    file = folder / f"{gen.MAIN}.jsonl"
    file.write_bytes(lines[0] + lines[1] + lines[2][:30])  # start, first prompt; half a line
    total = gen.EVENTS[gen.MAIN]
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", tmp_path / "sessions",
                             FMT, file, lines[2][30:] + b"".join(lines[3:]), before=3,
                             after=total)  # fmt: skip
    assert f"published {total} events (0 already in the stream)" in said
