"""Cline and Roo Code: converter checks over native and XML tool modes, imports read back
with the five tools, and ``watch`` following a task folder whose history grows."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_cline as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from worker.importers import cline
from worker.importers.skips import BUILT_IN, reason_for
from worker.importers.source_reading import ReadingConverter

CLINE = f"cline-{gen.CLINE_TASK}"
CLINE_XML = f"cline-{gen.CLINE_XML_TASK}"
CLINE_UI = f"cline-{gen.CLINE_UI_TASK}"
ROO = f"roo-{gen.ROO_TASK}"
ROO_CHILD = f"roo-{gen.ROO_CHILD}"


def events(task: Path) -> list[dict[str, Any]]:
    name = "roo-code" if cline.flavour(task) == "roo" else "cline"
    return reading_events(name, cline.read_task(task))


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


def _gist(payload: dict[str, Any]) -> object:
    for key in ("text", "thinking", "output", "tool"):
        if payload.get(key):
            return payload[key]
    return None


def _without_environment(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if not isinstance(content, list):
        return message
    return {**message, "content": [b for b in content if b != gen.environment()]}


def test_a_task_with_only_its_ui_log_is_read_from_it(tmp_path: Path) -> None:
    tasks = gen.write_cline(tmp_path)
    got = events(tasks / gen.CLINE_UI_TASK)
    assert [(e["type"], _gist(e["payload"])) for e in got[1:]] == [
        ("message/user", "Add a retry with backoff to the client"),
        ("message/assistant", "The client calls get() once; a helper may exist."),
        ("message/assistant", "Reading the client and the helpers."),
        ("tool/call", "readFile"),
        ("tool/call", "readFile"),
        ("tool/result", "[read_file for 'client.py'] Result:\ndef fetch(): return get(URL)"),
        ("tool/result", "[read_file for 'helpers.py'] Result:\ndef backoff(n): return 2 ** n"),
        ("tool/call", "execute_command"),
        ("tool/result", "3 passed\nin 0.21s"),
        ("message/assistant", "Retry on timeouts too?\n- Yes\n- No"),
        ("message/user", "Yes, timeouts too"),
        ("message/context", "Diff edit failed: SEARCH block not found in client.py"),
        ("message/assistant", "Retries with exponential backoff, timeouts included."),
    ]  # fmt: skip
    # Each result cites its call, the two reads in the order they were made.
    assert [e["cites"][0]["seq"] for e in got if e["type"] == "tool/result"] == [5, 6, 9]
    assert got[8]["payload"]["input"] == {"command": "pytest -q tests/test_client.py"}
    assert got[0]["time"] == "2025-11-24T16:03:20.000Z"
    assert cline.read_task(tasks / gen.CLINE_UI_TASK).skipped == {
        "ui:say:checkpoint_created": 2, "ui:api_req_started": 3, "ui:say:task_progress": 1,
        "ui:ask:completion_result": 1,
    }  # fmt: skip


def test_the_ui_log_waits_while_cline_may_still_write_the_history(tmp_path: Path) -> None:
    messages = gen.ui_log(gen.T0)
    task = gen.write_ui_task(tmp_path / "tasks", gen.CLINE_UI_TASK, messages[:11])
    assert len(events(task)) == 10  # old and whole: the command's output so far is there
    # Its last message a few seconds old (its own ``ts``): the command's output may grow.
    recent = gen.ui_log(int(time.time() * 1000) - 5_000)[:11]
    (task / cline.UI_MESSAGES).write_bytes(orjson.dumps(recent))
    assert [e["type"] for e in events(task)][-1] == "tool/call"
    # Old messages in a file copied just now (its mtime the copy's): whole.
    (task / cline.UI_MESSAGES).write_bytes(orjson.dumps(messages[:11]))
    assert len(events(task)) == 10


def test_the_recorded_cwd_and_task_name_are_read(tmp_path: Path) -> None:
    """Cline's task list (``state/taskHistory.json``) records the cwd the task started in
    and the name the task list shows; the environment details may not say it."""
    tasks = gen.write_cline(tmp_path)
    gen.write_task(tasks, gen.CLINE_TASK, [_without_environment(m) for m in gen.cline_native()])
    gen.write_task_history(tasks.parent, [
        gen.history_item(gen.CLINE_TASK, "Retry for the weather client", "/home/dev/recorded"),
        gen.history_item(gen.CLINE_UI_TASK, "Add a retry with backoff", gen.UI_CWD),
    ])  # fmt: skip
    reading = cline.read_task(tasks / gen.CLINE_TASK)
    assert reading.sessions[0].cwd == "/home/dev/recorded"
    assert reading.sessions[0].title == "Retry for the weather client"
    assert events(tasks / gen.CLINE_UI_TASK)[0]["payload"]["cwd"] == gen.UI_CWD
    # Roo: the history item beside the task names its workspace and the task.
    roo = cline.read_task(gen.write_roo(tmp_path) / gen.ROO_TASK).sessions[0]
    assert (roo.cwd, roo.title) == (gen.CWD, "Plan the caching layer")


def test_a_half_written_history_is_a_problem_not_a_guess(tmp_path: Path) -> None:
    task = gen.write_task(tmp_path / "tasks", gen.CLINE_TASK, gen.cline_native())
    (task / cline.CONVERSATION).write_bytes(b'[{"role": "user", "content": [')
    reading = cline.read_task(task)
    assert not reading.sessions
    assert "not readable JSON" in reading.problems[0].message


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    storage = tmp_path / "globalStorage"
    tasks = gen.write_roo(storage)
    # Roo: 8 + 3 events, then a title (the history item's task) and an end each.
    async with imported(nc, nats_url, subjects, tmp_path, tasks, "roo-code",
                        expected=15, idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, ROO, ROO, 10)
        await assert_events(nc, worker, ROO, ROO_CHILD, 5)
        lineage = await ask(nc, worker, "session_trace", ROO, session_id=ROO)
        assert ROO_CHILD in lineage.split("Descendants")[1]
        assert "⟦Plan the caching layer⟧" in lineage  # the task list's name
        summary = await ask(nc, worker, "session_event_trace", ROO, session_id=ROO, seq=7)
        assert "seq 6 ·" in summary.split("Replaces (")[1].split("Replaced by")[0]
        found = await ask(nc, worker, "session_search", ROO, query="retry test")
        assert ROO_CHILD in found


async def test_import_of_cline_tasks_pairs_tool_calls(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    tasks = gen.write_cline(tmp_path / "globalStorage")
    # Each task's events, then the task list's name as its title, and its end.
    async with imported(nc, nats_url, subjects, tmp_path, tasks, "cline",
                        expected=12 + 8 + 16, idle="0") as (worker, _):  # fmt: skip
        await assert_events(nc, worker, CLINE, CLINE, 12)
        await assert_events(nc, worker, CLINE_XML, CLINE_XML, 8)
        await assert_events(nc, worker, CLINE_UI, CLINE_UI, 16)  # from its UI log alone
        trace = await ask(nc, worker, "session_event_trace", CLINE_UI, session_id=CLINE_UI,
                          seq=10)  # fmt: skip
        assert f"{CLINE_UI} seq 9 · tool/call" in cites_of(trace)
        lineage = await ask(nc, worker, "session_trace", CLINE_UI, session_id=CLINE_UI)
        assert "⟦Add a retry with backoff to the client⟧" in lineage
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


def test_what_waited_on_a_fresh_ui_log_is_published_when_it_goes_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``watch``: a UI log read while fresh holds back its last command's output; when the
    folder goes quiet, the idle reading publishes it before the session ends."""
    messages = gen.ui_log(int(time.time() * 1000) - 5_000)[:11]  # written just now
    task = gen.write_ui_task(tmp_path / "tasks", gen.CLINE_UI_TASK, messages)
    converter = ReadingConverter("cline", lambda: cline.read_task(task))
    assert [out.kind for out in converter.feed(1, b"")][-1] == "tool/call"
    later = time.time() + cline.UI_SETTLE_S
    monkeypatch.setattr(cline, "now", lambda: later)
    assert [out.kind for out in converter.idle()] == ["tool/result", "session/end"]


def test_empty_placeholders_and_error_retries_are_skipped_with_reasons(tmp_path: Path) -> None:
    """Seen in real UI logs: ``say: text`` left empty and ``partial`` after a reasoning or
    an API request (a streaming placeholder), and ``error_retry`` notices."""
    t0 = 1_764_000_000_000
    messages = [
        gen.say(t0, "task", "Tidy the imports", images=[], files=[]),
        gen.api_request(t0 + 10, "<task>\nTidy the imports\n</task>"),
        gen.say(t0 + 20, "reasoning", "Sorting them is enough.", partial=False),
        gen.say(t0 + 30, "text", "", partial=True),
        gen.say(t0 + 40, "error_retry", '{"attempt":1,"maxAttempts":3,"delaySeconds":2}'),
        gen.say(t0 + 50, "text", "Sorted the imports.", partial=False),
    ]
    folder = gen.write_ui_task(tmp_path / "tasks", "1764000000000", messages)
    skipped = cline.read_task(folder).skipped
    assert skipped == {"ui:api_req_started": 1, "ui:say:text:empty": 1, "ui:say:error_retry": 1}
    assert all(reason_for(kind, BUILT_IN["cline"]) for kind in skipped)
