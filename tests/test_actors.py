"""The supervisor restarts crashed actors with capped backoff; mailboxes stay bounded."""

from __future__ import annotations

import asyncio

import pytest

from tests._harness import until
from worker.actors import Mailbox, RestartBackoff, Supervisor


def test_backoff_grows_exponentially_and_is_capped() -> None:
    backoff = RestartBackoff(initial_s=0.1, max_s=1.0, factor=2.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 5, 6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


async def test_a_crashing_actor_is_restarted_and_the_others_keep_running() -> None:
    supervisor = Supervisor(backoff=RestartBackoff(initial_s=0.01, max_s=0.02))
    runs = 0
    ticks = 0

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs < 4:
            raise RuntimeError("boom")
        await asyncio.Event().wait()  # healthy from the 4th run on

    async def steady() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    supervisor.start("flaky", flaky)
    supervisor.start("steady", steady)
    try:
        await until(lambda: runs == 4)
        assert supervisor.restarts("flaky") == 3
        assert supervisor.running("flaky") and supervisor.running("steady")
        before = ticks
        await until(lambda: ticks > before)
        with pytest.raises(ValueError, match="already running"):
            supervisor.start("steady", steady)
    finally:
        await supervisor.stop_all()
    assert not supervisor.running("flaky") and not supervisor.running("steady")


async def test_an_actor_that_returns_is_not_restarted() -> None:
    supervisor = Supervisor()
    calls = 0

    async def once() -> None:
        nonlocal calls
        calls += 1

    supervisor.start("once", once)
    await supervisor.wait("once")
    assert calls == 1 and not supervisor.running("once")


async def test_mailbox_holds_at_most_its_capacity_until_done() -> None:
    box: Mailbox[int] = Mailbox(2)
    assert box.offer(1) and box.offer(2)
    assert not box.offer(3)  # full: the caller answers OVERLOADED
    assert await box.take() == 1
    assert not box.offer(3)  # taken but not done still holds its place
    box.done()
    assert box.offer(3)
    assert box.held == 2 and box.waiting == 2
    assert [await box.take(), await box.take()] == [2, 3]
    box.done()
    box.done()
    await asyncio.wait_for(box.idle(), 1)
    with pytest.raises(ValueError):
        Mailbox(0)


async def test_mailbox_wakes_every_waiting_taker() -> None:
    box: Mailbox[str] = Mailbox(4)
    takers = [asyncio.create_task(box.take()) for _ in range(3)]
    await asyncio.sleep(0)
    for item in "abc":
        assert box.offer(item)
    assert sorted(await asyncio.gather(*takers)) == ["a", "b", "c"]


async def test_mailbox_offer_wakes_one_taker() -> None:
    box: Mailbox[str] = Mailbox(4)
    takers = [asyncio.create_task(box.take()) for _ in range(3)]
    await asyncio.sleep(0)
    assert box.offer("a")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    done = [t for t in takers if t.done()]
    assert [t.result() for t in done] == ["a"]  # the other two still wait, not re-woken
    for task in takers:
        task.cancel()
    await asyncio.gather(*takers, return_exceptions=True)


async def test_mailbox_wake_of_a_cancelled_taker_passes_on() -> None:
    box: Mailbox[str] = Mailbox(4)
    first = asyncio.create_task(box.take())
    second = asyncio.create_task(box.take())
    await asyncio.sleep(0)
    assert box.offer("a")  # wakes `first`, which is cancelled before it runs
    first.cancel()
    assert await asyncio.wait_for(second, 1) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def _forever() -> None:
    await asyncio.Event().wait()


async def _stubborn() -> None:
    """An actor whose stop takes long: it finishes a step before it honours a cancel."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await asyncio.Event().wait()  # e.g. a writer request that must be answered first
        raise


async def test_a_bound_on_supervisor_wait_fires_and_leaves_the_actor_running() -> None:
    supervisor = Supervisor()
    supervisor.start("forever", _forever)
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(supervisor.wait("forever"), 0.05)
        assert supervisor.running("forever")
    finally:
        await supervisor.stop_all()


async def test_a_cancel_of_the_caller_of_supervisor_stop_goes_on_up() -> None:
    # The bound around a stop (serve's) relies on its cancellation arriving: a stop that
    # swallowed it returned normally, and the caller went on into whatever hung next.
    supervisor = Supervisor()
    supervisor.start("stubborn", _stubborn)
    await asyncio.sleep(0)
    after_stop: list[str] = []

    async def stopper() -> None:
        await supervisor.stop("stubborn")
        after_stop.append("went on")

    task = asyncio.create_task(stopper())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after_stop == []


async def test_stopping_an_actor_ends_quietly() -> None:
    supervisor = Supervisor()
    supervisor.start("idle", _forever)
    await asyncio.sleep(0)
    await supervisor.stop("idle")  # its CancelledError is the expected end, not ours
    assert not supervisor.running("idle")
