"""Code Puppy: converter checks over generated sessions (calls and returns, a failed
command, a retry, an image, a sub-agent citing its ``invoke_agent`` call, a compacted
session), a compaction seen after its session was published, detection and default
folders, an import read back with the tools, and ``watch`` following a rewritten session."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_code_puppy as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import code_puppy, registry
from worker.importers.base import SpawnLinks, Tally
from worker.importers.detect import detect, expand
from worker.importers.pipeline import convert_file
from worker.importers.plugin import ConvertOptions
from worker.importers.skips import WRITER_KINDS

FIX, REVIEW, AGENT = f"puppy-{gen.FIX}", f"puppy-{gen.REVIEW}", f"puppy-agent-{gen.AGENT}"


def converted(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Every session's events, the files read in ``import``'s order with one links table."""
    links, sessions = SpawnLinks(), dict[str, list[dict[str, Any]]]()
    for path in expand([root], "code-puppy"):
        outs, _ = convert_file("code-puppy", path, links=links)
        for out in outs:
            event = orjson.loads(out.body)
            sessions.setdefault(event["session_id"], []).append(event)
    return sessions


def test_calls_returns_errors_and_a_retry(tmp_path: Path) -> None:
    got = converted(gen.write(tmp_path))[FIX]
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/call", "tool/result", "tool/result",
        "tool/call", "tool/result", "message/assistant", "message/user", "message/assistant",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] == gen.CWD  # the meta file's scope_key
    assert got[2]["payload"]["thinking"] == "Run the tests first."
    assert got[4]["payload"]["input"] == {"command": "pytest -q"}  # arguments parsed
    failed = got[5]["payload"]
    assert failed["is_error"] and failed["exit_code"] == 1
    assert failed["output"].startswith("1 failed, 3 passed")  # the command's own output
    # Two calls in one response, answered in one request: each result cites its own.
    assert [(e["payload"]["tool"], e["cites"][0]["seq"]) for e in got[8:10]] == [
        ("read_file", 7), ("invoke_agent", 8),
    ]  # fmt: skip
    assert got[8]["payload"]["output"] == "def apply_codes(cart):\n    ...\n"
    retry = got[11]["payload"]  # the arguments failed validation: the model is told
    assert retry["is_error"] and "Field required" in retry["output"]
    assert got[13]["payload"]["text"] == "What is in this screenshot?"
    assert got[1]["time"] == "2026-11-30T09:15:01.000Z"


