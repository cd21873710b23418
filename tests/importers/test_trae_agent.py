"""Trae Agent: converter checks over generated trajectories (a finished run, a failed model
call, a run cut off before its step was recorded), a later run written to the same file,
times read in the zone given, detection, an import read back with the five tools, and
``watch`` following a trajectory rewritten after each step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_mini_swe_agent
from tests.importers import gen_trae_agent as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import registry, trae_agent
from worker.importers.detect import detect, expand

FINISHED = "trae-trajectory_20261130_091500-20261130091500250000"
FAILED = "trae-trajectory_20261130_092500-20261130092500250000"
CUT_OFF = "trae-trajectory_20261130_093500-20261130093500250000"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("trae-agent", trae_agent.read_trajectory(path, ZoneInfo("UTC")))


def test_a_finished_run(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    got = events(root / "trajectory_20261130_091500.json")
    assert {e["session_id"] for e in got} == {FINISHED}
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "tool/call", "tool/call", "tool/result", "tool/result", "message/context",
        "message/assistant", "message/context", "message/assistant", "tool/call",
        "tool/result", "message/assistant", "message/context",
    ]  # fmt: skip
    start = got[0]["payload"]
    assert start["cwd"] == gen.CWD  # the project path of the first user message
    assert (start["model"], start["model_provider"]) == ("gpt-5", "openai")
    assert got[0]["time"] == "2026-11-30T09:15:00.250Z"
    assert got[1]["payload"]["text"] == gen.TASK  # the task, not Trae's template around it
    results = [e for e in got if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [4, 6, 7, 14]
    assert [r["payload"]["tool"] for r in results][:2] == ["bash", "str_replace_based_edit_tool"]
    # success false flags an error; its stderr is the output when it printed nothing else.
    assert results[0]["payload"] == {"tool": "bash", "output": "1 failed", "call_id": "call_1",
                                     "is_error": True, "source_type": "tool_result"}  # fmt: skip
    assert "is_error" not in results[1]["payload"] and results[2]["payload"]["is_error"]
    assert got[9]["payload"]["text"] == "The tool execution failed: try another path."
    # Trae's own answer to a reply without a call, before the model's next reply.
    assert got[11]["payload"]["text"] == gen.NUDGE and got[11]["time"] < got[12]["time"]
    end = got[-1]["payload"]
    assert end["exit_status"] == "completed" and end["text"].startswith("Fixed:")


def test_skips_are_counted_and_explained(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    reading = trae_agent.read_trajectory(root / "trajectory_20261130_091500.json")
    assert reading.skipped == {"message:system": 1, "step:lakeview_summary": 1,
                               "call:task_done": 1}  # fmt: skip
    reason = registry.get("trae-agent").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("message:developer") is None  # a role of a later version: drift


def test_a_failed_model_call(tmp_path: Path) -> None:
    """No interaction was recorded: the step's messages give the cwd, its error is said."""
    got = events(gen.write(tmp_path) / "trajectory_20261130_092500.json")
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/context", "message/context",
    ]  # fmt: skip
    assert got[0]["session_id"] == FAILED and got[0]["payload"]["cwd"] == gen.CWD
    assert got[2]["payload"] == {"text": "Error code: 503 - service unavailable",
                                 "is_error": True, "source_type": "step:error"}  # fmt: skip
    assert got[3]["payload"]["exit_status"] == "failed" and got[3]["payload"]["is_error"]


def test_a_call_waits_for_its_step(tmp_path: Path) -> None:
    """An interaction whose step is not recorded: its text now, its call counted; once the
    step is written, the call and its result follow what was published."""
    root = gen.write(tmp_path)
    path = root / "trajectory_20261130_093500.json"
    reading = trae_agent.read_trajectory(path)
    assert reading.skipped["call:unfinished"] == 1
    before = events(path)
    assert [e["type"] for e in before] == ["session/start", "message/user", "message/assistant"]
    gen.write(tmp_path, stepped=True)
    after = events(path)
    assert [e["event_id"] for e in after[:3]] == [e["event_id"] for e in before]
    assert [e["type"] for e in after[3:]] == ["tool/call", "tool/result"]
    assert after[4]["cites"] == [{"session_id": CUT_OFF, "seq": 4}]
    assert trae_agent.read_trajectory(path).skipped["call:unfinished"] == 0


