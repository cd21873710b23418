"""Cline and Roo Code: converter checks over native and XML tool modes, imports read back
with the five tools, and ``watch`` following a task folder whose history grows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_cline as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, snapshot_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import cline

CLINE = f"cline-{gen.CLINE_TASK}"
CLINE_XML = f"cline-{gen.CLINE_XML_TASK}"
ROO = f"roo-{gen.ROO_TASK}"
ROO_CHILD = f"roo-{gen.ROO_CHILD}"


def events(task: Path) -> list[dict[str, Any]]:
    name = "roo-code" if cline.flavour(task) == "roo" else "cline"
    return snapshot_events(name, cline.read_task(task))


def test_native_tools_pair_and_environment_details_are_context(tmp_path: Path) -> None:
    tasks = gen.write_cline(tmp_path)
    got = events(tasks / gen.CLINE_TASK)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/context", "message/assistant", "tool/call",
        "tool/result", "message/context", "tool/call", "tool/result", "message/assistant",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] == gen.CWD
    assert got[0]["time"] == "2025-11-24T16:00:00.000Z"  # Cline's task id: its start
    assert got[5]["cites"] == [{"session_id": CLINE, "seq": 5}]
    assert got[8]["payload"]["is_error"] is True
    assert cline.read_task(tasks / gen.CLINE_TASK).skipped == {"block:image": 1}


def test_xml_mode_results_keep_their_output(tmp_path: Path) -> None:
    got = events(gen.write_cline(tmp_path) / gen.CLINE_XML_TASK)
    result = next(e for e in got if e["type"] == "tool/result")
    assert result["payload"]["tool"] == "read_file"
    assert "UNITS = 'standard'" in result["payload"]["output"]
    assert got[0]["payload"]["cwd"] == "/home/dev/forecast"
    assert len(got) == 6


def test_roo_sub_task_is_a_child_and_its_summary_compacts(tmp_path: Path) -> None:
    tasks = gen.write_roo(tmp_path)
    parent, child = events(tasks / gen.ROO_TASK), events(tasks / gen.ROO_CHILD)
    assert child[0]["payload"]["parent_session_id"] == ROO
    assert child[0]["payload"]["source"] == "roo-code"
    compaction = next(e for e in parent if e["type"] == "compaction")
    assert compaction["replaces"] == [2, 3, 4, 5, 6]
    assert parent[0]["payload"]["mode"] == "architect"


def test_a_half_written_history_is_a_problem_not_a_guess(tmp_path: Path) -> None:
    task = gen.write_task(tmp_path / "tasks", gen.CLINE_TASK, gen.cline_native())
    (task / cline.CONVERSATION).write_bytes(b'[{"role": "user", "content": [')
    snapshot = cline.read_task(task)
    assert not snapshot.sessions
    assert "not readable JSON" in snapshot.problems[0].message


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    storage = tmp_path / "globalStorage"
    tasks = gen.write_roo(storage)
    # Roo: 8 + 3 events and an end each (untitled: the first prompt stands in).
    async with imported(nc, nats_url, subjects, tmp_path, tasks, "roo-code",
                        expected=13, idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, ROO, ROO, 9)
        await assert_events(nc, worker, ROO, ROO_CHILD, 4)
        lineage = await ask(nc, worker, "session_trace", ROO, session_id=ROO)
        assert ROO_CHILD in lineage.split("Descendants")[1]
        assert "Plan the caching layer" in lineage  # the first prompt
        summary = await ask(nc, worker, "session_event_trace", ROO, session_id=ROO, seq=7)
        assert "seq 6 ·" in summary.split("Replaces (")[1].split("Replaced by")[0]
        found = await ask(nc, worker, "session_search", ROO, query="retry test")
        assert ROO_CHILD in found


async def test_import_of_cline_tasks_pairs_tool_calls(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    tasks = gen.write_cline(tmp_path / "globalStorage")
    async with imported(nc, nats_url, subjects, tmp_path, tasks, "cline",
                        expected=11 + 7, idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, CLINE, CLINE, 11)
        await assert_events(nc, worker, CLINE_XML, CLINE_XML, 7)
        result = await ask(nc, worker, "session_event_trace", CLINE, session_id=CLINE, seq=6)
        assert f"{CLINE} seq 5 · tool/call" in cites_of(result)
        other = await ask(nc, worker, "session_search", CLINE, query="Kelvin forecast")
        assert CLINE_XML not in other  # another workspace: /home/dev/forecast


async def test_watch_follows_a_growing_task(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    conversation = gen.cline_native()
    task = gen.write_task(tmp_path / "tasks", gen.CLINE_TASK, conversation[:2])

    def next_messages() -> None:
        # Cline writes the whole history again after each message.
        (task / cline.CONVERSATION).write_bytes(orjson.dumps(conversation))

    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "cline", task,
                       before=5, grow=next_messages, after=10)  # fmt: skip
