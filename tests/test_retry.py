"""The one retry policy (worker/retry.py): its waits, its bound, its stop, and stamina's
test mode reaching every loop that uses it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import stamina

from worker.retry import CONNECT, ENQUEUE, JETSTREAM, STARTUP, RetryPolicy, RetryStopped, retry

FAST = RetryPolicy(first_s=0.01, max_s=0.02)


class Flaky:
    """Fails ``failures`` times with ``error``, then returns ``"ok"``."""

    def __init__(self, failures: int, error: Callable[[], Exception] = ConnectionError) -> None:
        self.left = failures
        self.error = error
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.left > 0:
            self.left -= 1
            raise self.error()
        return "ok"


def test_waits_grow_exponentially_are_capped_and_jittered() -> None:
    policy = RetryPolicy(first_s=0.1, max_s=1.0, jitter=0.5)
    for failures, full in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (30, 1.0)]:
        waits = [policy.wait(failures) for _ in range(200)]
        assert all(full * 0.5 <= w <= full for w in waits), (failures, min(waits), max(waits))
        assert len(set(waits)) > 1  # jitter: a fleet does not retry in step


def test_every_declared_policy_has_jitter_and_a_cap() -> None:
    for policy in (JETSTREAM, STARTUP, CONNECT, ENQUEUE):
        assert 0 < policy.jitter <= 1
        assert policy.first_s <= policy.max_s
        assert policy.wait(1000) <= policy.max_s


async def test_transient_failures_are_retried_until_success_and_logged() -> None:
    step = Flaky(3)
    logged: list[tuple[str, int, float]] = []
    result = await retry(
        FAST,
        step,
        on=lambda exc: isinstance(exc, ConnectionError),
        log=lambda exc, failures, wait: logged.append((type(exc).__name__, failures, wait)),
    )
    assert result == "ok"
    assert step.calls == 4
    assert [(name, n) for name, n, _ in logged] == [("ConnectionError", n) for n in (1, 2, 3)]
    assert all(0 < wait <= FAST.max_s for _, _, wait in logged)


async def test_an_error_the_caller_does_not_retry_is_raised_at_once() -> None:
    step = Flaky(3, lambda: PermissionError("no"))
    with pytest.raises(PermissionError):
        await retry(FAST, step, on=lambda exc: isinstance(exc, ConnectionError))
    assert step.calls == 1


async def test_attempts_bound_raises_the_last_error_and_logs_only_real_retries() -> None:
    step = Flaky(10)
    logged: list[int] = []
    with pytest.raises(ConnectionError):
        await retry(
            FAST.at_most(3), step, on=lambda exc: True, log=lambda e, n, w: logged.append(n)
        )
    assert step.calls == 3
    assert logged == [1, 2]


async def test_no_wait_crosses_the_total_bound() -> None:
    # Waits of 0.1 s: within 0.25 s there is room for two of them, never a third.
    policy = RetryPolicy(first_s=0.1, max_s=0.1, jitter=0.0).within(0.25)
    step = Flaky(100)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ConnectionError):
        await retry(policy, step, on=lambda exc: True)
    assert step.calls == 3
    assert loop.time() - started < 0.25


async def test_a_stop_cuts_a_wait_short() -> None:
    stop = asyncio.Event()
    policy = RetryPolicy(first_s=30.0, max_s=30.0)
    step = Flaky(100)
    asyncio.get_running_loop().call_later(0.1, stop.set)
    with pytest.raises(RetryStopped):
        await asyncio.wait_for(retry(policy, step, on=lambda exc: True, stop=stop), 10)
    assert step.calls == 1


async def test_a_stop_lets_a_running_attempt_finish() -> None:
    stop = asyncio.Event()

    async def slow_success() -> str:
        stop.set()
        await asyncio.sleep(0.05)
        return "done"

    assert await retry(FAST, slow_success, on=lambda exc: True, stop=stop) == "done"


async def test_a_stop_during_a_failing_attempt_ends_the_retries() -> None:
    stop = asyncio.Event()
    calls = 0

    async def failing() -> None:
        nonlocal calls
        calls += 1
        stop.set()
        raise ConnectionError

    with pytest.raises(RetryStopped) as caught:
        await retry(FAST, failing, on=lambda exc: True, stop=stop)
    assert calls == 1
    assert isinstance(caught.value.__cause__, ConnectionError)


async def test_stamina_test_mode_removes_the_waits_and_caps_the_attempts() -> None:
    slow = RetryPolicy(first_s=60.0, max_s=60.0)
    step = Flaky(100)
    with stamina.set_testing(True, attempts=4), pytest.raises(ConnectionError):
        await asyncio.wait_for(retry(slow, step, on=lambda exc: True), 10)
    assert step.calls == 4
    assert not stamina.is_testing()


async def test_cancelling_the_caller_cancels_the_wait() -> None:
    stop = asyncio.Event()
    task = asyncio.ensure_future(
        retry(RetryPolicy(first_s=60.0, max_s=60.0), Flaky(100), on=lambda exc: True, stop=stop)
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
