"""Auggie: a session document converted (request and response nodes, a tool error, the
history summary as a compaction, an exchange still running held back, a sub-agent naming
its parent), detection (backups are not sessions), an import read back with the five
tools, and ``watch`` following a session file rewritten whole."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_auggie as gen
from tests.importers._agent_e2e import assert_events, by_session, imported
from tests.importers._sources import cites_of, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import registry
from worker.importers.detect import detect, expand
from worker.importers.pipeline import convert_file
from worker.importers.plugin import ConvertOptions

FMT = "auggie"
MAIN, CHILD = f"auggie-{gen.MAIN}", f"auggie-{gen.CHILD}"


def test_exchanges_become_events(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    main = sessions[MAIN]
    assert main[0]["payload"]["cwd"] == gen.CWD
    assert [e["type"] for e in main[1:6]] == [
        "message/user", "message/assistant", "message/assistant", "tool/call", "tool/result",
    ]  # fmt: skip
    assert main[2]["payload"]["thinking"] == "Timing, likely."
    assert main[3]["payload"]["text"] == "Reading the test."  # the streamed pieces, whole
    assert main[4]["payload"]["arguments"] == {"path": "tests/test_login.py"}
    error = main[7]
    assert error["payload"]["is_error"] is True and error["cites"] == [{"session_id": MAIN,
                                                                        "seq": 7}]  # fmt: skip
    compaction = main[11]
    assert compaction["type"] == "compaction" and compaction["replaces"] == list(range(2, 12))
    assert compaction["payload"]["summary"] == "The login test waits on a fixed sleep."
    assert [e["payload"].get("text") for e in main[12:]] == [
        "add a regression test", "Added test_login_waits_for_ready.",
    ]  # fmt: skip  # the seventh exchange is still running
    assert tally.skipped == {"request_node:4": 2, "response_node:9": 1, "exchange:incomplete": 1}
    child = sessions[CHILD][0]
    assert child["payload"]["parent_session_id"] == MAIN and child["payload"]["cwd"] == gen.CWD


def test_the_title_comes_with_the_end(tmp_path: Path) -> None:
    path = gen.write(tmp_path) / f"{gen.MAIN}.json"
    importer = registry.get(FMT)
    converter = importer.converter(path, ConvertOptions())
    for record in importer.records(path):
        converter.feed(record.number, record.data)
    ended = converter.idle()
    assert [e.kind for e in ended] == ["session/title", "session/end"]
    assert gen.TITLE.encode() in ended[0].body  # the user's customTitle wins


def test_detection_and_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = gen.write(tmp_path / "home")
    files = list(expand([folder], FMT))
    assert [p.name for p in files] == [f"{gen.MAIN}.json", f"{gen.CHILD}.json"]  # no backup
    assert {detect(p) for p in files} == {FMT}
    assert detect(folder / f"{gen.MAIN}-backup1.json") is None
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert registry.get(FMT).default_locations() == [folder]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT, expected=16 + 4,
                        idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, MAIN, MAIN, 16)
        await assert_events(nc, worker, MAIN, CHILD, 4)
        trace = await ask(nc, worker, "session_trace", MAIN, session_id=MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace and CHILD in trace
        result = await ask(nc, worker, "session_event_trace", MAIN, session_id=MAIN, seq=8)
        assert f"{MAIN} seq 7 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_search", MAIN, query="regression test")
        assert MAIN in found


async def test_watch_follows_a_rewritten_session(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path, upto=4)

    def rest() -> None:
        gen.write(tmp_path)  # Auggie rewrites the whole file after each exchange

    # Four exchanges: start and 10 events; then the summary, a user turn and an answer
    # (the running seventh exchange waits).
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", FMT,
                       folder / f"{gen.MAIN}.json", before=11, grow=rest, after=14)  # fmt: skip


def test_only_a_running_last_exchange_waits(tmp_path: Path) -> None:
    """``watch`` holds back the last exchange while it runs; an exchange left incomplete
    before others (a cancelled turn) does not stop the ones after it."""
    folder = gen.write(tmp_path)
    path = folder / f"{gen.MAIN}.json"
    importer = registry.get(FMT)
    following = list(importer.records(path, complete=False))
    assert len(following) == 1 + 6  # the header and six exchanges; the seventh runs
    history = gen.main_history()
    history[1]["completed"] = False  # cancelled, then the session went on
    path.write_text(json.dumps(gen.document(gen.MAIN, history)))
    converter = importer.converter(path, ConvertOptions())
    records = list(importer.records(path, complete=False))
    assert len(records) == 1 + 6
    for record in records:
        converter.feed(record.number, record.data)
    assert converter.tally.skipped["exchange:incomplete"] == 1


def test_an_image_a_tool_returned_is_counted(tmp_path: Path) -> None:
    """Auggie 0.36.0's writer keeps a tool result's text in ``content`` and, when the tool
    returned an image, ``content_nodes`` beside it (text pieces, type 1; images, type 2):
    the image was dropped uncounted."""
    history = gen.main_history()
    results = [
        node["tool_result_node"]
        for state in history
        for node in state["exchange"]["request_nodes"]
        if node.get("type") == 1
    ]
    image = {"image_data": "iVBORw0KGgo=", "format": 1}
    results[0]["content_nodes"] = [
        {"type": 1, "text_content": results[0]["content"]},
        {"type": 2, "image_content": image},
    ]
    path = tmp_path / "sessions" / f"{gen.MAIN}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(gen.document(gen.MAIN, history)))
    events, tally = convert_file(FMT, path)
    outputs = [orjson.loads(e.body)["payload"].get("output") for e in events]
    assert results[0]["content"] in outputs
    assert tally.skipped["tool_result:image"] == 1
