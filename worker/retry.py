"""One retry policy for the transient failures the worker waits out: a NATS server not
reachable yet, a JetStream cluster electing its leader, a stream or consumer not ready.

Every such loop runs through ``retry``. stamina runs the attempts: which exceptions are
retried, how many attempts, and its test mode (``stamina.set_testing(True, attempts=N)``:
no waits, at most N attempts). ``RetryPolicy`` computes each wait: exponential from
``first_s``, capped at ``max_s``, with jitter, so a fleet that lost its leader at the same
moment does not retry in lockstep; and never past ``total_s`` (stamina checks its own
timeout only after an attempt, so one wait could cross the bound: a request's deadline).

The loop bodies keep their own logic and log lines: stamina's default retry log hooks are
switched off here, so each retry is logged once, by its caller, with its context.

This module imports nothing from ``worker`` but ``worker.tasks`` (shared too): the store uses
it as well as the runtime.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Final, TypeVar

import stamina
import stamina.instrumentation

from worker.tasks import cancel_and_wait

T = TypeVar("T")

stamina.instrumentation.set_on_retry_hooks([])


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long to wait before each retry, and when to stop."""

    first_s: float
    max_s: float
    # None: retry until the step succeeds, a stop is requested or ``attempts`` is reached.
    total_s: float | None = None
    attempts: int | None = None
    # Each wait is drawn from [(1 - jitter) * w, w], w the capped exponential wait.
    jitter: float = 0.5

    def wait(self, failures: int) -> float:
        """The wait after the ``failures``-th failed attempt (1-based)."""
        capped = min(self.max_s, self.first_s * 2.0 ** max(0, failures - 1))
        return capped * random.uniform(1.0 - self.jitter, 1.0)

    def within(self, total_s: float | None) -> RetryPolicy:
        return replace(self, total_s=total_s)

    def at_most(self, attempts: int | None) -> RetryPolicy:
        return replace(self, attempts=attempts)


# The policies, in one place: one shape, the waits differ only where the caller's time
# does. Bounds are the caller's (``within``, ``at_most``): they come from its options.
# JetStream not ready (a stream, a consumer, the API while a cluster elects its leader):
# background work, retried until it succeeds or the worker stops.
JETSTREAM: Final = RetryPolicy(first_s=0.1, max_s=5.0)
# The worker's start while JetStream is not ready (serve bounds it, then exits).
STARTUP: Final = RetryPolicy(first_s=0.25, max_s=5.0)
# Connecting at start: slower, as each failed attempt logs a line.
CONNECT: Final = RetryPolicy(first_s=0.5, max_s=10.0)
# An ingest batch the writer rolled back (busy, disk full): its loop is the store's own
# (batches stay in order), its waits are these.
INGEST_APPLY: Final = RetryPolicy(first_s=0.05, max_s=5.0)
# A search index step that failed (a full disk under the search index): the writer's child
# keeps answering its pipe and tries again after these waits, one log line per failure.
SEARCH_INDEX: Final = RetryPolicy(first_s=0.5, max_s=10.0)
# A batch of passages sent to a remote embedder (``--embedder``) that failed in a way
# that may pass: a few attempts, then the follower reports it and tries again later.
EMBEDDER: Final = RetryPolicy(first_s=0.2, max_s=2.0, attempts=3)
# The follower's next try after those attempts failed: an outage may last, so up to 30 s.
EMBEDDER_OUTAGE: Final = RetryPolicy(first_s=1.0, max_s=30.0)
# A search's enqueue during an election: a request is waiting, so short waits, and never
# past its deadline.
ENQUEUE: Final = RetryPolicy(first_s=0.05, max_s=0.5)


class RetryStopped(Exception):
    """``stop`` was set while waiting to retry (or before a retry was scheduled)."""


RetryLog = Callable[[Exception, int, float], None]


@dataclass(slots=True)
class _State:
    """One ``retry`` call's attempts, as its decisions and its stop see them."""

    policy: RetryPolicy
    on: Callable[[Exception], bool]
    stop: asyncio.Event | None
    log: RetryLog | None
    started: float
    failures: int = 0
    waiting: bool = False
    stopped: bool = False

    def decide(self, exc: BaseException) -> bool | float:
        """stamina's ``on``: False to give up, else the seconds to wait (ours, so the
        bounds and the log line are decided in one place). stamina 26.2 hands it any
        BaseException: one that is not an Exception (a cancellation) is never retried."""
        if not isinstance(exc, Exception) or not self.on(exc):
            return False
        if self.stop is not None and self.stop.is_set():
            self.stopped = True
            return False
        self.failures += 1
        policy = self.policy
        if policy.attempts is not None and self.failures >= policy.attempts:
            return False  # stamina stops here too; decided first, so nothing logs a retry
        wait = policy.wait(self.failures)
        elapsed = asyncio.get_running_loop().time() - self.started
        if policy.total_s is not None and elapsed + wait >= policy.total_s:
            return False
        if self.log is not None:
            self.log(exc, self.failures, wait)
        self.waiting = True
        return wait


async def retry(
    policy: RetryPolicy,
    step: Callable[[], Awaitable[T]],
    *,
    on: Callable[[Exception], bool],
    stop: asyncio.Event | None = None,
    log: RetryLog | None = None,
) -> T:
    """``step()`` until it returns, retrying the exceptions ``on`` accepts as ``policy``
    says; ``log(exc, failures, wait)`` is called before each wait. The last exception is
    raised when the policy gives up; ``RetryStopped`` when ``stop`` is set meanwhile (a
    wait is cut short; an attempt already running is let finish)."""
    state = _State(policy, on, stop, log, started=asyncio.get_running_loop().time())
    # The first attempt runs bare: most calls succeed at once, and stamina's machinery costs
    # ~45 us a call (a search's enqueue is on the request path). A failure is replayed as
    # stamina's first attempt, so everything after it (waits, bounds, test mode) is stamina's.
    try:
        return await step()
    except Exception as exc:
        first: Exception | None = exc

    async def replay_then_step() -> T:
        nonlocal first
        if first is not None:
            failed, first = first, None
            raise failed
        return await step()

    async def attempts() -> T:
        async for attempt in stamina.retry_context(
            on=state.decide, attempts=policy.attempts, timeout=None
        ):
            with attempt:
                state.waiting = False
                return await replay_then_step()
        raise AssertionError("stamina ended the attempts without an outcome")

    try:
        return await (attempts() if stop is None else _until_stopped(attempts(), stop, state))
    except RetryStopped:
        raise
    except Exception as exc:
        if state.stopped:
            raise RetryStopped from exc
        raise


async def _until_stopped(run: Awaitable[T], stop: asyncio.Event, state: _State) -> T:
    task = asyncio.ensure_future(run)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done() and state.waiting:
            await cancel_and_wait(task)  # only a wait is cut short, never an attempt
            raise RetryStopped
        return await task  # a running attempt ends; if it fails, ``decide`` sees the stop
    finally:
        stopper.cancel()
        if not task.done():
            await cancel_and_wait(task)
