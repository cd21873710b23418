"""Helpers for the runtime tests: a small configurable ToolSet and request plumbing.

The tools here stand in for the real ones so the lanes can be tested on their own: they
record when they start and end, can hold until released or cancelled, produce text of a
given size, and fail on request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from contracts.client import NO_RESPONDERS_RETRY_S
from contracts.envelope import Execution
from contracts.errors import ErrorCode
from contracts.partitions import PartitionScope
from contracts.subjects import Subjects
from tests._events import event_dict, routes_for
from worker.config import WorkerConfig
from worker.signals import DeadlineExceeded, ExecutionSignal
from worker.tools.definitions import ExecutionMode, ToolDefinition, ToolError, ToolSet
from worker.worker import Served, ToolSource, Worker

SEARCHES = ("session_search", "session_event_search")
EXACT = ("session_trace", "session_event_trace", "session_event_read")


@dataclass
class Recorder:
    """What the test tools saw; shared by every tool of one ToolSet."""

    label: str = "w"
    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    running: int = 0
    max_running: dict[str, int] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    started_event: asyncio.Event = field(default_factory=asyncio.Event)
    barrier: asyncio.Barrier | None = None
    echo_started: bool = False  # print STARTED lines (for the subprocess worker)

    async def wait_started(self, tag: str, within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while tag not in self.started:
                self.started_event.clear()
                await self.started_event.wait()

    async def wait_started_count(self, count: int, within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while len(self.started) < count:
                self.started_event.clear()
                await self.started_event.wait()


async def _abortable(signal: ExecutionSignal, awaitable: Any) -> None:
    """Await ``awaitable`` unless the signal fires first; then raise like a real tool."""
    task = asyncio.ensure_future(awaitable)
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
        aborted.cancel()
    if signal.error is not None:
        if isinstance(signal.error, DeadlineExceeded):
            raise ToolError(ErrorCode.TIMEOUT, "The search deadline passed.")
        raise ToolError(ErrorCode.CANCELLED, signal.error.reason)


def make_tool(name: str, recorder: Recorder) -> ToolDefinition:
    mode: ExecutionMode = "exclusive" if name in SEARCHES else "parallel"

    async def run(args: Mapping[str, Any], execution: Execution, signal: ExecutionSignal) -> str:
        tag = str(args.get("tag", ""))
        recorder.started.append(tag)
        recorder.running += 1
        recorder.max_running[mode] = max(recorder.max_running.get(mode, 0), recorder.running)
        recorder.started_event.set()
        if recorder.echo_started:
            print(f"STARTED {tag}", flush=True)
        try:
            if args.get("raise") == "internal":
                raise RuntimeError("secret internal detail: /var/db/index.sqlite locked")
            if args.get("raise") == "tool_error":
                raise ToolError(ErrorCode.NOT_FOUND, "No such session in this workspace.")
            if args.get("barrier") and recorder.barrier is not None:
                await _abortable(signal, recorder.barrier.wait())
            hold_in = args.get("hold_in")
            if args.get("hold") or (hold_in is not None and hold_in == recorder.label):
                await _abortable(signal, recorder.release.wait())
            if sleep := args.get("sleep"):
                await _abortable(signal, asyncio.sleep(float(sleep)))
            if size := args.get("size"):
                return text_of_size(int(size))
            return f"{name} {tag} by {recorder.label}"
        finally:
            recorder.running -= 1
            recorder.finished.append(tag)

    return ToolDefinition(
        name=name,
        description=f"test stand-in for {name}",
        input_schema={"type": "object", "properties": {"tag": {"type": "string"}}},
        execution=mode,
        run=run,
    )


def make_toolset(recorder: Recorder) -> ToolSet:
    names = (*SEARCHES, *EXACT)
    return ToolSet(tools=tuple(make_tool(n, recorder) for n in names), prompt_section="test prompt")


def serving(toolset: ToolSet) -> ToolSource:
    """A tool source with no index of the worker's own: the runtime served over ``toolset``
    (the recording stand-ins), for tests of the lanes, the service and shutdown. The same
    stand-ins answer each partition's subjects (a requester routing by cwd reaches them)."""

    def scoped(scope: PartitionScope) -> ToolSet:
        tools = tuple(dataclasses.replace(t, partition=scope.partition) for t in toolset.tools)
        return dataclasses.replace(toolset, tools=tools)

    async def source(*_: object) -> Served:
        return Served(toolset, scoped=scoped)

    return source


async def start_recorded_worker(
    nc: NATS, subjects: Subjects, tmp_path: Path, **config: Any
) -> tuple[Recorder, Worker]:
    """A worker without an index, running the recording test tools; the caller stops it."""
    recorder = Recorder()
    worker = await Worker.start(
        nc,
        config_for(subjects, tmp_path, **config),
        tools=serving(make_toolset(recorder)),
    )
    return recorder, worker


