"""Each request is admitted once: every step of it runs once, on each of the five tools.

A real worker (real nats-server, real SQLite index of the sample corpus) answers one
request at a time while wrappers around the real functions count, per request:
envelope validations, argument parses, query compiles, read-your-writes waits, caller
resolutions, the titles step, and the store's reads of the caller's header outside the
titles step (a search's titles step observes its sessions afresh after the payload, by
design, to fail closed on a session that left the workspace; the exact tools' payload
reads carry their titles, tests/store/test_payload_titles.py). The wrappers call through,
so the replies are the real ones; a step that runs twice fails the test.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

import worker.serving.replies
import worker.tools.context
import worker.tools.input
import worker.tools.workspace_access
from contracts.envelope import Execution
from tests._harness import SAMPLE_CALLS, call, new_id
from worker.commands.sample_corpus import DEMO_CALLER
from worker.serving import lane_decisions as decide
from worker.serving import queue_encoding
from worker.serving.admitted_handoff import AdmittedHandoff
from worker.store.sqlite import SqliteSessionStore
from worker.tools import Admitted, Endpoint
from worker.worker import Worker

# The caller's step starts at seq 2, so every request waits for seq 1 (indexed: quick).
STEP = 2

SEARCHES = ("session_search", "session_event_search")
# Set while the titles step runs: its reads are its own fresh observation.
IN_TITLES: contextvars.ContextVar[bool] = contextvars.ContextVar("in_titles", default=False)


class Counts:
    """Calls of each wrapped function since the last ``reset``."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.caller_reads = 0  # store reads of the caller's header outside the titles step

    def reset(self) -> None:
        self.calls.clear()
        self.caller_reads = 0

    def wrap(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        real: Callable[..., Any] = getattr(owner, name)
        key = name

        if asyncio.iscoroutinefunction(real):

            @functools.wraps(real)
            async def counted_async(*args: Any, **kwargs: Any) -> Any:
                self.calls[key] += 1
                token = IN_TITLES.set(IN_TITLES.get() or key == "fetch_titles")
                try:
                    return await real(*args, **kwargs)
                finally:
                    IN_TITLES.reset(token)

            monkeypatch.setattr(owner, name, counted_async)
            return

        @functools.wraps(real)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[key] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)

    def watch_caller_reads(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = SqliteSessionStore.read_titles

        async def read_titles(store: SqliteSessionStore, session_ids: Any, **kwargs: Any) -> Any:
            if DEMO_CALLER in session_ids and not IN_TITLES.get():
                self.caller_reads += 1
            return await real(store, session_ids, **kwargs)

        monkeypatch.setattr(SqliteSessionStore, "read_titles", read_titles)


in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    counts = Counts()
    counts.wrap(monkeypatch, worker.serving.replies, "validate_request")
    counts.wrap(monkeypatch, worker.tools.input, "parse_arguments")
    counts.wrap(monkeypatch, worker.tools.context, "compile_query")
    counts.wrap(monkeypatch, worker.tools.workspace_access, "wait_for_step")
    counts.wrap(monkeypatch, worker.tools.workspace_access, "caller_of")
    counts.wrap(monkeypatch, worker.tools.context, "fetch_titles")
    counts.watch_caller_reads(monkeypatch)
    return counts


def envelope(tool: str) -> bytes:
    execution = {"agent": {"session_id": DEMO_CALLER}, "step_start_seq": STEP}
    return orjson.dumps(
        {"request_id": new_id(), "execution": execution, "arguments": SAMPLE_CALLS[tool]}
    )


def assert_once(counts: Counts, tool: str) -> None:
    compiles = 1 if tool in SEARCHES else 0
    assert dict(counts.calls) == {
        "validate_request": 1,
        "parse_arguments": 1,
        **({"compile_query": compiles} if compiles else {}),
        "wait_for_step": 1,
        "caller_of": 1,
        "fetch_titles": 1,
    }, tool
    assert counts.caller_reads == 1, tool


@in_module_loop
@pytest.mark.parametrize("tool", list(SAMPLE_CALLS))
async def test_every_step_of_a_request_runs_once(
    module_nc: NATS, module_sample_worker: Worker, counts: Counts, tool: str
) -> None:
    nc, subjects = module_nc, module_sample_worker.config.subjects
    await call(nc, subjects, tool, envelope(tool))  # warm: the first search opens readers
    counts.reset()
    reply, _ = await call(nc, subjects, tool, envelope(tool))
    assert reply["status"] == "ok", reply
    assert_once(counts, tool)


@in_module_loop
@pytest.mark.parametrize("tool", SEARCHES)
@pytest.mark.parametrize("layout", ["current", "previous release"])
async def test_a_search_queued_by_another_process_is_admitted_once_here(
    module_nc: NATS, module_sample_worker: Worker, counts: Counts, tool: str, layout: str
) -> None:
    """What another worker's endpoint puts on the work queue (nothing admitted here) is
    admitted once by the lane that fetches it: in this release's format, and in the
    previous release's (the raw envelope beside headers), read during a rolling upgrade."""
    nc, subjects = module_nc, module_sample_worker.config.subjects
    data = envelope(tool)
    inbox = nc.new_inbox()
    replies = await nc.subscribe(inbox, max_msgs=1)
    headers = {decide.MSG_ID_HEADER: new_id()}
    if layout == "current":
        body = queue_encoding.encode(data, inbox, None)
    else:
        body = data
        headers[queue_encoding.LEGACY_REQUEST_ID_HEADER] = orjson.loads(data)["request_id"]
        headers[queue_encoding.LEGACY_REPLY_HEADER] = inbox
    await nc.jetstream().publish(
        subjects.search_queue_subject(tool), body, stream=subjects.search_stream, headers=headers
    )
    answer = orjson.loads((await replies.next_msg(timeout=15)).data)
    assert answer["status"] == "ok", answer
    assert answer["request_id"] == orjson.loads(data)["request_id"]
    assert_once(counts, tool)


def _admitted(rid: str) -> Admitted[Any]:
    return Admitted(rid, Execution(), Endpoint("session_search"), {"query": rid})


def test_the_handoff_gives_a_value_only_for_the_bytes_it_was_admitted_from() -> None:
    handoff = AdmittedHandoff(capacity=2)
    first = _admitted("r-1")
    handoff.put("m-1", b"one", first)
    assert handoff.take("m-1", b"other bytes") is None  # a reused id: admit the bytes
    handoff.put("m-1", b"one", first)
    assert handoff.take("m-1", b"one") is first
    assert handoff.take("m-1", b"one") is None  # taken once


def test_the_handoff_keeps_the_first_of_a_resent_request_and_forgets_only_its_own() -> None:
    handoff = AdmittedHandoff(capacity=2)
    first, resent, other = _admitted("r-1"), _admitted("r-1"), _admitted("r-2")
    handoff.put("m-1", b"one", first)
    handoff.put("m-1", b"one", resent)  # the same bytes again: the queue refuses it
    handoff.forget("m-1", resent)  # its duplicate ack does not drop the first's entry
    assert handoff.take("m-1", b"one") is first
    handoff.put("m-1", b"one", first)
    handoff.put("m-2", b"two", other)
    handoff.put("m-3", b"three", other)  # beyond capacity: the oldest is dropped
    assert len(handoff) == 2
    assert handoff.take("m-1", b"one") is None


def test_the_handoff_is_bounded_by_the_bytes_it_holds() -> None:
    """Entries of messages another worker fetched are never taken here: large bodies must
    not pile up to the entry count's bound."""
    handoff = AdmittedHandoff(capacity=100, capacity_bytes=10)
    handoff.put("m-1", b"12345", _admitted("r-1"))
    handoff.put("m-2", b"12345", _admitted("r-2"))
    assert (len(handoff), handoff.held_bytes) == (2, 10)
    handoff.put("m-3", b"123", _admitted("r-3"))  # the oldest goes
    assert (len(handoff), handoff.held_bytes) == (2, 8)
    assert handoff.take("m-1", b"12345") is None
    assert handoff.take("m-2", b"12345") is not None
    handoff.put("m-3", b"other", _admitted("r-4"))  # replaced: its bytes counted once
    assert (len(handoff), handoff.held_bytes) == (1, 5)
