"""The micro service: discovery, manifest, each tool over a plain NATS request, replies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.errors import MICRO_STATUS, TOOL_FAILED_MESSAGE, ErrorCode
from contracts.subjects import SERVICE_NAME, TOOL_NAMES, Subjects
from tests._harness import Recorder, body, call, config_for, make_toolset, serving
from worker.transport.connection import error_route
from worker.worker import Worker


@pytest.fixture
async def worker(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    w = await Worker.start(
        nc,
        config_for(subjects, tmp_path),
        tools=serving(make_toolset(Recorder())),
    )
    try:
        yield w
    finally:
        await w.stop()


async def _all_answers(nc: NATS, subject: str) -> list[dict[str, object]]:
    # $SRV.* subjects are shared by every test's services: collect all, pick ours.
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(subject, b"", reply=inbox)
    answers = []
    try:
        while True:
            msg = await sub.next_msg(timeout=0.5)
            answers.append(json.loads(msg.data))
    except TimeoutError:
        pass
    finally:
        await sub.unsubscribe()
    return answers


async def test_each_tool_answers_a_plain_nats_request(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    for tool in TOOL_NAMES:
        reply, msg = await call(nc, subjects, tool, body("r-each-" + tool, tag="t1"))
        assert reply == {
            "request_id": "r-each-" + tool,
            "status": "ok",
            "content": f"{tool} t1 by w",
        }
        assert not (msg.headers or {}).get("Nats-Service-Error")


async def test_ping_info_stats_discover_the_service_with_tool_metadata(
    nc: NATS, worker: Worker
) -> None:
    assert worker.service is not None
    sid = worker.service.id
    pings = await _all_answers(nc, f"$SRV.PING.{SERVICE_NAME}")
    assert any(p["id"] == sid and p["name"] == SERVICE_NAME for p in pings)

    msg = await nc.request(f"$SRV.INFO.{SERVICE_NAME}.{sid}", b"", timeout=5)
    info = json.loads(msg.data)
    endpoints = {e["name"]: e for e in info["endpoints"]}
    subjects = worker.config.subjects
    for tool in TOOL_NAMES:
        assert endpoints[tool]["subject"] == subjects.tool(tool)
        assert endpoints[tool]["metadata"]["read_only"] == "true"
    assert endpoints["session_search"]["metadata"]["execution"] == "exclusive"
    assert endpoints["session_event_search"]["metadata"]["execution"] == "exclusive"
    assert endpoints["session_event_read"]["metadata"]["execution"] == "parallel"
    assert endpoints["manifest"]["subject"] == subjects.manifest
    # Where a client finds the rest of the protocol, from INFO alone.
    assert info["version"] == worker.config.service_version
    assert info["metadata"] == {
        "subject_prefix": subjects.prefix,
        "manifest": subjects.manifest,
        "manifest_version": worker.config.service_version,
        "cancel": subjects.cancel,
        "protocol": "docs/protocol.md",
        "partitions": "all",
        "partition_count": "16",
    }

    await call(nc, subjects, "session_trace", body(tag="x"))
    msg = await nc.request(f"$SRV.STATS.{SERVICE_NAME}.{sid}", b"", timeout=5)
    stats = {e["name"]: e for e in json.loads(msg.data)["endpoints"]}
    assert stats["session_trace"]["num_requests"] == 1
    assert stats["session_trace"]["data"]["lane"] == "parallel-pool"
    # The endpoints subscribe with the worker's own pending limits, not nats-py's defaults.
    config = worker.config
    assert stats["session_search"]["data"] == {
        "lane": "search-queue",
        "running": False,
        "processing_time_covers": "enqueue",
        "run_count": 0,
        "run_processing_time": 0,
        "run_average_processing_time": 0,
        "waiting": 0,
        "pending_msgs_limit": config.endpoint_pending_msgs,
        "pending_bytes_limit": max(config.endpoint_pending_bytes, 2 * nc.max_payload),
        "slow_consumer_dropped": 0,
        "cancels_ignored": 0,
    }
    assert stats["session_trace"]["data"]["pending_msgs_limit"] == 2048
    assert stats["session_trace"]["data"]["processing_time_covers"] == "admission"
    assert stats["session_trace"]["data"]["run_count"] == 1
    assert stats["session_trace"]["data"]["run_processing_time"] > 0


async def _stats(nc: NATS, worker: Worker) -> dict[str, dict[str, object]]:
    assert worker.service is not None
    msg = await nc.request(f"$SRV.STATS.{SERVICE_NAME}.{worker.service.id}", b"", timeout=5)
    return {e["name"]: e for e in json.loads(msg.data)["endpoints"]}


async def test_stats_count_error_replies_and_the_searches_run(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    for n in range(3):
        await call(nc, subjects, "session_trace", body(f"r-e{n}", **{"raise": "tool_error"}))
    await call(nc, subjects, "session_event_read", b"[]")  # unreadable envelope
    await call(nc, subjects, "session_search", body("r-s1", tag="s"))
    await call(nc, subjects, "session_search", b"not json")
    stats = await _stats(nc, worker)
    assert stats["session_trace"]["num_errors"] == 3
    assert stats["session_trace"]["last_error"] == "404:SESSION_QUERY_NOT_FOUND"
    assert stats["session_event_read"]["num_errors"] == 1
    assert stats["session_event_read"]["last_error"] == "400:SESSION_QUERY_INVALID_ARGUMENTS"
    assert stats["session_search"]["num_errors"] == 1
    assert stats["session_search"]["num_requests"] == 2
    data = stats["session_search"]["data"]
    assert isinstance(data, dict)
    # The search ran to its reply: its run time is counted apart from the enqueue.
    assert data["run_count"] == 1 and data["run_processing_time"] > 0
    assert stats["session_event_search"]["num_errors"] == 0


async def test_a_partition_s_endpoint_counts_its_own_error_replies(
    nc: NATS, worker: Worker
) -> None:
    """Each lane counts an error reply under the endpoint that took the request: a
    shard's ``session_trace-p3``, never the bare ``session_trace`` (the parallel pool once
    did, so a shard's trace and read endpoints never showed an error)."""
    subjects = worker.config.subjects
    for tool in ("session_trace", "session_event_read", "session_search"):
        data = body(f"r-p3-{tool}", **{"raise": "tool_error"})
        msg = await nc.request(subjects.tool(tool, 3), data, timeout=15)
        assert orjson.loads(msg.data)["error"]["code"] == ErrorCode.NOT_FOUND.value
    stats = await _stats(nc, worker)
    for tool in ("session_trace", "session_event_read", "session_search"):
        assert stats[f"{tool}-p3"]["num_errors"] == 1, tool
        assert stats[f"{tool}-p3"]["last_error"] == "404:SESSION_QUERY_NOT_FOUND", tool
        assert stats[tool]["num_errors"] == 0, tool
        figures = stats[f"{tool}-p3"]["data"]
        assert isinstance(figures, dict) and figures["run_count"] == 1, tool


