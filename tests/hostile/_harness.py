"""Shared plumbing for the hostile-input tests: a real Worker over a real nats-server.

Over 400 lines: the hostile tests' one worker, requester and reply checks.

Hypothesis tests are synchronous, so the worker, its NATS connection and the requester
live on an event loop in a background thread (``LoopThread``); a test submits coroutines to
it. ``LiveWorker`` publishes events to a per-test SESSIONS stream, starts the composed
``Worker`` (real SQLite index, real tools), waits until the index has caught up, and calls
tools over NATS exactly as a runtime would. ``LogWatch`` captures the worker's structlog
lines so a test can assert that nothing went unhandled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson
import structlog
from nats.aio.client import Client as NATS
from structlog.typing import EventDict

from contracts.errors import ErrorCode
from contracts.subjects import Subjects
from tests._events import cite_list, event_dict, routes_for
from tests._subjects import unique_subjects
from worker.config import WorkerConfig
from worker.replica.ingest_consumer import ensure_events_stream
from worker.transport.connection import open_connection
from worker.worker import Worker

T = TypeVar("T")

KNOWN_CODES: Final = frozenset(code.value for code in ErrorCode)
# Text that would mean an internal error leaked into a reply (lower case).
LEAK_MARKERS: Final = (
    "sqlite",
    "fts5",
    "syntax error",
    "no such column",
    "malformed match",
    "unterminated string",
    "traceback",
    "errors.pydantic.dev",
    "operationalerror",
)
# Replies that say "nothing matched" (both search tools).
NO_MATCH_MARKERS: Final = ("No earlier session", "No event", "matches nothing", "removed every")


# -- the background loop ------------------------------------------------------------------


class LoopThread:
    """An asyncio loop in a daemon thread, for synchronous (hypothesis) tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="hostile-loop", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


# -- names and events ---------------------------------------------------------------------


def event(
    session_id: str,
    seq: int,
    type_: str,
    payload: Mapping[str, Any] | None = None,
    *,
    surface: str = "assistant",
    minute: int = 0,
    replaces: Iterable[int] = (),
    cites: Iterable[tuple[str, int]] = (),
) -> dict[str, Any]:
    value = event_dict(
        session_id,
        seq,
        type_,
        surface=surface,
        time=f"2026-12-01T10:{minute % 60:02d}:{seq % 60:02d}.000Z",
        payload=dict(payload or {}),
    )
    if positions := list(replaces):
        value["replaces"] = positions
    if sources := cite_list(cites):
        value["cites"] = sources
    return value


@dataclass
class SessionLog:
    """Builds one session's events with contiguous seqs."""

    session_id: str
    cwd: str | None
    parent: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        payload: dict[str, Any] = {"cwd": self.cwd}
        if self.parent is not None:
            payload["parent_session_id"] = self.parent
        self.events.append(event(self.session_id, 1, "session/start", payload, surface="system"))

    @property
    def last_seq(self) -> int:
        return len(self.events)

    def add(
        self,
        type_: str,
        payload: Mapping[str, Any] | None = None,
        *,
        surface: str = "assistant",
        replaces: Iterable[int] = (),
        cites: Iterable[tuple[str, int]] = (),
    ) -> dict[str, Any]:
        ev = event(
            self.session_id,
            self.last_seq + 1,
            type_,
            payload,
            surface=surface,
            minute=self.last_seq,
            replaces=replaces,
            cites=cites,
        )
        self.events.append(ev)
        return ev

    def title(self, text: str) -> dict[str, Any]:
        return self.add("session/title", {"title": text}, surface="system")

    def say(self, text: str, **kw: Any) -> dict[str, Any]:
        return self.add("message/assistant", {"text": text}, **kw)

    def step(self) -> dict[str, Any]:
        return self.add("step/start", {}, surface="system")

    def end(self) -> dict[str, Any]:
        return self.add("session/end", {}, surface="system")


