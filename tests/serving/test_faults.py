"""Faults: graceful stop mid-load, a worker killed mid-search, poison messages, reconnects."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from structlog.testing import capture_logs

from contracts.errors import TOOL_FAILED_MESSAGE, ErrorCode
from contracts.subjects import Subjects
from tests._harness import (
    Recorder,
    body,
    call,
    config_for,
    make_toolset,
    python,
    serving,
    until,
)
from worker.serving import queue_encoding
from worker.serving.search_lane import MSG_ID_HEADER
from worker.transport.connection import open_connection
from worker.transport.embedded_server import EmbeddedNatsServer
from worker.worker import Worker

REPO = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def worker_process(
    url: str, subjects: Subjects, tmp_path: Path, label: str, **config: Any
) -> AsyncIterator[tuple[asyncio.subprocess.Process, asyncio.StreamReader]]:
    spec = {
        "url": url,
        "subjects": dataclasses.asdict(subjects),
        "label": label,
        "tools": "recorded",
        "tmp": str(tmp_path),
        "config": config,
    }
    proc = await asyncio.create_subprocess_exec(
        python(),
        "-m",
        "tests._worker_main",
        orjson.dumps(spec).decode(),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        await wait_line(proc.stdout, "READY", within=20)
        yield proc, proc.stdout
    finally:
        if proc.returncode is None:
            os.kill(proc.pid, signal.SIGKILL)  # only our own child, by pid
            await proc.wait()


async def wait_line(stream: asyncio.StreamReader, text: str, within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while True:
            line = await stream.readline()
            if not line:
                raise AssertionError(f"process ended before printing {text!r}")
            if line.decode().strip() == text:
                return


async def test_stop_mid_load_answers_every_request_it_holds(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    requester = await open_connection(nats_url)
    nc_w = await open_connection(nats_url)
    recorder = Recorder(label="A")
    config = config_for(subjects, tmp_path, parallel_pool_size=4, parallel_queue_size=16)
    worker = await Worker.start(nc_w, config, tools=serving(make_toolset(recorder)))
    try:
        # Long enough that all 13 are held at once even when the search's pass through the
        # work queue is slow on a loaded machine (0.2 s was seen to miss the overlap).
        reads = [
            asyncio.create_task(
                call(requester, subjects, "session_event_read", body(tag=f"r{i}", sleep=1.0))
            )
            for i in range(12)
        ]
        search = asyncio.create_task(
            call(requester, subjects, "session_search", body(tag="s0", sleep=1.5))
        )
        await until(lambda: worker.in_flight().total == 13)
        await worker.stop()
        assert worker.in_flight().total == 0
        results = await asyncio.gather(*reads, search)
    finally:
        await worker.stop()
        await nc_w.close()
        await requester.close()
    assert [r["status"] for r, _ in results] == ["ok"] * 13
    assert len(recorder.finished) == 13


async def test_stop_leaves_queued_searches_for_the_next_worker(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    requester = await open_connection(nats_url)
    nc_a, nc_b = await open_connection(nats_url), await open_connection(nats_url)
    rec_a = Recorder(label="A")
    worker_a = await Worker.start(
        nc_a,
        config_for(subjects, tmp_path),
        tools=serving(make_toolset(rec_a)),
    )
    worker_b: Worker | None = None
    try:
        # Long enough that the three below are queued behind it even on a loaded machine.
        running = asyncio.create_task(
            call(requester, subjects, "session_search", body(tag="s0", sleep=1.0))
        )
        await rec_a.wait_started("s0")
        queued = [
            asyncio.create_task(call(requester, subjects, "session_search", body(tag=f"q{i}")))
            for i in range(3)
        ]
        js = requester.jetstream()

        async def all_queued() -> bool:
            return (await js.stream_info(subjects.search_stream)).state.messages >= 4

        await until(all_queued)
        await worker_a.stop()
        assert (await running)[0]["content"].endswith("by A")
        worker_b = await Worker.start(
            nc_b,
            config_for(subjects, tmp_path),
            tools=serving(make_toolset(Recorder("B"))),
        )
        results = await asyncio.gather(*queued)
    finally:
        await worker_a.stop()
        if worker_b is not None:
            await worker_b.stop()
        for conn in (requester, nc_a, nc_b):
            await conn.close()
    assert [r["status"] for r, _ in results] == ["ok"] * 3
    # Nothing was lost in the hand-over; whoever ran them answered.
    assert all(r["content"].endswith(("by A", "by B")) for r, _ in results)


async def test_a_search_on_a_killed_worker_is_redelivered_and_answered_by_another(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    requester = await open_connection(nats_url)
    nc_b = await open_connection(nats_url)
    worker_b: Worker | None = None
    try:
        async with worker_process(nats_url, subjects, tmp_path, "A", search_ack_wait_ms=2000) as (
            proc,
            out,
        ):
            pending = asyncio.create_task(
                call(
                    requester,
                    subjects,
                    "session_search",
                    body("r-killed", tag="k", hold_in="A"),
                    within=30,
                )
            )
            await wait_line(out, "STARTED k")
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
            worker_b = await Worker.start(
                nc_b,
                config_for(subjects, tmp_path, search_ack_wait_ms=2000),
                tools=serving(make_toolset(Recorder(label="B"))),
            )
            reply, _ = await pending
    finally:
        if worker_b is not None:
            await worker_b.stop()
        await nc_b.close()
        await requester.close()
    assert reply == {
        "request_id": "r-killed",
        "status": "ok",
        "content": "session_search k by B",
    }


async def test_sigterm_mid_load_answers_the_requests_in_flight(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    requester = await open_connection(nats_url)
    try:
        async with worker_process(nats_url, subjects, tmp_path, "A") as (proc, out):
            pending = [
                asyncio.create_task(
                    call(requester, subjects, "session_trace", body(tag=f"t{i}", sleep=0.5))
                )
                for i in range(4)
            ]
            for _ in range(4):
                await wait_line_prefix(out, "STARTED t")
            proc.send_signal(signal.SIGTERM)
            await wait_line(out, "STOPPED", within=20)
            assert await proc.wait() == 0
            results = await asyncio.gather(*pending)
    finally:
        await requester.close()
    assert [r["status"] for r, _ in results] == ["ok"] * 4


async def wait_line_prefix(stream: asyncio.StreamReader, prefix: str) -> None:
    async with asyncio.timeout(10):
        while True:
            line = await stream.readline()
            if not line:
                raise AssertionError(f"process ended before printing {prefix!r}")
            if line.decode().startswith(prefix):
                return


async def test_a_poison_search_is_answered_tool_failed_on_its_last_delivery(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    config = config_for(subjects, tmp_path, search_ack_wait_ms=1000, search_max_deliver=2)
    recorder = Recorder()
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    await worker.stop()  # leaves the stream and consumer; nobody fetches now
    js = nc.jetstream()
    inbox = nc.new_inbox()
    replies_sub = await nc.subscribe(inbox)
    request = body("r-poison", tag="p")
    await js.publish(
        subjects.search_queue_subject("session_search"),
        queue_encoding.encode(request, inbox, None),
        headers={MSG_ID_HEADER: "r-poison"},
    )
    # A "worker" that takes the message and dies: it never acks.
    thief = await js.pull_subscribe_bind(
        durable=subjects.search_consumer, stream=subjects.search_stream
    )
    taken = await thief.fetch(1, timeout=5)
    assert taken[0].metadata.num_delivered == 1
    await thief.unsubscribe()
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    try:
        msg = await replies_sub.next_msg(timeout=15)
    finally:
        await worker.stop()
        await replies_sub.unsubscribe()
    assert orjson.loads(msg.data) == {
        "request_id": "r-poison",
        "status": "error",
        "error": {"code": ErrorCode.TOOL_FAILED.value, "message": TOOL_FAILED_MESSAGE},
    }
    assert recorder.started == []
    assert (await js.stream_info(subjects.search_stream)).state.messages == 0


async def test_a_search_queued_in_a_newer_format_is_left_then_given_up_not_run(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """A rolling upgrade: a message only a newer worker reads goes back for one (nak), and
    on its last delivery it is answered TOOL_FAILED and terminated, never run; one that
    expired is answered TIMEOUT at once."""
    config = config_for(subjects, tmp_path, search_ack_wait_ms=1000, search_max_deliver=2)
    recorder = Recorder()
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    js = nc.jetstream()
    inbox = nc.new_inbox()
    replies_sub = await nc.subscribe(inbox)
    newer = queue_encoding.QUEUE_FORMAT + 1
    with capture_logs() as logs:
        try:
            for rid, deadline_ms in (("r-newer", None), ("r-newer-expired", 1)):
                document = {
                    "v": newer,
                    "reply": inbox,
                    "deadline_ms": deadline_ms,
                    "request": {"request_id": rid},
                    "more": "a layout of v2",
                }
                await js.publish(
                    subjects.search_queue_subject("session_search"),
                    orjson.dumps(document),
                    headers={MSG_ID_HEADER: rid},
                )
            answers = {}
            for _ in range(2):
                msg = await replies_sub.next_msg(timeout=15)
                answer = orjson.loads(msg.data)
                answers[answer["request_id"]] = answer["error"]["code"]
        finally:
            await worker.stop()
            await replies_sub.unsubscribe()
    assert answers == {
        "r-newer": ErrorCode.TOOL_FAILED.value,
        "r-newer-expired": ErrorCode.TIMEOUT.value,
    }
    assert recorder.started == []
    assert (await js.stream_info(subjects.search_stream)).state.messages == 0
    left = [e for e in logs if e["event"].startswith("search queued in a newer format left")]
    assert [e["version"] for e in left] == [newer]  # the first delivery of r-newer only


async def test_searches_still_served_after_the_server_restarts(
    own_nats_server: EmbeddedNatsServer, subjects: Subjects, tmp_path: Path
) -> None:
    url = own_nats_server.url
    opts: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.2}
    nc_w = await open_connection(url, **opts)
    requester = await open_connection(url, **opts)
    worker = await Worker.start(
        nc_w,
        config_for(subjects, tmp_path),
        tools=serving(make_toolset(Recorder())),
    )
    try:
        assert (await call(requester, subjects, "session_search", body(tag="1")))[0]["status"]
        own_nats_server.stop()
        own_nats_server.start()
        await until(lambda: nc_w.is_connected and requester.is_connected, within=20)

        async def served() -> bool:
            try:
                reply, _ = await call(requester, subjects, "session_search", body(tag="2"), 2)
            except Exception:
                return False
            return bool(reply["status"] == "ok")

        await until(served, within=30)
        reply, _ = await call(requester, subjects, "session_event_read", body(tag="3"))
        assert reply["status"] == "ok"
    finally:
        await worker.stop()
        await nc_w.close()
        await requester.close()


async def test_in_progress_heartbeats_keep_a_long_search_from_redelivery(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    requester = await open_connection(nats_url)
    nc_a, nc_b = await open_connection(nats_url), await open_connection(nats_url)
    recorders = [Recorder(label="A"), Recorder(label="B")]
    workers: list[Worker] = []
    try:
        for conn, recorder in zip((nc_a, nc_b), recorders, strict=True):
            config = config_for(subjects, tmp_path, search_ack_wait_ms=600)
            workers.append(await Worker.start(conn, config, tools=serving(make_toolset(recorder))))
        # Runs for more than three ack_wait periods; the idle other worker is waiting.
        reply, _ = await call(requester, subjects, "session_search", body(tag="long", sleep=2.0))
    finally:
        for worker in workers:
            await worker.stop()
        for conn in (requester, nc_a, nc_b):
            await conn.close()
    assert reply["status"] == "ok"
    assert sum(r.started.count("long") for r in recorders) == 1
