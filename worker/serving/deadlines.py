"""Deadlines: the envelope's absolute epoch-ms deadline becomes an ``ExecutionSignal``.

The wire carries wall-clock epoch milliseconds (requesters run on other machines); the
signal runs on the event loop's monotonic clock, so the conversion happens once, here.
"""

from __future__ import annotations

import asyncio
import time

from contracts.envelope import Execution
from worker.signals import ExecutionSignal


def now_ms() -> int:
    return int(time.time() * 1000)


def loop_time_of(deadline_ms: int) -> float:
    """The ``loop.time()`` at which the epoch-ms ``deadline_ms`` falls."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline_ms - time.time() * 1000.0) / 1000.0


def effective_deadline_ms(execution: Execution, *, default_timeout_ms: int | None) -> int | None:
    """The request's own deadline, else now plus the default (None: no deadline)."""
    if execution.deadline_ms is not None:
        return execution.deadline_ms
    if default_timeout_ms is None:
        return None
    return now_ms() + default_timeout_ms


def signal_until(deadline_ms: int | None) -> ExecutionSignal:
    """A signal that fires at ``deadline_ms`` (at once when it already passed)."""
    if deadline_ms is None:
        return ExecutionSignal()
    return ExecutionSignal(deadline=loop_time_of(deadline_ms))


def expired(deadline_ms: int | None) -> bool:
    return deadline_ms is not None and deadline_ms <= now_ms()
