"""mini-SWE-agent: converter checks over generated trajectories (2.x's tool calls, Responses
replies and text-based actions, the interactive agent's messages, a 1.x batch run), a later
run written to the same file, detection and default folders, an import read back with the
five tools, and ``watch`` following a trajectory rewritten after each step."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_mini_swe_agent as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import mini_swe_agent, registry
from worker.importers.detect import detect, expand

RUN = "mini-last_mini_run-1796000002250"  # the tool-call run: its name and first step's time
RESPONSES = "mini-responses-1796000102250"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("mini-swe-agent", mini_swe_agent.read_trajectory(path))


def test_a_tool_call_run_of_the_interactive_agent(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    got = events(root / "last_mini_run.traj.json")
    assert {e["session_id"] for e in got} == {RUN}
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "message/context", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result", "message/user", "command",
        "command/output", "message/assistant", "tool/call", "tool/result", "message/context",
    ]  # fmt: skip
    start = got[0]["payload"]
    assert start["cwd"] is None and start["version"] == "2.4.6"  # a local run records none
    assert got[0]["time"] == "2026-11-30T00:53:22.250Z"  # the first step's
    assert got[1]["payload"]["text"] == f"Please solve this issue: {gen.TASK}"
    assert got[2]["payload"]["thinking"] == "Start from the tests."
    assert got[4]["payload"]["input"] == {"command": "pytest -q"}
    results = [e for e in got if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [5, 8, 11, 17]
    # A non-zero exit status is an error; a command the interrupt stopped is marked; the
    # command that submitted the run is not a failure.
    assert results[0]["payload"]["is_error"] is True and results[0]["payload"]["output"] == (
        "1 failed"
    )
    assert "is_error" not in results[1]["payload"]
    assert results[2]["payload"]["interrupted"] is True and results[2]["payload"]["is_error"]
    assert results[3]["payload"]["submitted"] is True and "is_error" not in results[3]["payload"]
    assert got[6]["payload"]["interrupt_type"] == "FormatError"
    assert got[12]["payload"]["text"] == "Interrupted by user: skip the slow suite"
    assert got[14]["payload"]["text"] == "modified: pricing.py"  # the user's command's output
    assert got[-1]["payload"]["exit_status"] == "Submitted"


def test_responses_and_text_based_runs(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    got = events(root / "responses.traj.json")
    assert got[0]["session_id"] == RESPONSES and got[0]["payload"]["cwd"] == gen.CWD
    assert [e["type"] for e in got[1:]] == [
        "message/user", "message/assistant", "message/assistant", "tool/call", "tool/result",
        "message/context",
    ]  # fmt: skip
    assert got[2]["payload"]["thinking"] == "Look at cart.py."
    assert got[5]["cites"] == [{"session_id": RESPONSES, "seq": 5}]
    assert got[5]["payload"]["output"] == "class Cart: ..."  # the command's own output
    text = events(root / "textbased.traj.json")
    call, result = text[3], text[4]
    assert call["payload"]["input"] == {"command": "ls tests"}
    assert result["cites"][0]["seq"] == call["seq"] and result["payload"]["output"] == (
        "test_cart.py\n"
    )


def test_a_1x_batch_run(tmp_path: Path) -> None:
    """1.x keeps no ``extra``: the one bash fence of an answer is its call (two are a format
    error: nothing ran), ``<returncode>`` observations and a timeout answer them, and the
    last message, the submission, answers the command that submitted it."""
    root = gen.write(tmp_path)
    got = events(root / "batch" / "shop__cart-1" / "shop__cart-1.traj.json")
    assert [e["type"] for e in got[1:]] == [
        "message/user", "message/assistant", "tool/call", "tool/result", "message/assistant",
        "message/context", "message/assistant", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result",
    ]  # fmt: skip
    assert got[4]["payload"]["output"] == "3: total\n" and got[4]["payload"]["returncode"] == 0
    assert got[9]["payload"]["is_error"] is True  # timed out
    assert got[12]["payload"]["submitted"] is True and got[12]["cites"][0]["seq"] == 12
    assert got[0]["session_id"].startswith("mini-shop__cart-1-")


def test_a_later_run_in_the_same_file_is_another_session(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    path = root / "last_mini_run.traj.json"
    first = events(path)[0]["session_id"]
    run = gen.toolcall_run()
    for message in run["messages"]:
        if "timestamp" in message.get("extra", {}):
            message["extra"]["timestamp"] += 3600
    path.write_text(json.dumps(run))
    assert events(path)[0]["session_id"] not in (first, "")


def test_skips_are_counted_and_explained(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    reading = mini_swe_agent.read_trajectory(root / "last_mini_run.traj.json")
    assert reading.skipped == {"message:system": 1, "content:image_url": 1}
    reason = registry.get("mini-swe-agent").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("message:critic") is None  # a role of a later version: drift


def test_another_agent_s_trajectory_is_not_mini_s(tmp_path: Path) -> None:
    """SWE-agent's ``.traj`` files, and a JSON of another shape under the name, are not
    trajectories of this format: not detected, and reported when named."""
    other = tmp_path / "run.traj.json"
    other.write_text(json.dumps({"trajectory": [], "history": [], "info": {}}, indent=2))
    assert detect(other) is None
    problems = mini_swe_agent.read_trajectory(other).problems
    assert problems and "not a mini-SWE-agent trajectory" in problems[0].message


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gen.write(tmp_path / "home")
    files = sorted(root.rglob("*.traj.json"))
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "mini-swe-agent")
    assert sorted(expand([tmp_path / "home"], "mini-swe-agent")) == files
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MSWEA_GLOBAL_CONFIG_DIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    if sys.platform == "linux":
        assert registry.get("mini-swe-agent").default_locations() == [root]
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "moved"))
    assert registry.get("mini-swe-agent").default_locations() == [tmp_path / "moved"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path, v1=False)
    # Each session's events above, and its end (no titles).
    counts = {RUN: 20, RESPONSES: 8}
    async with imported(nc, nats_url, subjects, tmp_path, root, "mini-swe-agent",
                        idle="0") as (worker, _):  # fmt: skip
        for session, count in counts.items():
            await assert_events(nc, worker, session, session, count)
        # No cwd: the no-cwd workspace, where a session sees only itself.
        result = await ask(nc, worker, "session_event_trace", RUN, session_id=RUN, seq=12)
        assert f"{RUN} seq 11 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", RUN, session_id=RUN,
                          query="pricing apply_codes")  # fmt: skip
        assert "apply_codes" in found


async def test_watch_follows_a_rewritten_trajectory(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    root = gen.write(tmp_path, upto=6, v1=False)
    path = root / "last_mini_run.traj.json"

    def rest() -> None:
        gen.write(tmp_path, v1=False)

    # The first six messages: start, task, thinking, text, call, result, format error, the
    # next call = 8; the rest of the run, 11 more = 19.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "mini-swe-agent", path,
                       before=8, grow=rest, after=19)  # fmt: skip
