"""What the reliability tests share: worker processes, a paced event feed, a requester that
accounts for every request, and the index-versus-stream comparison.

Over 400 lines: the reliability tests' processes, feed and accounting, shared.

Everything here is loopback only and bounded; a process is only ever signalled by the pid
this module started.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import nats.errors
import nats.js.errors
import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig

from bench import corpus
from bench.loadgen import DEFAULT_MIX, RequestMaker, read_rss_kib
from bench.report import Latency
from contracts import streams
from contracts.subjects import Subjects
from tests._events import routes_for
from tests._harness import until
from tests._index import index_seq
from worker.store.files.integrity import check_integrity, checksum_of, content_checksum

T = TypeVar("T")
REPO: Final = Path(__file__).resolve().parents[2]
# Outcomes that are not a tool reply.
NO_REPLY: Final = "NO_REPLY"
NO_RESPONDERS: Final = "NO_RESPONDERS"
OK: Final = "ok"
# A caller backs off this long after no reply or no responders: longer than the worker's
# reconnect wait (0.5 s + 0.1 s jitter, worker.transport.connection), so while the worker
# re-subscribes after an outage a lane sees "no responders" once or twice, not every 50 ms.
OUTAGE_BACKOFF_S: Final = 1.0
# What one fault (a server restart, a node killed) can cost one MixedLoad lane, which has
# one request in flight at a time: that request lost with the connection (NO_REPLY, then the
# lane waits wait_s), up to two "no responders" while the worker re-subscribes (the backoff
# above), and one search whose enqueue gave up while JetStream was away (OVERLOADED).
OUTAGE_PER_LANE_PER_FAULT: Final = 4


# -- worker processes ----------------------------------------------------------------------


@dataclass
class WorkerProcess:
    """One ``tests._worker_main`` child; signals only its own pid."""

    url: str
    subjects: Subjects
    db: Path
    log: Path
    label: str = "w"
    config: Mapping[str, int] = field(default_factory=dict)
    # The N-th fetched search waits ``hold_s`` before it runs (a slow backend); with
    # ``hold_s`` 0 it hangs (a stuck backend), to be killed holding it.
    hold_fetch: int = 0
    hold_s: float = 0.0
    process: asyncio.subprocess.Process | None = field(default=None, init=False)
    pid: int = field(default=0, init=False)
    # stdout after READY: ``FETCHED <label> <rid> <delivered>`` and ``HOLDING <label> <rid>``.
    lines: list[str] = field(default_factory=list, init=False)
    _reader: asyncio.Task[None] | None = field(default=None, init=False)

    async def start(self, ready_s: float = 60.0) -> int:
        spec = {
            "url": self.url,
            "subjects": dataclasses.asdict(self.subjects),
            "db": str(self.db),
            "label": self.label,
            "config": dict(self.config),
            "trace": True,
            "hold_fetch": self.hold_fetch,
            "hold_s": self.hold_s,
        }
        env = {**os.environ, "PYTHONPATH": str(REPO), "SESSIONQUERY_LOG_LEVEL": "debug"}
        with self.log.open("ab") as err:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests._worker_main",
                orjson.dumps(spec).decode(),
                cwd=REPO,
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
            )
        assert self.process.stdout is not None
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), ready_s)
        except TimeoutError:
            await self.kill()
            raise AssertionError(f"worker {self.label} not ready in {ready_s} s") from None
        if not line.startswith(b"READY"):
            await self.kill()
            raise AssertionError(f"worker {self.label} did not start:\n{self.log_tail()}")
        self.pid = self.process.pid
        self._reader = asyncio.create_task(self._read(self.process.stdout))
        return self.pid

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        while line := await stdout.readline():
            self.lines.append(line.decode().strip())

    def fetched(self) -> list[tuple[str, str, int]]:
        """(label, request id, delivery count) of every search this process fetched."""
        out = []
        for line in self.lines:
            if line.startswith("FETCHED "):
                _, label, rid, delivered = line.split()
                out.append((label, rid, int(delivered)))
        return out

    async def wait_holding(self, within: float = 30.0) -> str:
        """The request id this process is holding (``hold_fetch``)."""

        def holding() -> str | None:
            for line in self.lines:
                if line.startswith("HOLDING "):
                    return line.split()[2]
            return None

        return await poll(lambda: value_of(holding()), lambda rid: rid is not None, within) or ""

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def kill(self) -> None:
        """SIGKILL (our own child, by pid) and reap it."""
        if self.alive:
            assert self.process is not None
            os.kill(self.process.pid, signal.SIGKILL)
            await self.process.wait()

    def pause(self) -> None:
        """SIGSTOP (our own child, by pid): its event loop stops, the kernel and the server
        hold what arrives meanwhile."""
        assert self.process is not None and self.alive
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        if self.alive:
            assert self.process is not None
            os.kill(self.process.pid, signal.SIGCONT)

    async def stop(self, grace_s: float = 30.0) -> int | None:
        """SIGTERM and wait (graceful stop); SIGKILL after ``grace_s``."""
        if self.process is None:
            return None
        if self.process.returncode is None:
            self.resume()  # a paused process would not act on SIGTERM
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), grace_s)
            except TimeoutError:
                await self.kill()
        return self.process.returncode

    def rss_kib(self) -> int:
        found = read_rss_kib(self.pid)
        return found[0] if found else 0

    def log_lines(self) -> Iterator[dict[str, Any]]:
        if not self.log.exists():
            return
        with self.log.open("rb") as fh:
            for raw in fh:
                with contextlib.suppress(orjson.JSONDecodeError):
                    value = orjson.loads(raw)
                    if isinstance(value, dict):
                        yield value

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


async def value_of(value: T) -> T:
    """An awaitable of a value at hand, for ``poll`` probes of plain state."""
    return value


def accepted_searches(workers: Sequence[WorkerProcess]) -> set[str]:
    """Request ids the search lane put on the work queue (JetStream acknowledged them)."""
    return {
        str(line["request_id"])
        for w in workers
        for line in w.log_lines()
        if line.get("event") == "search enqueued"
    }


async def poll(
    probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool], within: float, every: float = 0.1
) -> T:
    """Probe every ``every`` s until ``ok`` (a bounded wait, not a timing assertion)."""
    deadline = time.monotonic() + within
    while True:
        got = await probe()
        if ok(got):
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"still {got!r} after {within} s")
        await asyncio.sleep(every)


async def wait_indexed(db: Path, seq: int, within: float = 60.0) -> None:
    await poll(lambda: asyncio.to_thread(index_seq, db), lambda got: got >= seq, within)


# -- the events stream ----------------------------------------------------------------------


async def ensure_events_stream(js: Any, subjects: Subjects, replicas: int = 1) -> None:
    """The SESSIONS stream as everything creates it, with ``replicas``."""
    await streams.ensure_events_stream(js, subjects, replicas=replicas)


class EventFeed:
    """Publishes a corpus paced, retrying each event (same ``Nats-Msg-Id``) through outages,
    so the stream ends up holding each event exactly once whatever the faults."""

    def __init__(self, nc: NATS, subjects: Subjects, config: corpus.CorpusConfig) -> None:
        self.nc = nc
        self.subjects = subjects
        self.config = config
        self.published = 0
        self.retries = 0
        self._task: asyncio.Task[None] | None = None

    def start(self, rate: float = 400.0, burst: int = 25) -> None:
        self._task = asyncio.create_task(self._run(rate, burst))

    @property
    def running(self) -> bool:
        """Started and still publishing."""
        return self._task is not None and not self._task.done()

    async def wait(self, within: float = 120.0) -> int:
        assert self._task is not None
        await asyncio.wait_for(self._task, within)
        return self.published

    async def _run(self, rate: float, burst: int) -> None:
        js = self.nc.jetstream()
        events = corpus.generate(self.config)
        while chunk := [e for _, e in zip(range(burst), events, strict=False)]:
            # Per session in order (a gap would be dead-lettered), sessions side by side.
            by_session: dict[str, list[dict[str, Any]]] = {}
            for event in chunk:
                by_session.setdefault(event["session_id"], []).append(event)
            await asyncio.gather(*(self._in_order(js, evs) for evs in by_session.values()))
            await asyncio.sleep(burst / rate)

    async def _in_order(self, js: Any, events: list[dict[str, Any]]) -> None:
        for event in events:
            await self._one(js, event)

    async def _one(self, js: Any, event: dict[str, Any]) -> None:
        subject = routes_for(self.subjects).subject(event)
        data = corpus.encode(event)
        headers = {"Nats-Msg-Id": corpus.msg_id(event)}
        delay = 0.05
        while True:
            try:
                await js.publish(subject, data, headers=headers, timeout=2.0)
                self.published += 1
                return
            except Exception:  # an outage: the same id again, deduplicated by the stream
                self.retries += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)


async def seed_then_start(
    nc: NATS, subjects: Subjects, base: corpus.CorpusConfig, worker: WorkerProcess
) -> EventFeed:
    """Publish ``base`` to the events stream, start ``worker``, wait until it indexed all."""
    await ensure_events_stream(nc.jetstream(), subjects)
    feed = EventFeed(nc, subjects, base)
    feed.start(rate=5000)
    await feed.wait()
    await worker.start()
    await wait_indexed(worker.db, feed.published)
    return feed


async def stream_contents(nc: NATS, subjects: Subjects) -> list[tuple[str, int, str]]:
    """What the events stream holds, read back through a temporary consumer."""
    for attempt in range(5):
        try:
            return await _read_stream(nc, subjects)
        except (nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError):
            # A cluster that just lost a node can be slow to create the consumer, or answer
            # a fetch with 503 while the stream moves its leader; this is the test reading
            # its evidence, so it may ask again.
            if attempt == 4:
                raise
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")


async def _read_stream(nc: NATS, subjects: Subjects) -> list[tuple[str, int, str]]:
    js = nc.jetstream()
    total = (await js.stream_info(subjects.events_stream)).state.messages
    psub = await js.pull_subscribe(
        subjects.events_wildcard,
        stream=subjects.events_stream,
        config=ConsumerConfig(ack_policy=AckPolicy.NONE, mem_storage=True, num_replicas=1),
    )
    held: list[tuple[str, int, str]] = []
    try:
        while len(held) < total:
            for msg in await psub.fetch(1000, timeout=10):
                value = orjson.loads(msg.data)
                held.append((value["session_id"], value["seq"], msg.data.decode()))
    finally:
        with contextlib.suppress(Exception):
            await psub.unsubscribe()
    return held


@dataclass(frozen=True, slots=True)
class IngestCheck:
    stream_events: int
    indexed_events: int
    distinct_in_stream: int
    checksum_equal: bool
    integrity_problems: tuple[str, ...]

    def assert_exact(self, published: int) -> None:
        """Zero lost or doubled: the index holds what the stream holds, once each, intact."""
        assert self.stream_events == self.distinct_in_stream == published, self
        assert self.indexed_events == published, self
        assert self.checksum_equal, self
        assert self.integrity_problems == (), self


async def check_ingest(nc: NATS, subjects: Subjects, db: Path, expected: int) -> IngestCheck:
    """The index against the stream: counts, checksum, SQLite and search index integrity."""
    js = nc.jetstream()
    last = (await js.stream_info(subjects.events_stream)).state.last_seq
    await wait_indexed(db, last)
    held = await stream_contents(nc, subjects)
    indexed = await asyncio.to_thread(content_checksum, db)
    return IngestCheck(
        stream_events=len(held),
        indexed_events=indexed[0],
        distinct_in_stream=len({(s, q) for s, q, _ in held}),
        checksum_equal=indexed == checksum_of(held),
        integrity_problems=tuple(await asyncio.to_thread(check_integrity, db)),
    )


# -- requests ------------------------------------------------------------------------------


class Requester:
    """Sends tool requests to one long-lived inbox, so every reply (even a late or a second
    one) is seen and matched to its request id."""

    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        self.nc = nc
        self.subjects = subjects
        self.inbox = nc.new_inbox()
        self.replies: dict[str, list[str]] = {}
        self._waiting: dict[str, asyncio.Future[str]] = {}

    async def open(self) -> Requester:
        await self.nc.subscribe(self.inbox + ".*", cb=self._on_reply)
        await self.nc.flush()
        return self

    async def _on_reply(self, msg: Msg) -> None:
        rid = msg.subject.rsplit(".", 1)[-1]
        outcome = _outcome(msg)
        self.replies.setdefault(rid, []).append(outcome)
        waiter = self._waiting.pop(rid, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(outcome)

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        caller: str,
        *,
        deadline_s: float,
        wait_s: float,
        request_id: str | None = None,
    ) -> tuple[str, str]:
        """(request id, outcome): ``ok``, an error code, NO_RESPONDERS or NO_REPLY."""
        rid = request_id or "r-" + uuid.uuid4().hex[:20]
        body = orjson.dumps(
            {
                "request_id": rid,
                "execution": {
                    "agent": {"session_id": caller},
                    "deadline_ms": int((time.time() + deadline_s) * 1000),
                },
                "arguments": dict(arguments),
            }
        )
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = waiter
        try:
            await self.nc.publish(self.subjects.tool(tool), body, reply=f"{self.inbox}.{rid}")
            return rid, await asyncio.wait_for(waiter, wait_s)
        except TimeoutError:
            return rid, NO_REPLY
        finally:
            self._waiting.pop(rid, None)


def _outcome(msg: Msg) -> str:
    if not msg.data and msg.headers and msg.headers.get("Status") == "503":
        return NO_RESPONDERS
    try:
        value = orjson.loads(msg.data)
    except orjson.JSONDecodeError:
        return "MALFORMED"
    if value.get("status") == "ok":
        return OK
    return str((value.get("error") or {}).get("code", "MALFORMED"))


@dataclass
class Tally:
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    by_request: dict[str, tuple[str, str]] = field(default_factory=dict)  # rid -> (tool, first)
    latencies: dict[str, list[float]] = field(default_factory=dict)

    def add(self, tool: str, rid: str, outcome: str, seconds: float) -> None:
        self.outcomes.setdefault(tool, Counter())[outcome] += 1
        self.by_request[rid] = (tool, outcome)
        if outcome not in (NO_REPLY, NO_RESPONDERS):
            self.latencies.setdefault(tool, []).append(seconds)

    def total(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for c in self.outcomes.values():
            out.update(c)
        return out

    def latency(self, tool: str) -> Latency:
        return Latency.of(self.latencies.get(tool, []))

    def summary(self) -> dict[str, Any]:
        return {
            "sent": len(self.by_request),
            "outcomes": dict(self.total()),
            "per_tool": {
                t: {
                    "outcomes": dict(c),
                    "p50_ms": round(self.latency(t).p50, 1),
                    "p99_ms": round(self.latency(t).p99, 1),
                }
                for t, c in self.outcomes.items()
            },
        }


class MixedLoad:
    """``lanes`` concurrent callers sending the five tools in the loadgen mix until stopped
    or ``requests`` are sent; every request is awaited to an outcome."""

    def __init__(
        self,
        requester: Requester,
        plans: Sequence[corpus.SessionPlan],
        *,
        lanes: int = 6,
        requests: int = 2000,
        deadline_s: float = 20.0,
        wait_s: float = 30.0,
        seed: int = 3,
        mix: Mapping[str, float] = DEFAULT_MIX,
        short_deadline_s: float = 1.5,
        short_share: float = 0.0,
    ) -> None:
        self.requester = requester
        self.maker = RequestMaker(plans, foreign_share=0.05, seed=seed)
        self.lanes = lanes
        self.budget = requests
        self.deadline_s = deadline_s
        self.wait_s = wait_s
        self.mix = mix
        # A share of callers in a hurry: their searches may expire while queued (TIMEOUT).
        self.short_deadline_s = short_deadline_s
        self.short_share = short_share
        self._rng = random.Random(seed)
        self.tally = Tally()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._lane()) for _ in range(self.lanes)]

    async def stop(self) -> Tally:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        return self.tally

    async def _lane(self) -> None:
        while not self._stop.is_set() and self.budget > 0:
            self.budget -= 1
            tool = self.maker.tool(self.mix)
            arguments, caller = self.maker.request(tool)
            t0 = time.perf_counter()
            short = self._rng.random() < self.short_share
            deadline_s = self.short_deadline_s if short else self.deadline_s
            rid, outcome = await self.requester.call(
                tool, arguments, caller.session_id, deadline_s=deadline_s, wait_s=self.wait_s
            )
            self.tally.add(tool, rid, outcome, time.perf_counter() - t0)
            if outcome in (NO_REPLY, NO_RESPONDERS):
                await asyncio.sleep(OUTAGE_BACKOFF_S)  # a caller backs off while nobody answers

    def sent(self) -> int:
        return len(self.tally.by_request)

    def outage_bound(self, faults: int) -> int:
        """The most outage outcomes ``faults`` faults can cause (OUTAGE_PER_LANE_PER_FAULT)."""
        return self.lanes * faults * OUTAGE_PER_LANE_PER_FAULT


async def until_sent(load: MixedLoad, count: int, within: float = 60.0) -> None:
    await until(lambda: load.sent() >= count, within)


async def search_queue_state(nc: NATS, subjects: Subjects) -> tuple[int, int, int, int]:
    """(accepted ever, still in the stream, consumer pending, consumer ack pending)."""
    js = nc.jetstream()
    info = await js.stream_info(subjects.search_stream)
    consumer = await js.consumer_info(subjects.search_stream, subjects.search_consumer)
    return (
        int(info.state.last_seq),
        int(info.state.messages),
        int(consumer.num_pending or 0),
        int(consumer.num_ack_pending or 0),
    )


async def drained(nc: NATS, subjects: Subjects, within: float = 60.0) -> None:
    """Wait until every accepted search was acked or terminated."""

    async def empty() -> bool:
        try:
            _, messages, pending, ack_pending = await search_queue_state(nc, subjects)
        except Exception:
            return False
        return messages == 0 and pending == 0 and ack_pending == 0

    await poll(empty, bool, within)


def small_corpus(sessions: int = 24, events: int = 40, seed: int = 7) -> corpus.CorpusConfig:
    return corpus.CorpusConfig(sessions=sessions, events=events, workspaces=4, seed=seed)


def extra_corpus(base: corpus.CorpusConfig, sessions: int, seed: int) -> corpus.CorpusConfig:
    """New sessions in the same workspaces, published while the load runs."""
    return corpus.CorpusConfig(
        sessions=sessions, events=base.events, workspaces=base.workspaces, seed=seed
    )
