"""serve's worker start waits out a JetStream that does not answer yet (a cluster electing
its meta leader), bounded, and gives way to a stop request.

The retry policy is tested alone here (Worker.start scripted to fail); the real cluster
start-up runs in tests/commands/test_compose.py against three real nats-servers.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import ServiceUnavailableError

from worker.commands import serve
from worker.config import WorkerConfig
from worker.worker import Worker


def _script(monkeypatch: pytest.MonkeyPatch, outcomes: list[Any]) -> list[int]:
    calls: list[int] = []

    async def start(cls: type[Worker], nc: Any, config: WorkerConfig) -> Any:
        calls.append(1)
        outcome = outcomes.pop(0) if outcomes else NatsTimeoutError()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(Worker, "start", classmethod(start))
    return calls


async def test_transient_jetstream_errors_are_retried_until_the_worker_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = object()
    calls = _script(monkeypatch, [NatsTimeoutError(), ServiceUnavailableError(), started])
    result = await serve.start_when_ready(None, WorkerConfig(), asyncio.Event(), within=30)  # type: ignore[arg-type]
    assert result is started
    assert len(calls) == 3


async def test_it_gives_up_after_the_bound_with_the_last_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _script(monkeypatch, [])
    # The first retry waits at most 0.25 s: with a bound of 0.6 s, a loop stalled 0.35 s
    # before it (a loaded machine) left one attempt; 2 s leaves room for that.
    with pytest.raises(NatsTimeoutError):
        await serve.start_when_ready(None, WorkerConfig(), asyncio.Event(), within=2.0)  # type: ignore[arg-type]
    assert len(calls) >= 2


async def test_other_errors_are_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _script(monkeypatch, [PermissionError("index not writable")])
    with pytest.raises(PermissionError):
        await serve.start_when_ready(None, WorkerConfig(), asyncio.Event(), within=30)  # type: ignore[arg-type]
    assert len(calls) == 1


async def test_a_stop_during_the_retries_ends_them(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _script(monkeypatch, [])
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.4, stop.set)
    assert await serve.start_when_ready(None, WorkerConfig(), stop, within=30) is None  # type: ignore[arg-type]
    assert calls
