"""The executor is the only outer guard: a failure injected in each layer a request crosses
(the transport's endpoint, the tool service's handler, the executor's spill step, a
workflow inside the boundary, an operator verb) is answered there with the fixed
TOOL_FAILED and logged once, with its cause, so no layer needs a catch-all of its own. A
real worker over a real nats-server."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS
from structlog.testing import capture_logs

from contracts.errors import MICRO_STATUS, TOOL_FAILED_MESSAGE, ErrorCode
from contracts.subjects import Subjects
from tests._harness import (
    RecordedTool,
    Recorder,
    body,
    call,
    config_for,
    make_toolset,
    sample_corpus_worker,
    serving,
)
from worker.signals import ExecutionSignal
from worker.tools.definitions import Admitted, ToolSet
from worker.worker import Worker

SECRET = "secret internal detail: /var/db/index.sqlite"
FAILED_LEVELS = frozenset({"error", "exception", "critical"})


@dataclasses.dataclass(frozen=True)
class AdmitsWithABug(RecordedTool):
    """A declared tool whose admission raises (it must never): a bug before any lane."""

    def admit(self, *args: Any, **kwargs: Any) -> Admitted[Mapping[str, Any]]:
        raise RuntimeError(SECRET)


async def _unencodable(args: Mapping[str, Any], signal: ExecutionSignal) -> str:
    # A lone surrogate is not UTF-8: the presenter cannot write this result.
    return "half a character: \ud800"


async def _unused(args: Mapping[str, Any], signal: ExecutionSignal) -> str:
    raise AssertionError("admission failed: never run")


def _with(toolset: ToolSet, replaced: Mapping[str, Any]) -> ToolSet:
    tools = tuple(
        dataclasses.replace(t, handler=replaced[t.name]) if t.name in replaced else t
        for t in toolset.tools
    )
    return dataclasses.replace(toolset, tools=tools)


@pytest.fixture
async def worker(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    toolset = _with(
        make_toolset(Recorder()),
        {
            # A search and an exact tool: both lanes' intakes.
            "session_search": AdmitsWithABug("session_search", _unused),
            "session_event_trace": AdmitsWithABug("session_event_trace", _unused),
            "session_event_read": RecordedTool("session_event_read", _unencodable),
        },
    )
    w = await Worker.start(nc, config_for(subjects, tmp_path), tools=serving(toolset))
    try:
        yield w
    finally:
        await w.stop()


def _failures(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e.get("log_level") in FAILED_LEVELS or e.get("exc_info")]


@pytest.mark.parametrize(
    ("tool", "arguments", "logged"),
    [
        # The tool service's and the transport's place: the lane's intake raised.
        ("session_search", {}, "request failed before its run"),
        ("session_event_trace", {}, "request failed before its run"),
        # The boundary guard's place: a bug in the workflow itself.
        ("session_trace", {"raise": "internal"}, "tool failed"),
        # The executor's spill step: the presenter could not write the result.
        ("session_event_read", {}, "reply failed"),
    ],
)
async def test_a_failure_at_each_former_guard_is_tool_failed_and_one_log_line(
    nc: NATS, worker: Worker, tool: str, arguments: dict[str, Any], logged: str
) -> None:
    rid = f"r-guard-{tool.replace('_', '-')}"
    with capture_logs() as logs:
        reply, msg = await call(nc, worker.config.subjects, tool, body(rid, **arguments))
    assert reply == {
        "request_id": rid,
        "status": "error",
        "error": {"code": ErrorCode.TOOL_FAILED.value, "message": TOOL_FAILED_MESSAGE},
    }
    assert msg.headers is not None
    assert msg.headers["Nats-Service-Error-Code"] == MICRO_STATUS[ErrorCode.TOOL_FAILED]
    assert b"secret" not in msg.data and "secret" not in str(msg.headers)
    failures = _failures(logs)
    # One line, with the cause attached (the exception's traceback goes with it).
    assert [e["event"] for e in failures] == [logged], failures
    assert failures[0]["exc_info"] is True
    # Counted once, as an error reply of its endpoint.
    assert worker.reply_stats.errors[tool] == 1


async def test_an_operator_verb_s_bug_is_its_json_tool_failed_and_one_log_line(
    nc: NATS, subjects: Subjects, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator verbs are run by the same executor: a failure below a verb (here the
    store's read itself) is answered in the operator's JSON, logged once with its cause."""

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(SECRET)

    async with sample_corpus_worker(nc, subjects, tmp_path) as worker:
        assert worker.index is not None
        monkeypatch.setattr(worker.index.store, "workspaces", broken)
        with capture_logs() as logs:
            msg = await nc.request(subjects.operator("workspaces"), b"{}", timeout=10)
    assert orjson.loads(msg.data) == {
        "status": "error",
        "error": {"code": ErrorCode.TOOL_FAILED.value, "message": TOOL_FAILED_MESSAGE},
    }
    assert b"secret" not in msg.data
    failures = _failures(logs)
    assert [e["event"] for e in failures] == ["tool failed"], failures
    assert failures[0]["exc_info"] is True
