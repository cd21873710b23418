"""Open Interpreter: converter checks over generated conversations (code blocks and the
computer's output, a declined block, images), detection and default folders, an import read
back with the five tools, and ``watch`` following a conversation rewritten after a turn."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_open_interpreter as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import open_interpreter, registry
from worker.importers.detect import detect, expand

FIX, PLOT = f"oi-{gen.FIX}", f"oi-{gen.PLOT}"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("open-interpreter", open_interpreter.read_conversation(path))


def test_code_blocks_and_the_computer_s_output(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path) / f"{gen.FIX}.json")
    assert {e["session_id"] for e in got} == {FIX}
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "tool/call", "tool/result", "message/assistant", "tool/call", "tool/result",
        "message/user", "message/assistant",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] is None  # Open Interpreter records none
    assert got[3]["payload"]["input"] == {"language": "shell", "code": "pytest -q"}
    results = [e for e in got if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [4, 6, 9]
    # The computer's output chunks of one block, joined; a block nothing answered (the user
    # declined it) did not run.
    assert results[1]["payload"]["output"] == "def apply_codes(cart):\n    ...\n"
    assert results[2]["payload"]["not_run"] is True and results[2]["payload"]["is_error"]
    # No times in the file: every event takes its modification time.
    assert len({e["time"] for e in got}) == 1 and got[0]["time"]


def test_images_are_counted(tmp_path: Path) -> None:
    reading = open_interpreter.read_conversation(gen.write(tmp_path) / f"{gen.PLOT}.json")
    assert reading.skipped == {"user:image": 1, "computer:image": 1}
    got = reading_events("open-interpreter", reading)
    assert [e["type"] for e in got[1:]] == [
        "message/user", "tool/call", "tool/result", "message/assistant"
    ]  # fmt: skip
    assert got[3]["payload"] == {"output": "", "tool": "execute", "source_type": "computer"}
    reason = registry.get("open-interpreter").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("computer:hologram") is None  # a type of a later version: drift


def test_another_json_list_is_not_a_conversation(tmp_path: Path) -> None:
    folder = tmp_path / "conversations"
    folder.mkdir()
    other = folder / "notes.json"
    other.write_text(json.dumps([{"title": "a note"}]))
    assert detect(other) is None
    problems = open_interpreter.read_conversation(other).problems
    assert problems and "not an Open Interpreter conversation" in problems[0].message


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = gen.write(tmp_path / "home")
    files = sorted(folder.glob("*.json"))
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "open-interpreter")
    assert sorted(expand([tmp_path / "home"], "open-interpreter")) == files
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    if sys.platform == "linux":
        assert registry.get("open-interpreter").default_locations() == [folder]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path)
    async with imported(nc, nats_url, subjects, tmp_path, folder, "open-interpreter",
                        idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, FIX, FIX, 13)  # and its end
        await assert_events(nc, worker, PLOT, PLOT, 6)
        result = await ask(nc, worker, "session_event_trace", FIX, session_id=FIX, seq=7)
        assert f"{FIX} seq 6 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", FIX, session_id=FIX,
                          query="apply_codes")  # fmt: skip
        assert "apply_codes" in found


async def test_watch_follows_a_rewritten_conversation(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    path = gen.write(tmp_path, upto=4) / f"{gen.FIX}.json"

    def rest() -> None:
        gen.write(tmp_path)

    # The first turn written (start, prompt, text, call, result = 5), then the rest (7 more).
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "open-interpreter", path,
                       before=5, grow=rest, after=12)  # fmt: skip