# -- replies ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One tool reply exactly as it came off the wire."""

    data: bytes
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        return bool(self.body.get("status") == "ok")

    @property
    def code(self) -> str | None:
        error = self.body.get("error")
        return str(error["code"]) if isinstance(error, dict) else None

    @property
    def text(self) -> str:
        """The content of an ok reply, or the message of an error."""
        if self.ok:
            return str(self.body.get("content") or "")
        error = self.body.get("error") or {}
        return str(error.get("message") or "")

    @property
    def spilled(self) -> bool:
        return "spill" in self.body


def reply_problems(reply: Reply, request_text: str) -> list[str]:
    """Why ``reply`` is not a well-formed, model-safe answer (empty: it is)."""
    problems: list[str] = []
    status = reply.body.get("status")
    if status not in ("ok", "error"):
        problems.append(f"status {status!r}")
    if status == "error":
        if reply.code not in KNOWN_CODES:
            problems.append(f"unknown code {reply.code!r}")
        message = reply.text
        if not message.strip() or len(message) > 4000:
            problems.append(f"unreadable message {message[:200]!r}")
    if status == "ok" and not reply.text.strip():
        problems.append("empty content")
    lowered = reply.data.decode("utf-8", "replace").lower()
    lowered += " " + " ".join(reply.headers.values()).lower()
    request_lower = request_text.lower()
    for marker in LEAK_MARKERS:
        # A marker the request itself carried may be echoed back (a quoted query).
        if marker in lowered and marker not in request_lower:
            problems.append(f"internal text {marker!r} in the reply")
    return problems


