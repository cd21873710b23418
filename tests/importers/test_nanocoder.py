"""Nanocoder: converter checks over generated sessions (reasoning, calls paired with their
results, failures and a cancelled command, Nanocoder's own nudges and a ``!command``'s
output typed for what they are, images and the interface's copies counted, a rename), a
compaction read fresh, read after the file it rewrote and after a restart, detection and
default folders, an import read back with the five tools, and ``watch`` following a session
through its compaction."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_nanocoder as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import nanocoder, registry
from worker.importers.continue_cli import ContinueConverter
from worker.importers.detect import detect, expand

FIX, RENAMED = f"nanocoder-{gen.FIX}", f"nanocoder-{gen.RENAMED}"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("nanocoder", nanocoder.read_session(path))


def converter(path: Path) -> ContinueConverter:
    return ContinueConverter(lambda: nanocoder.read_session(path), name="nanocoder")


def feed(converter: ContinueConverter) -> list[dict[str, Any]]:
    return [json.loads(out.body) for out in converter.feed(1, b"")]


def test_a_fix_with_its_calls_results_and_harness_text(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path) / f"{gen.FIX}.json")
    assert {e["session_id"] for e in got} == {FIX}
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "message/assistant",
        "tool/call", "tool/result", "message/context", "message/assistant", "tool/call",
        "tool/result", "message/assistant", "command/output", "message/user",
        "message/assistant",
    ]  # fmt: skip
    start = got[0]["payload"]
    assert start["cwd"] == gen.CWD and start["model"] == "qwen3-coder"
    assert got[2]["payload"]["thinking"] == "Start from the failing test."
    assert got[4]["payload"]["input"] == {"command": "pytest -q"}
    results = [e for e in got if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [5, 7, 10, 14]
    # A non-zero exit code and Nanocoder's refusal are failures; the rest are not.
    assert [bool(r["payload"].get("is_error")) for r in results] == [True, True, False, False]
    assert results[2]["payload"]["tool"] == "agent"
    assert got[11]["payload"]["text"] == "Please continue with the task."
    # No per-message times: the first takes createdAt, the rest lastAccessedAt.
    assert got[1]["time"] == "2026-11-30T09:15:00.000Z"
    assert got[-1]["time"] == "2026-11-30T09:18:00.000Z"


def test_skips_are_counted_with_their_reasons(tmp_path: Path) -> None:
    reading = nanocoder.read_session(gen.write(tmp_path) / f"{gen.FIX}.json")
    assert reading.skipped == {
        "message:images": 1,
        "tool:structuredContent": 1,
        "message:assistant:empty": 1,
    }
    reason = registry.get("nanocoder").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("message:developer") is None  # a role of a later version: drift


def test_a_renamed_session_and_a_cancelled_command(tmp_path: Path) -> None:
    path = gen.write(tmp_path) / f"{gen.RENAMED}.json"
    reading = nanocoder.read_session(path)
    assert reading.sessions[0].title == "Integration run"
    results = [e for e in reading_events("nanocoder", reading) if e["type"] == "tool/result"]
    # ACP's session/cancel, then the interface's Esc: both cut the command off.
    assert len(results) == 2
    assert all(r["payload"]["is_error"] and r["payload"]["interrupted"] for r in results)


def test_a_compacted_file_read_fresh_opens_with_its_compaction(tmp_path: Path) -> None:
    got = events(gen.write(tmp_path, compact=True) / f"{gen.FIX}.json")
    assert [e["type"] for e in got] == [
        "session/start", "compaction", "message/user", "message/assistant", "message/user",
        "message/assistant",
    ]  # fmt: skip
    assert got[1]["payload"]["summary"] == gen.SUMMARY
    assert "replaces" not in got[1]  # nothing before it is left in the file


def test_a_compaction_after_the_file_it_rewrote_goes_on_from_it(tmp_path: Path) -> None:
    """Read before and after the rewrite (``watch``): what was published stays, and the
    compaction replaces it; then the kept messages and the new turn."""
    path = gen.write(tmp_path) / f"{gen.FIX}.json"
    reader = converter(path)
    first = feed(reader)
    gen.write(tmp_path, compact=True)
    second = feed(reader)
    assert len(first) == 19
    assert [e["type"] for e in second] == [
        "compaction", "message/user", "message/assistant", "message/user", "message/assistant",
    ]  # fmt: skip
    compaction = second[0]
    assert compaction["seq"] == 20
    content = [e["seq"] for e in first if e["type"] != "session/start"]
    assert compaction["replaces"] == content
    assert compaction["time"] == "2026-11-30T09:21:30.000Z"  # the save that compacted
    # Read again unchanged: nothing more.
    assert feed(reader) == []


def test_a_restarted_watch_goes_on_after_a_compaction_it_published(tmp_path: Path) -> None:
    """The converter's token keeps how many items came before the rewritten file: a
    restart reads the file fresh, and the session's next turn takes the next seqs."""
    path = gen.write(tmp_path) / f"{gen.FIX}.json"
    reader = converter(path)
    feed(reader)
    gen.write(tmp_path, compact=True)
    feed(reader)
    restarted = converter(path)
    restarted.restore(json.loads(json.dumps(reader.token())))
    assert feed(restarted) == []
    doc = json.loads(path.read_text())
    doc["messages"].append({"role": "user", "content": "Thanks!"})
    path.write_text(json.dumps(doc, indent=2))
    [more] = feed(restarted)
    assert (more["seq"], more["type"], more["payload"]["text"]) == (25, "message/user", "Thanks!")


