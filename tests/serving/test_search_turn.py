"""An operator search and a model's search never run at the same time in one worker: the
operator's verb takes the search lane like every search (the work queue, one at a time).
The store's own search functions are wrapped (the real ones still answer) to record how
many run at once. A real worker, index and nats-server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import body, call, sample_corpus_worker
from tests.ui._operator import ask
from worker.commands.sample_corpus import DEMO_CALLER, PAY_CHILD, PAYMENTS

ROUNDS = 6
# How long each search is held inside the store: long enough that two searches the worker
# let overlap would be seen overlapping.
HELD_S = 0.02


@dataclass
class Overlap:
    running: int = 0
    most: int = 0
    calls: int = 0

    def counted(self, real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def search(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
            try:
                await asyncio.sleep(HELD_S)
                return await real(*args, **kwargs)
            finally:
                self.running -= 1

        return search


async def test_operator_and_model_searches_take_turns(
    nc: NATS, subjects: Subjects, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with sample_corpus_worker(nc, subjects, tmp_path) as worker:
        assert worker.index is not None
        store = worker.index.store
        overlap = Overlap()
        for name in ("search_sessions", "search_events"):
            monkeypatch.setattr(store, name, overlap.counted(getattr(store, name)))

        async def model(n: int) -> dict[str, Any]:
            tool, arguments = (
                ("session_search", {"query": "refund flake"})
                if n % 2
                else ("session_event_search", {"query": "retry", "session_id": PAY_CHILD})
            )
            reply, _ = await call(nc, subjects, tool, body(caller=DEMO_CALLER, **arguments))
            return reply

        async def operator(n: int) -> dict[str, Any]:
            arguments: dict[str, Any] = {"workspace": PAYMENTS, "query": "refund"}
            if n % 2:
                arguments["session_id"] = PAY_CHILD
            return await ask(nc, subjects, "search", **arguments)

        answers = await asyncio.gather(
            *(ask_one(n) for n in range(ROUNDS) for ask_one in (model, operator))
        )
    assert all(a["status"] == "ok" for a in answers), answers
    assert overlap.calls >= 2 * ROUNDS
    assert overlap.most == 1, f"{overlap.most} searches ran at once"
    # Every one of them, the operator's included, was run by the search lane.
    assert worker.search.completed == 2 * ROUNDS


async def test_operator_search_refusals_through_the_queue_keep_their_bytes(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """A body no verb can read is answered before it is queued; arguments the verb refuses
    are answered by the lane that fetched it: both in the operator's JSON (the status/error
    shape every verb answers with)."""
    async with sample_corpus_worker(nc, subjects, tmp_path) as worker:
        msg = await nc.request(subjects.operator("search"), b"not json", timeout=10)
        assert msg.data == (
            b'{"status":"error","error":{"code":"SESSION_QUERY_INVALID_ARGUMENTS",'
            b'"message":"The body is not JSON."}}'
        )
        assert worker.search.completed == 0  # never queued
        missing = await ask(nc, subjects, "search", workspace=PAYMENTS)
        no_cwd = await ask(nc, subjects, "search", workspace=None, query="refund")
        assert worker.search.completed == 2  # both run by the lane, refused there
    assert missing == {
        "status": "error",
        "error": {"code": "SESSION_QUERY_INVALID_ARGUMENTS", "message": "query: Field required"},
    }
    assert no_cwd == {
        "status": "error",
        "error": {
            "code": "SESSION_QUERY_INVALID_ARGUMENTS",
            "message": "Search needs a workspace with a cwd.",
        },
    }
