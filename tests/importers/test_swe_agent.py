"""SWE-agent's trajectories (``*.traj``): the generated runs (``gen_swe_agent``) read as the
writer in ``sweagent`` 1.1.0 and 0.x's text runs write them; the recording from the real
agent is checked in ``test_recorded``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_swe_agent as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import registry, swe_agent
from worker.importers.detect import detect, expand

DEFAULT = f"default__{gen.MODEL}/{gen.INSTANCE}/{gen.INSTANCE}.traj"
TEXT = f"text__gpt4/{gen.INSTANCE}/{gen.INSTANCE}.traj"
RETRY = f"retry__{gen.MODEL}/{gen.INSTANCE}"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("swe-agent", swe_agent.read_trajectory(path))


def test_a_function_calling_run(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    got = events(root / DEFAULT)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "message/assistant",
        "tool/call", "tool/result", "message/assistant", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result", "message/context",
    ]  # fmt: skip
    start = got[0]["payload"]
    assert start["cwd"] == "/shop" and start["version"] == "1.1.0"
    assert start["model"] == gen.MODEL  # from the run's config (JSON text)
    assert got[1]["payload"]["text"].endswith(gen.TASK)  # the task, not the demonstration
    assert got[2]["payload"]["thinking"] == "The discount is probably dropped in pricing.py."
    assert got[4]["payload"] == {"tool": "bash", "input": {"command": "pytest -q"},
                                 "source_type": "assistant:tool_call"}  # fmt: skip
    results = [e for e in got if e["type"] == "tool/result"]
    assert [r["cites"][0]["seq"] for r in results] == [5, 8, 11]
    # The step's raw output, not the templated observation; the image part counted.
    assert results[0]["payload"]["output"] == "1 failed"
    assert results[1]["payload"]["output"] == "The file was edited."
    assert results[2]["payload"]["submitted"] is True
    assert not any(r["payload"].get("is_error") for r in results)  # no exit status kept
    assert got[-1]["payload"]["exit_status"] == "submitted"
    assert got[-1]["payload"]["submission"] == gen.SUBMISSION


def test_a_0x_text_run_and_its_last_step_only_in_the_trajectory(tmp_path: Path) -> None:
    """0.x: the parsed ``action`` is a ``bash`` call and the ``user`` observation after it
    its result; 1.0 left the submitting step out of the history: read from the step."""
    root = gen.write(tmp_path)
    got = events(root / TEXT)
    assert [e["type"] for e in got[1:]] == [
        "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result", "message/context",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] == "/shop__cart"  # the state as JSON text
    assert got[3]["payload"]["input"] == {"command": "search_dir total"}
    assert got[4]["payload"]["output"] == "Found 2 matches"
    assert got[6]["payload"]["input"] == {"command": "submit"}
    assert got[7]["cites"][0]["seq"] == 7 and got[7]["payload"]["submitted"] is True
    # 0.x: the submitting reply is in the history, its observation only in the step.
    older = events(root / f"text__gpt4/{gen.INSTANCE}-0x/{gen.INSTANCE}-0x.traj")
    assert [e["type"] for e in older] == [e["type"] for e in got]
    assert older[7]["payload"] == got[7]["payload"]


def test_a_retry_run_s_attempts_are_read_once(tmp_path: Path) -> None:
    """Each attempt is a session; the file listing them gives the ids its attempts' own
    files give, and those files are not sources beside it."""
    root = gen.write(tmp_path)
    listed = swe_agent.read_trajectory(root / RETRY / f"{gen.INSTANCE}.traj")
    own = [
        swe_agent.read_trajectory(root / RETRY / f"attempt_{i}" / f"{gen.INSTANCE}.traj")
        for i in range(2)
    ]
    assert [s.session_id for s in listed.sessions] == [r.sessions[0].session_id for r in own]
    assert listed.skipped["attempt:chosen-copy"] == 1
    sources = sorted(swe_agent.SweAgentImporter().sources(root))
    assert root / RETRY / f"{gen.INSTANCE}.traj" in sources
    assert not any("attempt_" in str(p) for p in sources)
    # An attempt's file alone (the listing file gone) is a source.
    (root / RETRY / f"{gen.INSTANCE}.traj").unlink()
    assert len([p for p in swe_agent.SweAgentImporter().sources(root) if "attempt_" in str(p)]) == 2


def test_the_session_id_stays_as_the_file_grows(tmp_path: Path) -> None:
    """No run id in the file: its name and the history up to the first reply, which later
    steps never rewrite."""
    root = gen.write(tmp_path, upto=5)
    first = events(root / DEFAULT)[0]["session_id"]
    gen.write(tmp_path)
    assert events(root / DEFAULT)[0]["session_id"] == first
    assert first.startswith(f"swe-agent-{gen.INSTANCE}-")


def test_skips_are_counted_and_explained(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    reading = swe_agent.read_trajectory(root / DEFAULT)
    assert reading.skipped == {"message:system": 1, "message:demonstration": 1,
                               "step:requeried": 1, "content:image_url": 1}  # fmt: skip
    reason = registry.get("swe-agent").skip_reason
    assert all(reason(kind) for kind in reading.skipped)
    assert reason("message:critic") is None  # a role of a later version: drift


def test_another_shape_is_reported_not_read(tmp_path: Path) -> None:
    other = tmp_path / "run.traj"
    other.write_text(json.dumps({"messages": [], "info": {}}, indent=2))
    assert detect(other) is None
    problems = swe_agent.read_trajectory(other).problems
    assert problems and "not a SWE-agent trajectory" in problems[0].message
    # mini-SWE-agent's trajectories are its own format.
    assert detect(tmp_path / "x.traj.json") is None


def test_detection_sources_and_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gen.write(tmp_path, retry=False)
    files = sorted(root.rglob("*.traj"))
    assert {path: detect(path) for path in files} == dict.fromkeys(files, "swe-agent")
    assert sorted(expand([tmp_path], "swe-agent")) == files
    monkeypatch.delenv("SWE_AGENT_TRAJECTORY_DIR", raising=False)
    assert registry.get("swe-agent").default_locations() == []  # under where it ran
    monkeypatch.setenv("SWE_AGENT_TRAJECTORY_DIR", str(tmp_path / "trajectories"))
    assert registry.get("swe-agent").default_locations() == [tmp_path / "trajectories"]


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path, retry=False)
    run = events(root / DEFAULT)[0]["session_id"]
    async with imported(nc, nats_url, subjects, tmp_path, root, "swe-agent",
                        idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, run, run, 14)  # the events above and the end
        result = await ask(nc, worker, "session_event_trace", run, session_id=run, seq=6)
        assert f"{run} seq 5 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_event_search", run, session_id=run,
                          query="discount pricing")  # fmt: skip
        assert "pricing" in found


async def test_watch_follows_a_rewritten_trajectory(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    root = gen.write(tmp_path, upto=5, retry=False)

    def rest() -> None:
        gen.write(tmp_path, retry=False)

    # The first step: start, task, thinking, text, call, result = 6; the rest, 7 more.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "swe-agent", root / DEFAULT,
                       before=6, grow=rest, after=13)  # fmt: skip