def text_of_size(size: int) -> str:
    """Numbered lines of ASCII (with one multi-byte char per line), exactly ``size`` bytes."""
    lines: list[str] = []
    total = 0
    n = 0
    while total < size:
        line = f"line {n:06d} é {'x' * 80}\n"
        lines.append(line)
        total += len(line.encode())
        n += 1
    data = "".join(lines).encode()[:size]
    return data.decode("utf-8", errors="ignore")


@contextlib.asynccontextmanager
async def sample_corpus_worker(
    nc: NATS, subjects: Subjects, tmp_path: Path, **config: Any
) -> AsyncIterator[Worker]:
    """The sample corpus published (as ``sessionquery demo`` does) and a worker with the
    real tools that has indexed all of it; stopped on exit."""
    from worker.commands.sample_publish import publish_sample_corpus

    _, last = await publish_sample_corpus(nc, subjects)
    worker = await Worker.start(nc, config_for(subjects, tmp_path, **config))
    try:

        async def indexed() -> bool:
            return (await worker.indexed_through() or 0) >= last

        await until(indexed, within=30)
        yield worker
    finally:
        await worker.stop()


def config_for(subjects: Subjects, tmp_path: Path, **over: Any) -> WorkerConfig:
    values: dict[str, Any] = {
        "db_path": tmp_path / f"index-{uuid.uuid4().hex[:6]}.sqlite",
        "subjects": subjects,
        "parallel_pool_size": 4,
        "parallel_queue_size": 4,
        "search_ack_wait_ms": 5_000,
        "shutdown_grace_ms": 10_000,
    }
    values.update(over)
    return WorkerConfig(**values)


def body(request_id: str | None = None, **arguments: Any) -> bytes:
    """An envelope; ``deadline_ms`` and ``caller`` go to ``execution``, the rest are
    the tool's arguments."""
    deadline_ms = arguments.pop("deadline_ms", None)
    caller = arguments.pop("caller", "s-caller")
    execution: dict[str, Any] = {"agent": {"session_id": caller}}
    if deadline_ms is not None:
        execution["deadline_ms"] = deadline_ms
    return orjson.dumps(
        {
            "request_id": request_id or new_id(),
            "execution": execution,
            "arguments": arguments,
        }
    )


def new_id() -> str:
    return "r-" + uuid.uuid4().hex[:16]


def now_ms() -> int:
    return int(time.time() * 1000)


async def call(
    nc: NATS, subjects: Subjects, tool: str, data: bytes, within: float = 15.0
) -> tuple[dict[str, Any], Msg]:
    """A plain NATS request, retrying "no responders" within ``NO_RESPONDERS_RETRY_S`` as
    ``SessionQueryClient`` does: right after a worker starts, a loaded server was seen to
    answer a first request "no responders" (full-suite runs after tests/reliability), and
    the request then never reached the worker. Nothing is delivered on that answer."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + NO_RESPONDERS_RETRY_S
    while True:
        try:
            msg = await nc.request(subjects.tool(tool), data, timeout=within)
        except NoRespondersError:
            if loop.time() >= give_up:
                raise
            await asyncio.sleep(0.02)
            continue
        return orjson.loads(msg.data), msg


async def cancel(
    nc: NATS,
    subjects: Subjects,
    request_id: str,
    reason: str,
    *,
    caller: str | None = "s-caller",
    agent_id: str | None = None,
) -> None:
    """Publish a cancel; by default with the identity ``body`` gives its requests."""
    message: dict[str, Any] = {"request_id": request_id, "reason": reason}
    if caller is not None:
        agent: dict[str, Any] = {"session_id": caller}
        if agent_id is not None:
            agent["agent_id"] = agent_id
        message["agent"] = agent
    await nc.publish(subjects.cancel, orjson.dumps(message))
    await nc.flush()


def python() -> str:
    return sys.executable


async def until(predicate: Callable[[], Awaitable[bool] | bool], within: float = 10.0) -> None:
    """Wait until ``predicate`` holds (a bounded wait, not a timing assertion)."""
    async with asyncio.timeout(within):
        while True:
            result = predicate()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return
            await asyncio.sleep(0.01)


# -- events over the real stream ------------------------------------------------------------


def event(session_id: str, seq: int, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An event as the runtime tests publish it (user surface for user messages)."""
    surface = "user" if type_ == "message/user" else "system"
    time = f"2026-12-01T10:00:{seq % 60:02d}.000Z"
    return event_dict(session_id, seq, type_, surface=surface, time=time, payload=payload)


async def publish(nc: NATS, subjects: Subjects, events: list[dict[str, Any]]) -> None:
    """Publish ``events`` to the stream in order, deduplicated by session and seq."""
    js = nc.jetstream()
    for item in events:
        await js.publish(
            routes_for(subjects).subject(item),
            orjson.dumps(item),
            headers={"Nats-Msg-Id": f"{item['session_id']}:{item['seq']}"},
        )