def encode(value: Any) -> bytes:
    """JSON for any request a test builds: the standard library holds integers beyond 64
    bits and escapes lone surrogates, which orjson refuses to encode."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode()


# -- logs ---------------------------------------------------------------------------------


class LogWatch:
    """Every structlog line while active (all threads), with request context merged."""

    def __init__(self) -> None:
        self.entries: list[EventDict] = []
        self._cm: contextlib.AbstractContextManager[list[EventDict]] | None = None

    def __enter__(self) -> LogWatch:
        self._cm = structlog.testing.capture_logs(
            processors=[structlog.contextvars.merge_contextvars]
        )
        self.entries = self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._cm is not None
        self._cm.__exit__(*exc)

    def warnings(self, since: int = 0) -> list[EventDict]:
        return [e for e in list(self.entries[since:]) if e.get("log_level") == "warning"]

    def mark(self) -> int:
        return len(self.entries)

    def unhandled(self, since: int = 0) -> list[EventDict]:
        """Error-level lines, tracebacks while serving a request, and service failures
        other than the expected ones (an invalid query, a generation change)."""
        bad: list[EventDict] = []
        for entry in list(self.entries[since:]):
            level = str(entry.get("log_level", ""))
            serving = "request_id" in entry or "tool" in entry
            if level in ("error", "critical", "exception") or (serving and entry.get("exc_info")):
                bad.append(entry)
            elif entry.get("event") == "session_query.service_failure":
                chain = entry.get("chain") or [""]
                if not str(chain[0]).startswith(("InvalidQuery", "GenerationChanged")):
                    bad.append(entry)
        return bad


# -- the worker ---------------------------------------------------------------------------


def message_id(ev: Mapping[str, Any]) -> str:
    return f"{ev['session_id']}:{ev['seq']}"


@dataclass
class LiveWorker:
    nc: NATS
    subjects: Subjects
    worker: Worker
    published_seq: int = 0

    @classmethod
    async def start(
        cls,
        nats_url: str,
        db_dir: Path,
        *,
        events: Iterable[Mapping[str, Any]] = (),
        **config: Any,
    ) -> LiveWorker:
        # open_connection: the worker's slow-consumer handler needs its error route.
        nc = await open_connection(nats_url, connect_timeout=5, max_reconnect_attempts=5)
        try:
            subjects = unique_subjects()
            await ensure_events_stream(nc.jetstream(), subjects)
            values: dict[str, Any] = {
                "db_path": db_dir / f"index-{uuid.uuid4().hex[:8]}.sqlite",
                "subjects": subjects,
                "parallel_pool_size": 4,
                "parallel_queue_size": 64,
                "search_ack_wait_ms": 10_000,
                "shutdown_grace_ms": 5_000,
            }
            values.update(config)
            live = cls(nc=nc, subjects=subjects, worker=None)  # type: ignore[arg-type]
            await live.publish(events)
            live.worker = await Worker.start(nc, WorkerConfig(**values))
        except BaseException:
            await nc.close()
            raise
        await live.caught_up()
        return live

    async def publish(self, events: Iterable[Mapping[str, Any]]) -> None:
        js = self.nc.jetstream()
        for ev in events:
            ack = await js.publish(
                routes_for(self.subjects).subject(ev),
                orjson.dumps(ev),
                headers={"Nats-Msg-Id": message_id(ev)},
            )
            self.published_seq = max(self.published_seq, ack.seq)

    async def publish_raw(self, subject: str, data: bytes) -> int:
        """Publish bytes as they are (no dedupe id); returns the stream sequence."""
        ack = await self.nc.jetstream().publish(subject, data)
        self.published_seq = max(self.published_seq, ack.seq)
        return int(ack.seq)

    async def caught_up(self, within: float = 30.0) -> None:
        """Wait until the index holds everything published so far (a bounded wait)."""
        async with asyncio.timeout(within):
            while True:
                if (await self.worker.indexed_through() or 0) >= self.published_seq:
                    return
                await asyncio.sleep(0.01)

    async def call(
        self,
        tool: str,
        arguments: Any,
        *,
        caller: str | None,
        step_start_seq: int | None = None,
        request_id: str | None = None,
        within: float = 30.0,
    ) -> Reply:
        execution: dict[str, Any] = {}
        if caller is not None:
            execution["agent"] = {"session_id": caller}
        if step_start_seq is not None:
            execution["step_start_seq"] = step_start_seq
        body = {
            "request_id": request_id or "r-" + uuid.uuid4().hex[:16],
            "execution": execution,
            "arguments": arguments,
        }
        return await self.call_raw(tool, encode(body), within=within)

    def fits(self, arguments: Any) -> bool:
        """Whether a request with ``arguments`` fits the server's max_payload (a larger one
        is refused by the NATS client before any worker sees it)."""
        return len(encode(arguments)) < self.nc.max_payload - 1024

    async def call_raw(self, tool: str, data: bytes, *, within: float = 30.0) -> Reply:
        msg = await self.nc.request(self.subjects.tool(tool), data, timeout=within)
        return Reply(data=msg.data, headers=dict(msg.headers or {}), body=orjson.loads(msg.data))

    async def timed_call(self, tool: str, data: bytes) -> tuple[Reply, float]:
        started = time.perf_counter()
        reply = await self.call_raw(tool, data)
        return reply, time.perf_counter() - started

    async def stop(self) -> None:
        try:
            await self.worker.stop()
        finally:
            await self.nc.close()


@contextlib.contextmanager
def live_worker(
    loop: LoopThread,
    nats_url: str,
    db_dir: Path,
    *,
    events: Iterable[Mapping[str, Any]] = (),
    **config: Any,
) -> Iterator[LiveWorker]:
    """A started ``LiveWorker`` on ``loop``, stopped on exit."""
    live = loop.run(LiveWorker.start(nats_url, db_dir, events=list(events), **config))
    try:
        yield live
    finally:
        loop.run(live.stop())


# -- the two-workspace corpus -------------------------------------------------------------

ALPHA: Final = "/work/alpha"
BETA: Final = "/work/beta"
CALLER: Final = "s-a-caller"
A_ROOT: Final = "s-a-root"
A_CHILD: Final = "s-a-child"
A_ORPHAN: Final = "s-a-orphan"  # its parent lives in the other workspace
B_ROOT: Final = "s-b-root"
B_CHILD: Final = "s-b-child"  # its parent lives in this workspace
MISSING: Final = "s-never-existed"
A_SESSIONS: Final = (CALLER, A_ROOT, A_CHILD, A_ORPHAN)
B_SESSIONS: Final = (B_ROOT, B_CHILD)
# Seen only in workspace B: no reply to an alpha caller may carry them.
B_CANARIES: Final = ("obsidiancanary", "Beta secret ledger", "tangerinevault")


@dataclass(frozen=True)
class Corpus:
    events: tuple[dict[str, Any], ...]
    # A word indexed once in workspace A (outside the caller) -> (session, seq) holding it.
    words: Mapping[str, tuple[str, int]]
    # The caller's current step/start seq.
    caller_step: int


def two_workspace_corpus() -> Corpus:
    """Alpha: a caller, a root with a child, an orphan whose parent is in beta. Beta: a root
    citing alpha, and a child of alpha's root. Beta repeats alpha's words, so a leak shows."""
    words: dict[str, tuple[str, int]] = {}
    caller = SessionLog(CALLER, ALPHA)
    caller.title("caller looking back")
    caller.say("warming up before the step")
    step = caller.step()["seq"]
    caller.add("message/user", {"text": "find the old refund work"}, surface="user")

    root = SessionLog(A_ROOT, ALPHA)
    root.title("Alpha refund ledger")
    for word, text in (
        ("zebrafish", "the zebrafish ledger posted refund rf_1001 twice"),
        ("marmalade", "marmalade quartz kettle: AssertionError in src/payments/refunds.py"),
        ("periwinkle", "periwinkle idempotency key added to RefundLedger.apply()"),
    ):
        words[word] = (A_ROOT, root.say(text)["seq"])
    words["gooseberry"] = (
        A_ROOT,
        root.add(
            "tool/result",
            {"tool": "bash", "output": "gooseberry: 14 passed in 0.38s"},
            surface="tool",
        )["seq"],
    )
    words["compactor"] = (
        A_ROOT,
        root.add("compaction", {"summary": "compactor"}, replaces=[3, 4])["seq"],
    )
    root.end()

    child = SessionLog(A_CHILD, ALPHA, parent=A_ROOT)
    child.title("Alpha webhook retry")
    words["huckleberry"] = (
        A_CHILD,
        child.say(
            "huckleberry webhook retry, from the ledger fix", cites=[(A_ROOT, 3), (B_ROOT, 3)]
        )["seq"],
    )

    orphan = SessionLog(A_ORPHAN, ALPHA, parent=B_ROOT)
    orphan.title("Alpha orphan")
    words["nectarine"] = (A_ORPHAN, orphan.say("nectarine notes, parent elsewhere")["seq"])
    # Non-ASCII words: diacritics, and a CJK run the tokenizer keeps as one token.
    words["crème"] = (A_ORPHAN, orphan.say("the crème layer of the cache")["seq"])
    words["東京"] = (A_ORPHAN, orphan.say("deploy to 東京 region first")["seq"])

    b_root = SessionLog(B_ROOT, BETA)
    b_root.title("Beta secret ledger")
    b_root.say("obsidiancanary zebrafish marmalade periwinkle huckleberry nectarine")
    b_root.say("tangerinevault gooseberry compactor crème 東京", cites=[(A_ROOT, 3)])
    b_root.say("zebrafish again in beta", replaces=[2])

    b_child = SessionLog(B_CHILD, BETA, parent=A_ROOT)
    b_child.title("obsidiancanary child")
    b_child.say("zebrafish tangerinevault child of alpha", cites=[(A_ROOT, 3), (B_ROOT, 3)])

    events = tuple(
        ev for log in (caller, root, child, orphan, b_root, b_child) for ev in log.events
    )
    return Corpus(events=events, words=words, caller_step=int(step))