def test_skips_are_counted_and_explained(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    reading = code_puppy.read_session(root / "autosaves" / f"{gen.FIX}.json")
    assert reading.skipped == {"request:instructions": 5, "user-prompt:binary": 1}
    reason = registry.get("code-puppy").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("request-part:hologram") is None  # a later pydantic-ai's part: drift


def test_a_sub_agent_starts_citing_its_invoke_agent_call(tmp_path: Path) -> None:
    sessions = converted(gen.write(tmp_path))
    start = sessions[AGENT][0]
    assert start["payload"]["parent_session_id"] == FIX
    assert start["cites"] == [{"session_id": FIX, "seq": 8}]
    assert start["payload"]["cwd"] == gen.CWD  # its parent's: the .txt names none
    assert start["payload"]["agent_name"] == "qa-kitten"
    assert [e["type"] for e in sessions[AGENT][1:]] == [
        "message/user", "tool/call", "tool/result", "message/assistant", "message/context",
        "message/assistant",
    ]  # fmt: skip
    assert sessions[AGENT][5]["payload"]["retry"] is True  # asked again: not a tool's
    # Two answers written at the same time are two records, each its own name.
    reading = code_puppy.read_session(
        tmp_path / ".code_puppy" / "subagent_sessions" / f"{gen.AGENT}.json"
    )
    refs = [item.ref for item in reading.sessions[0].items]
    assert len(set(refs)) == len(refs)


def test_a_sub_agent_read_alone_has_no_parent(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    outs, _ = convert_file("code-puppy", root / "subagent_sessions" / f"{gen.AGENT}.json")
    start = orjson.loads(outs[0].body)
    assert start["payload"]["parent_session_id"] is None and not start.get("cites")


def test_a_compacted_session_read_whole_opens_with_its_summary(tmp_path: Path) -> None:
    got = converted(gen.write(tmp_path))[REVIEW]
    assert [e["type"] for e in got] == [
        "session/start", "message/context", "message/user", "message/user", "message/assistant"
    ]  # fmt: skip
    # What it summarised is not in the file: nothing to replace, the summary stands as context.
    assert got[1]["payload"] == {"text": gen.SUMMARY, "compacted": True,
                                 "source_type": "request:system-prompt"}  # fmt: skip


def test_a_compaction_after_publishing_replaces_and_goes_on(tmp_path: Path) -> None:
    path = gen.write_review(tmp_path, compacted=False)
    converter = registry.get("code-puppy").converter(path, code_puppy_options())
    first = [orjson.loads(out.body) for out in converter.feed(1, b"")]
    assert [e["type"] for e in first] == [
        "session/start", "message/user", "message/assistant", "message/user", "message/assistant"
    ]  # fmt: skip
    gen.write_review(tmp_path)  # compacted: the summary, kept messages, a new answer
    then = [orjson.loads(out.body) for out in converter.feed(2, b"")]
    assert [(e["seq"], e["type"]) for e in then] == [(6, "compaction"), (7, "message/assistant")]
    assert then[0]["payload"]["summary"] == gen.SUMMARY
    # The answers it dropped; the prompts it kept stay.
    assert then[0]["replaces"] == [3, 5]
    assert then[1]["payload"]["text"] == "It looks right, and the summary agrees."
    assert converter.feed(3, b"") == []  # read again: nothing new
    # A restart from the stored token goes on where it stood.
    token = json.loads(json.dumps(converter.token()))  # type: ignore[attr-defined]
    again = registry.get("code-puppy").converter(path, code_puppy_options())
    again.restore(token)  # type: ignore[attr-defined]
    assert again.feed(4, b"") == []


def test_a_compaction_after_a_restart_replaces_what_precedes_it(tmp_path: Path) -> None:
    path = gen.write_review(tmp_path, compacted=False)
    converter = registry.get("code-puppy").converter(path, code_puppy_options())
    converter.feed(1, b"")
    token = json.loads(json.dumps(converter.token()))  # type: ignore[attr-defined]
    again = registry.get("code-puppy").converter(path, code_puppy_options())
    again.restore(token)  # type: ignore[attr-defined]
    gen.write_review(tmp_path)
    then = [orjson.loads(out.body) for out in again.feed(2, b"")]
    # Which messages the rewrite dropped is not kept across a restart: all before it.
    assert [(e["seq"], e["type"], e.get("replaces")) for e in then] == [
        (6, "compaction", [2, 3, 4, 5]), (7, "message/assistant", None),
    ]  # fmt: skip


def code_puppy_options() -> ConvertOptions:
    return ConvertOptions(links=SpawnLinks())


def test_another_json_is_not_a_session(tmp_path: Path) -> None:
    folder = tmp_path / "autosaves"
    folder.mkdir()
    other = folder / "notes.json"
    other.write_text(json.dumps({"title": "a note"}, indent=2))
    assert detect(other) is None
    problems = code_puppy.read_session(other).problems
    assert problems and "not a Code Puppy session" in problems[0].message


def test_detection_sources_and_default_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gen.write(tmp_path / "home")
    sessions = sorted(root.rglob("*.json"))
    files = [p for p in sessions if not p.stem.endswith("_meta")]
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "code-puppy")
    assert detect(root / "autosaves" / f"{gen.FIX}_meta.json") is None
    assert list(expand([root], "code-puppy")) == sorted(files)  # autosaves first
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    importer = registry.get("code-puppy")
    assert importer.default_locations() == [root / "autosaves", root / "subagent_sessions"]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert importer.default_locations()[0] == tmp_path / "cache" / "code_puppy" / "autosaves"


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path)
    # 27 events, the named session's title and the three ends.
    async with imported(nc, nats_url, subjects, tmp_path, root, "code-puppy",
                        expected=31, idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, FIX, FIX, 16)  # and its end
        await assert_events(nc, worker, REVIEW, REVIEW, 7)  # its title and end
        result = await ask(nc, worker, "session_event_trace", FIX, session_id=FIX, seq=10)
        assert f"{FIX} seq 8 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", FIX, session_id=FIX,
                          query="apply_codes")  # fmt: skip
        assert "apply_codes" in found


async def test_watch_follows_a_session_compacted_after_a_turn(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    path = gen.write_review(tmp_path, compacted=False)

    def compact() -> None:
        gen.write_review(tmp_path)

    # The session before (start and four messages), then the compaction and the new answer.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "code-puppy", path,
                       before=5, grow=compact, after=7)  # fmt: skip


def test_every_kind_its_writer_writes_is_imported_or_skipped(tmp_path: Path) -> None:
    folder = gen.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["code-puppy"]
    tally = Tally()
    events: list[dict[str, Any]] = []
    for path in expand([folder], "code-puppy"):
        outs, file_tally = convert_file("code-puppy", path, links=SpawnLinks())
        file_tally.explain(registry.get("code-puppy").skip_reason)
        tally.merge(file_tally)
        events += [orjson.loads(out.body) for out in outs]
    assert tally.unknown == Counter()
    assert set(tally.skipped) == set(kinds.skipped)  # each counted under its own key
    by_type = Counter(e["type"] for e in events if e["session_id"] == f"puppy-{gen.EVERY}")
    # text and thinking, the built-in call and return, the call and its return, the
    # retried call and its retry, the provider's readable compaction.
    assert by_type == Counter({"session/start": 1, "message/user": 1, "message/assistant": 3,
                               "tool/call": 3, "tool/result": 3, "compaction": 1})  # fmt: skip
    server = [e for e in events if e["payload"].get("server_executed")]
    assert [e["payload"]["tool"] for e in server] == ["web_search"]