async def test_manifest_lists_tools_schemas_modes_and_prompt(nc: NATS, worker: Worker) -> None:
    msg = await nc.request(worker.config.subjects.manifest, b"", timeout=5)
    manifest = orjson.loads(msg.data)
    assert manifest["prompt_section"] == "test prompt"
    tools = {t["name"]: t for t in manifest["tools"]}
    assert set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert set(tool) == {"name", "description", "input_schema", "execution", "read_only"}
        assert tool["read_only"] is True
        assert tool["input_schema"]["type"] == "object"
    assert tools["session_search"]["execution"] == "exclusive"
    assert tools["session_trace"]["execution"] == "parallel"


@pytest.mark.parametrize("tool", ["session_search", "session_event_read"])
async def test_a_bad_envelope_is_invalid_arguments_with_micro_headers(
    nc: NATS, worker: Worker, tool: str
) -> None:
    subjects = worker.config.subjects
    bad = orjson.dumps({"request_id": "r-bad", "execution": {"deadline_ms": -5}})
    reply, msg = await call(nc, subjects, tool, bad)
    assert reply["status"] == "error"
    assert reply["request_id"] == "r-bad"
    assert reply["error"]["code"] == ErrorCode.INVALID_ARGUMENTS
    assert "execution.deadline_ms" in reply["error"]["message"]
    assert msg.headers is not None
    assert msg.headers["Nats-Service-Error-Code"] == "400"
    assert msg.headers["Nats-Service-Error"] == reply["error"]["message"]

    reply, _ = await call(nc, subjects, tool, b"not json {")
    assert reply == {
        "request_id": "",
        "status": "error",
        "error": {"code": "SESSION_QUERY_INVALID_ARGUMENTS", "message": reply["error"]["message"]},
    }
    # A body that is JSON but not an object, or a field of the wrong shape: the message
    # names the field and never an internal class.
    for bad_body in (b"[]", b'"text"', b'{"request_id": "r-x", "execution": []}'):
        reply, msg = await call(nc, subjects, tool, bad_body)
        assert reply["error"]["code"] == ErrorCode.INVALID_ARGUMENTS
        assert "instance" not in reply["error"]["message"]
        assert "ToolRequest" not in reply["error"]["message"]
        assert "Execution" not in reply["error"]["message"]
    # A deadline in seconds is refused with a message that says so.
    seconds = orjson.dumps({"request_id": "r-sec", "execution": {"deadline_ms": 1796000000}})
    reply, _ = await call(nc, subjects, tool, seconds)
    assert reply["request_id"] == "r-sec"
    assert "epoch milliseconds" in reply["error"]["message"]
    assert "looks like epoch seconds" in reply["error"]["message"]
    # An invalid id is not echoed back.
    reply, _ = await call(nc, subjects, tool, orjson.dumps({"request_id": "bad id!"}))
    assert reply["request_id"] == ""


