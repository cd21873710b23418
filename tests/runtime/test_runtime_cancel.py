"""Cancellation (running and queued, exact reason) and deadline expiry in the queue."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.errors import ErrorCode
from contracts.subjects import Subjects
from tests.runtime._runtime_helpers import (
    body,
    call,
    cancel,
    now_ms,
    start_recorded_worker,
    until,
)
from worker.runtime import replies
from worker.runtime.cancellation import CancellationRegistry, parse_cancel
from worker.signals import ExecutionSignal

REASON = "user pressed Esc: « stop » — step 12"


@pytest.mark.parametrize("tool", ["session_search", "session_event_read"])
async def test_cancel_of_a_running_request_replies_with_the_exact_reason(
    nc: NATS, subjects: Subjects, tmp_path: Path, tool: str
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        pending = asyncio.create_task(call(nc, subjects, tool, body("r-run", tag="run", hold=True)))
        await recorder.wait_started("run")
        await cancel(nc, subjects, "r-run", REASON)
        reply, msg = await pending
    finally:
        recorder.release.set()
        await worker.stop()
    assert reply == {
        "request_id": "r-run",
        "status": "error",
        "error": {"code": ErrorCode.CANCELLED.value, "message": REASON},
    }
    assert msg.headers is not None and msg.headers["Nats-Service-Error-Code"] == "499"
    assert recorder.finished == ["run"]


async def test_cancel_of_a_queued_search_terminates_it_without_running(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        first = asyncio.create_task(
            call(nc, subjects, "session_search", body("r-first", tag="first", hold=True))
        )
        await recorder.wait_started("first")
        queued = asyncio.create_task(
            call(nc, subjects, "session_event_search", body("r-queued", tag="queued"))
        )
        # The queued search is in the stream (not running) when the cancel arrives.
        js = nc.jetstream()

        async def queued_in_stream() -> bool:
            return (await js.stream_info(subjects.search_stream)).state.messages >= 2

        await until(queued_in_stream)
        await cancel(nc, subjects, "r-queued", REASON)
        recorder.release.set()
        first_reply, _ = await first
        queued_reply, _ = await queued
        # Terminated: nothing is left in the work queue.

        async def queue_empty() -> bool:
            return (await js.stream_info(subjects.search_stream)).state.messages == 0

        await until(queue_empty)
    finally:
        recorder.release.set()
        await worker.stop()
    assert first_reply["status"] == "ok"
    assert queued_reply["error"] == {"code": ErrorCode.CANCELLED.value, "message": REASON}
    assert "queued" not in recorder.started


async def test_a_cancel_that_arrives_before_the_request_stops_it(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        await cancel(nc, subjects, "r-early", "not needed any more")
        await until(lambda: worker.registry.cancelled_reason("r-early") is not None)
        for tool in ("session_trace", "session_search"):
            reply, _ = await call(nc, subjects, tool, body("r-early", tag="early"))
            assert reply["error"] == {
                "code": ErrorCode.CANCELLED.value,
                "message": "not needed any more",
            }
    finally:
        await worker.stop()
    assert recorder.started == []


async def test_a_search_whose_deadline_passes_in_the_queue_is_not_run(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        first = asyncio.create_task(
            call(nc, subjects, "session_search", body("r-long", tag="long", hold=True))
        )
        await recorder.wait_started("long")
        deadline = now_ms() + 300
        late = asyncio.create_task(
            call(nc, subjects, "session_search", body("r-exp", tag="exp", deadline_ms=deadline))
        )
        await until(lambda: now_ms() > deadline + 50)
        recorder.release.set()
        assert (await first)[0]["status"] == "ok"
        reply, _ = await late
    finally:
        recorder.release.set()
        await worker.stop()
    assert reply["error"] == {
        "code": ErrorCode.TIMEOUT.value,
        "message": replies.QUEUE_TIMEOUT_MESSAGE,
    }
    assert "exp" not in recorder.started


async def test_a_deadline_reached_while_running_times_out(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        reply, _ = await call(
            nc,
            subjects,
            "session_event_trace",
            body("r-slow", tag="slow", hold=True, deadline_ms=now_ms() + 200),
        )
    finally:
        await worker.stop()
    assert reply["error"]["code"] == ErrorCode.TIMEOUT.value
    assert recorder.finished == ["slow"]


def test_cancel_messages_parse_strictly() -> None:
    assert parse_cancel(b'{"request_id": "r-1", "reason": "why"}') == ("r-1", "why")
    assert parse_cancel(b'{"request_id": "r-1"}') == ("r-1", "cancelled by the requester")
    assert parse_cancel(b'{"reason": "x"}') is None
    assert parse_cancel(b"[1]") is None
    assert parse_cancel(b"\xff") is None


async def test_registry_remembers_a_bounded_number_of_cancels() -> None:
    registry = CancellationRegistry(remember=2, ttl_s=60)
    for i in range(3):
        registry.cancel(f"r-{i}", f"reason {i}")
    assert registry.cancelled_reason("r-0") is None
    assert registry.cancelled_reason("r-2") == "reason 2"
    signal = ExecutionSignal()
    with registry.hold("r-9", signal):
        assert registry.held == 1
        assert registry.cancel("r-9", "go") == 1
    assert signal.error is not None and signal.error.reason == "go"
    assert registry.held == 0
    expired = CancellationRegistry(ttl_s=-1)
    expired.cancel("r-x", "old")
    assert expired.cancelled_reason("r-x") is None