def test_a_title_autosave_took_from_the_summary_is_no_title(tmp_path: Path) -> None:
    path = tmp_path / f"{gen.FIX}.json"
    messages = [{"role": "user", "content": gen.SUMMARY}, {"role": "assistant", "content": "Ok."}]
    doc = gen.document(gen.FIX, messages, created="2026-11-30T09:15:00.000Z",
                       accessed="2026-11-30T09:16:00.000Z")  # fmt: skip
    assert doc["title"].startswith("<conversation-summary>")
    path.write_text(json.dumps(doc, indent=2))
    reading = nanocoder.read_session(path)
    assert reading.sessions[0].title is None
    assert reading.skipped == {"title:summary": 1}


def test_another_json_is_not_a_session(tmp_path: Path) -> None:
    folder = gen.write(tmp_path)
    assert detect(folder / "sessions.json") is None  # the index
    other = folder / "0b5e7c1a-2f3d-4e6a-9b8c-000000000000.json"
    other.write_text(json.dumps({"id": "x", "workingDirectory": "/", "messageCount": 0}))
    problems = nanocoder.read_session(other).problems
    assert problems and "not a Nanocoder session" in problems[0].message


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = gen.write(tmp_path / "home")
    files = sorted(p for p in folder.glob("*.json") if p.name != "sessions.json")
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "nanocoder")
    assert sorted(expand([tmp_path / "home"], "nanocoder")) == files
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("NANOCODER_DATA_DIR", raising=False)
    if sys.platform == "linux":
        assert registry.get("nanocoder").default_locations() == [folder]
    monkeypatch.setenv("NANOCODER_DATA_DIR", str(tmp_path / "data"))
    assert registry.get("nanocoder").default_locations() == [tmp_path / "data" / "sessions"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    folder = gen.write(tmp_path)
    # Each session's events, its title and its end.
    async with imported(nc, nats_url, subjects, tmp_path, folder, "nanocoder",
                        idle="0", expected=21 + 12) as (worker, _):  # fmt: skip
        await assert_events(nc, worker, FIX, FIX, 21)  # and its title and end
        await assert_events(nc, worker, FIX, RENAMED, 12)
        result = await ask(nc, worker, "session_event_trace", FIX, session_id=FIX, seq=6)
        assert f"{FIX} seq 5 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", FIX, session_id=FIX,
                          query="apply_codes")  # fmt: skip
        assert "apply_codes" in found
        trace = await ask(nc, worker, "session_trace", FIX, session_id=RENAMED)
        assert "⟦Integration run⟧" in trace


async def test_watch_follows_a_session_through_its_compaction(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    path = gen.write(tmp_path, upto=3) / f"{gen.FIX}.json"

    def rest() -> None:
        gen.write(tmp_path, compact=True)

    # The fix's first turn (start, prompt, thinking, text, call, result = 6), then its
    # compaction (5 more).
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "nanocoder", path,
                       before=6, grow=rest, after=11)  # fmt: skip
