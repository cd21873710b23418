"""The worker's start and stop on one exit stack: a start that fails part way closes exactly
what opened, in reverse; a stop closes the tools' source only after in-flight work is
answered."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import Recorder, body, call, config_for, make_toolset
from worker.actors import Supervisor
from worker.config import WorkerConfig
from worker.serving.spill import SpillConfigError
from worker.worker import Served, ToolSource, Worker


def recording_source(recorder: Recorder, events: list[str]) -> ToolSource:
    """Serves the stand-in tools; runs an actor and registers a close, both recorded."""

    async def source(
        stack: AsyncExitStack, nc: NATS, config: WorkerConfig, supervisor: Supervisor
    ) -> Served:
        running = asyncio.Event()

        async def actor() -> None:
            running.set()
            try:
                await asyncio.Event().wait()
            finally:
                events.append("actor ended")

        async def close() -> None:
            events.append(f"source closed after {sorted(recorder.finished)}")

        supervisor.start("source-actor", actor)
        await running.wait()
        stack.push_async_callback(close)
        return Served(make_toolset(recorder))

    return source


async def test_a_start_that_fails_closes_what_opened_in_reverse(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    events: list[str] = []
    # The spill bucket is bound after the tools' source opened: that step fails.
    config = config_for(subjects, tmp_path, spill_threshold_bytes=nc.max_payload)
    with pytest.raises(SpillConfigError):
        await Worker.start(nc, config, tools=recording_source(Recorder(), events))
    # The source's own close first, then the supervisor's (its actors), as registered.
    assert events == ["source closed after []", "actor ended"]


async def test_a_start_that_fails_releases_the_index(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    config = config_for(subjects, tmp_path)
    bad = config_for(subjects, tmp_path, db_path=config.db_path, spill_threshold_bytes=10**9)
    with pytest.raises(SpillConfigError):
        await Worker.start(nc, bad)
    # The index's lock was released: a worker opens the same file.
    worker = await Worker.start(nc, config)
    try:
        assert worker.index is not None
    finally:
        await worker.stop()


async def test_stop_closes_the_source_after_in_flight_work_is_answered(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    events: list[str] = []
    recorder = Recorder()
    config = config_for(subjects, tmp_path)
    worker = await Worker.start(nc, config, tools=recording_source(recorder, events))
    read = asyncio.create_task(call(nc, subjects, "session_event_read", body(tag="r", sleep=0.3)))
    await recorder.wait_started("r")
    await worker.stop()
    reply, _ = await read
    assert reply["status"] == "ok"
    assert events == ["source closed after ['r']", "actor ended"]
    await worker.stop()  # a second stop does nothing
    assert len(events) == 2