@pytest.mark.parametrize("tool", ["session_event_search", "session_event_trace"])
async def test_internal_failures_never_reach_the_reply(nc: NATS, worker: Worker, tool: str) -> None:
    subjects = worker.config.subjects
    reply, msg = await call(nc, subjects, tool, body("r-int", raise_="x", **{"raise": "internal"}))
    assert reply == {
        "request_id": "r-int",
        "status": "error",
        "error": {"code": ErrorCode.TOOL_FAILED.value, "message": TOOL_FAILED_MESSAGE},
    }
    assert b"secret" not in msg.data and b"sqlite" not in msg.data
    assert msg.headers is not None
    assert "secret" not in str(msg.headers)
    assert msg.headers["Nats-Service-Error-Code"] == MICRO_STATUS[ErrorCode.TOOL_FAILED]


async def test_tool_errors_pass_through_with_their_code(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    reply, msg = await call(nc, subjects, "session_trace", body("r-nf", **{"raise": "tool_error"}))
    assert reply["error"] == {
        "code": "SESSION_QUERY_NOT_FOUND",
        "message": "No such session in this workspace.",
    }
    assert msg.headers is not None
    assert msg.headers["Nats-Service-Error-Code"] == "404"


async def test_the_slow_consumer_handler_is_chained_while_serving_and_restored_after(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    seen: list[Exception] = []

    async def own(exc: Exception) -> None:
        seen.append(exc)

    # The connection's error callback, as open_connection routes it (no nats-py private).
    route = error_route(nc)
    assert route is not None
    route.handler = own
    worker = await Worker.start(
        nc,
        config_for(subjects, tmp_path),
        tools=serving(make_toolset(Recorder())),
    )
    try:
        assert route.handler == worker.slow_consumers._on_error
        # Any other error still reaches the connection's own callback.
        other = RuntimeError("not a slow consumer")
        await route.handler(other)
        assert seen == [other]
    finally:
        await worker.stop()
    assert route.handler is own
