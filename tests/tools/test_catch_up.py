"""Read-your-writes: the wait for the caller's step is bounded apart from the deadline."""

from __future__ import annotations

import asyncio
from typing import Any

from contracts.errors import ErrorCode
from tests.tools._fakes import CALLER, FakeService
from tests.tools._harness import as_caller, tool_error
from worker.signals import ExecutionSignal
from worker.tools import ToolConfig


def _never_catches_up(service: FakeService, waited: list[ExecutionSignal]) -> None:
    async def wait_for_seq(*, signal: ExecutionSignal, **_: Any) -> None:
        waited.append(signal)
        await signal.wait()
        signal.raise_if_aborted()

    service.overrides["wait_for_seq"] = wait_for_seq


async def test_catch_up_wait_is_capped_and_says_what_it_waited_for() -> None:
    service = FakeService.with_caller()
    waited: list[ExecutionSignal] = []
    _never_catches_up(service, waited)
    outer = ExecutionSignal.after(30)
    started = asyncio.get_running_loop().time()
    error = await tool_error(
        service,
        "session_trace",
        {},
        execution=as_caller(CALLER, step_start_seq=9),
        signal=outer,
        config=ToolConfig(catch_up_timeout_ms=50),
    )
    elapsed = asyncio.get_running_loop().time() - started
    assert error.code is ErrorCode.TIMEOUT
    assert "up to seq 8" in error.message
    # The cap, not the 30 s execution deadline, ended the wait; the execution goes on.
    assert elapsed < 15
    assert not outer.aborted
    assert waited and waited[0] is not outer and waited[0].aborted


async def test_catch_up_keeps_the_exact_cancel_reason() -> None:
    service = FakeService.with_caller()
    waited: list[ExecutionSignal] = []
    _never_catches_up(service, waited)
    outer = ExecutionSignal()
    asyncio.get_running_loop().call_later(0.05, outer.cancel, "user pressed stop")
    error = await tool_error(
        service,
        "session_event_search",
        {"query": "refund"},
        execution=as_caller(CALLER, step_start_seq=9),
        signal=outer,
        config=ToolConfig(catch_up_timeout_ms=60_000),
    )
    assert (error.code, error.message) == (ErrorCode.CANCELLED, "user pressed stop")
