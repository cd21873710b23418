"""Lanes: searches one at a time per worker, reads in a bounded pool, overload, sharing."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.errors import ErrorCode
from contracts.subjects import Subjects
from tests._harness import (
    Recorder,
    body,
    call,
    config_for,
    make_toolset,
    now_ms,
    serving,
    start_recorded_worker,
    until,
)
from worker.serving import replies
from worker.transport.connection import open_connection
from worker.worker import Worker


async def test_two_searches_sent_together_never_overlap(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        results = await asyncio.gather(
            call(nc, subjects, "session_search", body(tag="a", sleep=0.3)),
            call(nc, subjects, "session_event_search", body(tag="b", sleep=0.3)),
            call(nc, subjects, "session_search", body(tag="c", sleep=0.1)),
        )
    finally:
        await worker.stop()
    assert [r["status"] for r, _ in results] == ["ok"] * 3
    assert recorder.max_running["exclusive"] == 1
    # Strictly one after another: each search ended before the next began.
    assert len(recorder.started) == 3
    assert recorder.started == recorder.finished


async def test_reads_overlap_up_to_the_pool_size_and_no_further(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder = Recorder()
    pool = 4
    # Every read waits at a barrier of the pool size: they complete only if `pool` of
    # them run at the same time.
    recorder.barrier = asyncio.Barrier(pool)
    config = config_for(subjects, tmp_path, parallel_pool_size=pool, parallel_queue_size=8)
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    try:
        tools = ["session_trace", "session_event_trace", "session_event_read"]
        results = await asyncio.gather(
            *(
                call(nc, subjects, tools[i % 3], body(tag=f"r{i}", barrier=True))
                for i in range(pool * 2)
            )
        )
    finally:
        await worker.stop()
    assert [r["status"] for r, _ in results] == ["ok"] * (pool * 2)
    assert recorder.max_running["parallel"] == pool


async def test_overload_is_answered_at_once_while_the_pool_is_busy(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder = Recorder()
    config = config_for(subjects, tmp_path, parallel_pool_size=2, parallel_queue_size=1)
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    try:
        held = [
            asyncio.create_task(
                call(nc, subjects, "session_event_read", body(tag=f"h{i}", hold=True))
            )
            for i in range(3)
        ]
        await recorder.wait_started_count(2)
        await until(lambda: worker.in_flight().total >= 3)
        reply, msg = await call(nc, subjects, "session_trace", body("r-over", tag="over"))
        # The held requests are still running: the overload answer did not wait for them.
        assert not any(task.done() for task in held)
        assert reply["error"] == {
            "code": ErrorCode.OVERLOADED.value,
            "message": replies.OVERLOADED_MESSAGE,
        }
        assert reply["request_id"] == "r-over"
        assert msg.headers is not None and msg.headers["Nats-Service-Error-Code"] == "503"
        assert worker.parallel.overloaded == 1
        recorder.release.set()
        done = await asyncio.gather(*held)
        assert [r["status"] for r, _ in done] == ["ok"] * 3
        assert "over" not in recorder.started
    finally:
        recorder.release.set()
        await worker.stop()


async def test_two_workers_share_searches_and_reads(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    connections = [await open_connection(nats_url) for _ in range(3)]
    requester, nc_a, nc_b = connections
    workers: list[Worker] = []

    async def answered_by(tool: str, count: int, **fields: Any) -> Counter[str]:
        """Which workers answered ``count`` concurrent calls of ``tool``."""
        results = await asyncio.gather(
            *(
                call(requester, subjects, tool, body(tag=f"{tool}{i}", **fields))
                for i in range(count)
            )
        )
        assert all(r["status"] == "ok" for r, _ in results)
        return Counter(r["content"].rsplit(" ", 1)[-1] for r, _ in results)

    read_by: Counter[str] = Counter()
    search_by: Counter[str] = Counter()
    try:
        for nc_w, label in ((nc_a, "A"), (nc_b, "B")):
            workers.append(
                await Worker.start(
                    nc_w,
                    config_for(subjects, tmp_path, parallel_queue_size=32),
                    tools=serving(make_toolset(Recorder(label=label))),
                )
            )
        # Bursts until both have answered, at most four: one CI run saw a single burst of
        # 30 reads all go to one worker on a loaded server. Four bursts that all miss a
        # worker mean the queue group does not share.
        for _ in range(4):
            read_by += await answered_by("session_event_read", 30)
            # Searches of 50 ms each, one at a time per worker: both workers take part.
            search_by += await answered_by("session_search", 8, sleep=0.05)
            if set(read_by) == set(search_by) == {"A", "B"}:
                break
    finally:
        for worker in workers:
            await worker.stop()
        for conn in connections:
            await conn.close()
    assert set(read_by) == {"A", "B"}, read_by
    assert set(search_by) == {"A", "B"}, search_by


@pytest.mark.parametrize("tool", ["session_search", "session_trace"])
async def test_a_request_past_its_deadline_is_not_started(
    nc: NATS, subjects: Subjects, tmp_path: Path, tool: str
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        reply, msg = await call(
            nc, subjects, tool, body("r-late", tag="late", deadline_ms=now_ms() - 1000)
        )
    finally:
        await worker.stop()
    assert reply["error"] == {
        "code": ErrorCode.TIMEOUT.value,
        "message": replies.QUEUE_TIMEOUT_MESSAGE,
    }
    assert msg.headers is not None and msg.headers["Nats-Service-Error-Code"] == "504"
    assert recorder.started == []


async def test_a_full_search_queue_answers_overloaded_at_once(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    recorder = Recorder()
    config = config_for(subjects, tmp_path, search_queue_max_msgs=2)
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    try:
        running = asyncio.create_task(
            call(nc, subjects, "session_search", body(tag="run", hold=True))
        )
        await recorder.wait_started("run")
        waiting = asyncio.create_task(call(nc, subjects, "session_search", body(tag="wait")))
        js = nc.jetstream()

        async def two_in_stream() -> bool:
            return (await js.stream_info(subjects.search_stream)).state.messages == 2

        await until(two_in_stream)
        reply, msg = await call(nc, subjects, "session_event_search", body("r-full", tag="x"))
        assert not running.done()
        assert reply["error"] == {
            "code": ErrorCode.OVERLOADED.value,
            "message": replies.OVERLOADED_MESSAGE,
        }
        assert msg.headers is not None and msg.headers["Nats-Service-Error-Code"] == "503"
        recorder.release.set()
        assert (await running)[0]["status"] == "ok"
        assert (await waiting)[0]["status"] == "ok"
    finally:
        recorder.release.set()
        await worker.stop()
    assert "x" not in recorder.started
