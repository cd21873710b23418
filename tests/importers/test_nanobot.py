"""nanobot: converter checks over generated sessions (a chat with a failing command, a
missing file, a sub-agent's report, an image, a summary's hidden marker and a restored
interrupted call; a chat whose turn is in flight in a runtime checkpoint), ``/new`` starting
another session in the same file, detection and the default folder, an import read back with
the five tools, and ``watch`` following a turn from its checkpoint to the saved file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_nanobot as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import nanobot, registry
from worker.importers.base import Resumable
from worker.importers.detect import detect, expand
from worker.importers.nanobot import NanobotImporter
from worker.importers.plugin import ConvertOptions

DIRECT = "nanobot-Y2xpOmRpcmVjdA-20261130091501250000"
OTHER = "nanobot-dGVsZWdyYW06NDI0Mg-20261130091640250000"
CRON = "nanobot-Y3Jvbjo3ZjNlOWExMA-20261130092000250000"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("nanobot", nanobot.read_session(path, ZoneInfo("UTC")))


def space(root: Path) -> Path:
    return root / gen.SPACE_ID


def test_a_chat(tmp_path: Path) -> None:
    path = space(gen.write(tmp_path)) / gen.file_name(gen.DIRECT)
    got = events(path)
    assert {e["session_id"] for e in got} == {DIRECT}
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "tool/call", "tool/result", "message/assistant",
        "tool/call", "tool/result", "message/assistant", "message/context",
        "message/assistant", "message/assistant", "message/user", "message/assistant",
        "message/user", "message/assistant", "tool/call", "tool/result", "message/user",
        "message/assistant",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] == gen.WORKSPACE  # the .workspace marker beside it
    assert got[0]["time"] == "2026-11-30T09:15:01.250Z"
    results = [e["payload"] for e in got if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in got if r["type"] == "tool/result"] == [5, 7, 10, 20]
    # exec's exit code; a tool's "Error:"; the call the next run answered as interrupted.
    assert results[0]["exit_code"] == 1 and results[0]["is_error"] is True
    assert results[1]["is_error"] is True and "is_error" not in results[2]
    assert results[3]["interrupted"] is True and results[3]["is_error"] is True
    # The sub-agent's report is nanobot's, not the model's words; it cites the spawn call
    # that started the sub-agent (the task id its result names), its payload only text.
    assert got[12]["payload"]["text"].startswith("[Subagent 'coupons' completed]")
    assert got[9]["type"] == "tool/call" and got[9]["payload"]["tool"] == "spawn"
    assert got[12]["cites"] == [{"session_id": DIRECT, "seq": got[9]["seq"]}]
    assert set(got[12]["payload"]) == {"text", "source_type"}
    assert got[15]["payload"]["text"] == "Does the receipt look right?"  # its image counted


def test_a_scheduled_job_s_prompt_is_nanobot_s(tmp_path: Path) -> None:
    got = events(space(gen.write(tmp_path)) / gen.file_name(gen.CRON))
    assert got[0]["session_id"] == CRON
    assert [e["type"] for e in got] == ["session/start", "message/context", "message/assistant"]
    assert got[1]["payload"]["text"] == gen.CRON_PROMPT


def test_skips_are_counted_and_explained(tmp_path: Path) -> None:
    path = space(gen.write(tmp_path)) / gen.file_name(gen.DIRECT)
    reading = nanobot.read_session(path)
    assert reading.skipped == {"record:provider_state": 1, "metadata:_last_summary": 1,
                               "user:image_url": 1, "message:hidden": 1}  # fmt: skip
    reason = registry.get("nanobot").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("message:developer") is None  # a role of a later version: drift


def test_the_title_comes_from_the_metadata(tmp_path: Path) -> None:
    path = space(gen.write(tmp_path)) / gen.file_name(gen.DIRECT)
    assert [s.title for s in nanobot.read_session(path).sessions] == [gen.TITLE]


def test_a_turn_in_flight_then_saved(tmp_path: Path) -> None:
    """The checkpoint's text and thinking now, its calls counted; once the turn is saved
    (the checkpoint gone) the calls and results follow what was published."""
    path = space(gen.write(tmp_path)) / gen.file_name(gen.OTHER)
    reading = nanobot.read_session(path)
    assert reading.skipped["checkpoint:tool_call"] == 2
    assert reading.skipped["checkpoint:tool_result"] == 1
    before = events(path)
    assert [e["type"] for e in before] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
    ]  # fmt: skip
    gen.write(tmp_path, saved=True)
    after = events(path)
    assert [e["event_id"] for e in after[:4]] == [e["event_id"] for e in before]
    assert [e["type"] for e in after[4:]] == [
        "tool/call", "tool/call", "tool/result", "tool/result", "message/assistant",
    ]  # fmt: skip
    assert {e["session_id"] for e in after} == {OTHER}


def test_a_checkpoint_older_than_its_file_is_not_read(tmp_path: Path) -> None:
    """nanobot drops it: the file was saved after it."""
    path = space(gen.write(tmp_path)) / gen.file_name(gen.OTHER)
    stamp = path.stat().st_mtime + 5
    os.utime(path, (stamp, stamp))
    assert [e["type"] for e in events(path)] == ["session/start", "message/user"]


def test_new_starts_another_session_in_the_same_file(tmp_path: Path) -> None:
    """``/new`` empties the chat's messages: what follows is another conversation."""
    path = space(gen.write(tmp_path)) / gen.file_name(gen.DIRECT)
    gen.write_file(path, gen.DIRECT, [gen.user("Something else now.", 500)])
    got = events(path)
    assert got[0]["session_id"] not in (DIRECT, "")
    assert [e["type"] for e in got] == ["session/start", "message/user"]