def test_a_later_run_in_the_same_file_is_another_session(tmp_path: Path) -> None:
    """``trae-cli interactive`` writes each task over the same file."""
    path = gen.write(tmp_path) / "trajectory_20261130_091500.json"
    first = events(path)[0]["session_id"]
    later = gen.Run("Now the shipping costs.", start=3600)
    later.step(later.interaction("Done.", []), then=[{"role": "user", "content": gen.NUDGE}])
    path.write_text(json.dumps(later.data, indent=2))
    assert events(path)[0]["session_id"] not in (first, "")


def test_a_docker_run_names_no_host_folder(tmp_path: Path) -> None:
    """In docker mode the template names the container's folder, in a raw string: no cwd,
    and the template is still the task's, not a message of its own."""
    path = gen.write(tmp_path) / "trajectory_20261130_091500.json"
    run = json.loads(path.read_text())
    first = run["llm_interactions"][0]["input_messages"][1]
    first["content"] = first["content"].replace(f"[Project root path]:\n{gen.CWD}\n\n",
                                                r"[Project root path]:\workspace\n\n")  # fmt: skip
    path.write_text(json.dumps(run))
    got = events(path)
    assert got[0]["payload"]["cwd"] is None
    assert [e["payload"]["text"] for e in got if e["type"] == "message/user"] == [gen.TASK]
    assert gen.NUDGE in [e["payload"].get("text") for e in got]


def test_times_without_a_zone_are_read_in_the_zone_given(tmp_path: Path) -> None:
    path = gen.write(tmp_path) / "trajectory_20261130_091500.json"
    reading = trae_agent.read_trajectory(path, ZoneInfo("Europe/Berlin"))
    got = reading_events("trae-agent", reading)
    assert got[0]["time"] == "2026-11-30T08:15:00.250Z"


def test_detection_and_sources(tmp_path: Path) -> None:
    root = gen.write(tmp_path / "home")
    files = sorted(root.glob("*.json"))
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "trae-agent")
    assert sorted(expand([tmp_path / "home"], "trae-agent")) == files
    # mini-SWE-agent's trajectories are not Trae's, nor Trae's mini-SWE-agent's.
    mini = gen_mini_swe_agent.write(tmp_path / "mini")
    assert {detect(p) for p in mini.rglob("*.traj.json")} == {"mini-swe-agent"}
    assert list(expand([tmp_path / "mini"], "trae-agent")) == []
    assert registry.get("trae-agent").default_locations() == []  # where trae-cli ran
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"task": "x", "steps": []}))
    problems = trae_agent.read_trajectory(other).problems
    assert problems and "not a Trae Agent trajectory" in problems[0].message


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path)
    # Each session's events above, and its end (no titles).
    counts = {FINISHED: 18, FAILED: 5, CUT_OFF: 4}
    async with imported(nc, nats_url, subjects, tmp_path, root, "trae-agent",
                        idle="0") as (worker, _):  # fmt: skip
        for session, count in counts.items():
            await assert_events(nc, worker, FINISHED, session, count)
        result = await ask(nc, worker, "session_event_trace", FINISHED, session_id=FINISHED,
                           seq=5)  # fmt: skip
        assert f"{FINISHED} seq 4 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", FINISHED, session_id=FINISHED,
                          query="apply_codes")  # fmt: skip
        assert "apply_codes" in found


async def test_watch_follows_a_rewritten_trajectory(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    root = gen.write(tmp_path)
    path = root / "trajectory_20261130_093500.json"

    def rest() -> None:
        gen.write(tmp_path, stepped=True)

    # The cut-off run: start, task, text = 3; its step recorded, the call and result = 5.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "trae-agent", path,
                       before=3, grow=rest, after=5)  # fmt: skip