def test_a_file_of_another_shape_is_reported(tmp_path: Path) -> None:
    other = tmp_path / "notes.jsonl"
    other.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    assert detect(other) is None
    problems = nanobot.read_session(other).problems
    assert problems and "not a nanobot session" in problems[0].message


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gen.write(tmp_path / "home")
    files = sorted(root.rglob("*.jsonl"))
    assert len(files) == 3
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "nanobot")
    assert sorted(expand([tmp_path / "home"], "nanobot")) == files
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    legacy = tmp_path / "home" / ".nanobot" / "workspace" / "sessions"
    assert registry.get("nanobot").default_locations() == [root, legacy]


def test_an_older_release_s_session_in_its_workspace(tmp_path: Path) -> None:
    """``<workspace>/sessions/<key>.jsonl``, no marker: the workspace is the folder above;
    the global folder's names none."""
    old = tmp_path / "shop" / "sessions" / "cli_direct.jsonl"
    old.parent.mkdir(parents=True)
    gen.write_file(old, gen.DIRECT, gen.direct_messages()[:2])
    assert detect(old) == "nanobot"
    assert events(old)[0]["payload"]["cwd"] == str(tmp_path / "shop")
    global_ = tmp_path / ".nanobot" / "sessions" / "cli_direct.jsonl"
    global_.parent.mkdir(parents=True)
    global_.write_bytes(old.read_bytes())
    assert events(global_)[0]["payload"]["cwd"] is None


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path)
    # Each session's events above and its end; the first chat's title too.
    counts = {DIRECT: 25, OTHER: 5, CRON: 4}
    async with imported(nc, nats_url, subjects, tmp_path, root, "nanobot", idle="0",
                        expected=sum(counts.values())) as (worker, _):  # fmt: skip
        for session, count in counts.items():
            await assert_events(nc, worker, DIRECT, session, count)
        result = await ask(nc, worker, "session_event_trace", DIRECT, session_id=DIRECT, seq=6)
        assert f"{DIRECT} seq 5 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", DIRECT, session_id=DIRECT,
                          query="parse_codes")  # fmt: skip
        assert "parse_codes" in found


async def test_watch_follows_a_turn_to_its_save(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    root = gen.write(tmp_path)
    path = space(root) / gen.file_name(gen.OTHER)

    def rest() -> None:
        gen.write(tmp_path, saved=True)

    # The chat in flight: start, prompt, thinking, text = 4; saved: 2 calls, 2 results, the
    # answer = 9.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "nanobot", path,
                       before=4, grow=rest, after=9)  # fmt: skip


def test_a_report_cites_its_spawn_call_after_a_restart(tmp_path: Path) -> None:
    """``watch`` restarted between the spawn call's result and the sub-agent's report: the
    converter's token keeps the answered call, so the report still cites it."""
    path = space(gen.write(tmp_path)) / gen.file_name(gen.DIRECT)
    lines = path.read_bytes().splitlines(keepends=True)
    report = next(n for n, line in enumerate(lines) if b"subagent_result" in line)
    whole = path.read_bytes()
    path.write_bytes(b"".join(lines[:report]))
    importer = NanobotImporter()
    first = importer.converter(path, ConvertOptions())
    before = [orjson.loads(o.body) for o in first.feed(1, b"")]
    assert isinstance(first, Resumable)
    token = orjson.loads(orjson.dumps(first.token()))  # stored as JSON in the bucket
    path.write_bytes(whole)
    again = importer.converter(path, ConvertOptions())
    assert isinstance(again, Resumable)
    again.restore(token)
    after = [orjson.loads(o.body) for o in again.feed(2, b"")]
    (spawn,) = [
        e for e in before if e["payload"].get("tool") == "spawn" and e["type"] == "tool/call"
    ]
    (told,) = [e for e in after if e["payload"].get("source_type") == "assistant:subagent_result"]
    assert told["cites"] == [{"session_id": DIRECT, "seq": spawn["seq"]}]
