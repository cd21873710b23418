"""Cancellation and deadlines reach SQLite: the running statement is interrupted, awaited,
the reader stays usable, and the signal's exact error comes back.

A SQLite progress handler on the (single) reader makes every big statement crawl, so a
search is reliably still running when the signal fires, and counts VM progress so the test
can see that SQLite really stopped, rather than trusting how long the call took.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.store._corpus import Corpus, compiled, corpus_and_store
from worker.signals import DeadlineExceeded, ExecutionAborted, ExecutionCancelled, ExecutionSignal
from worker.store.protocol import EventFilter, SessionFilter, SessionSearchPage
from worker.store.sqlite import SqliteSessionStore

BOUND_S = 30  # an upper bound for a hang, never a timing assertion
# The handler runs every this many VM steps; the search's SQL below (checking candidates
# the search index proposed, reading the page) takes a few hundred of them, so crawling
# it makes one search last longer than BOUND_S: without a working interrupt, a cancelled
# search could not come back within the bound.
HANDLER_EVERY = 200
CRAWL_S = 0.4


@dataclass
class Crawl:
    """A progress handler that makes statements crawl while ``slow`` is set."""

    slow: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    calls: int = 0

    def __call__(self) -> int:
        self.calls += 1
        self.started.set()
        if self.slow.is_set():
            time.sleep(CRAWL_S)
        return 0  # 0 = go on; only the interrupt may stop the statement


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Corpus, SqliteSessionStore, Crawl]]:
    async with corpus_and_store(tmp_path, readers=1) as (corpus, store):
        for s in range(30):
            corpus.start(f"s{s}")
            for i in range(100):
                corpus.say(f"s{s}", f"the needle number {i} in a haystack of words")
        await corpus.flush()
        crawl = Crawl()
        # Test-only reach into the pool: the handler must sit on the reader itself.
        (reader,) = store._readers
        reader.on_progress(crawl, HANDLER_EVERY)  # idle now: safe from this thread
        yield corpus, store, crawl
        crawl.slow.clear()


async def search(store: SqliteSessionStore, signal: ExecutionSignal) -> SessionSearchPage:
    return await store.search_sessions(
        compiled("needle haystack"),
        cwd="/w/main",
        sessions=SessionFilter(),
        events=EventFilter(),
        cursor=None,
        page_size=10,
        signal=signal,
    )


async def started(crawl: Crawl) -> None:
    assert await asyncio.to_thread(crawl.started.wait, BOUND_S)


async def assert_sqlite_stopped(crawl: Crawl) -> None:
    """No VM progress on the reader once the call has returned."""
    before = crawl.calls
    await asyncio.sleep(0.05)
    assert crawl.calls == before


async def test_baseline_search_runs_through_the_handler(
    env: tuple[Corpus, SqliteSessionStore, Crawl],
) -> None:
    _, store, crawl = env
    page = await search(store, ExecutionSignal())
    assert len(page.hits) == 10
    # The search alone takes enough steps that crawling it outlasts BOUND_S.
    assert crawl.calls * CRAWL_S > BOUND_S, crawl.calls


async def test_cancel_interrupts_the_running_search(
    env: tuple[Corpus, SqliteSessionStore, Crawl],
) -> None:
    _, store, crawl = env
    crawl.slow.set()
    signal = ExecutionSignal()
    running = asyncio.create_task(search(store, signal))
    await started(crawl)
    signal.cancel("requester cancelled: r-123")
    with pytest.raises(ExecutionCancelled) as info:
        await asyncio.wait_for(running, BOUND_S)
    assert info.value is signal.error  # the exact instance, reason intact
    assert info.value.reason == "requester cancelled: r-123"
    await assert_sqlite_stopped(crawl)

    crawl.slow.clear()  # the same (only) reader answers the next search correctly
    page = await search(store, ExecutionSignal())
    assert len(page.hits) == 10 and page.next_cursor is not None


async def test_deadline_interrupts_with_deadline_exceeded(
    env: tuple[Corpus, SqliteSessionStore, Crawl],
) -> None:
    _, store, crawl = env
    crawl.slow.set()
    signal = ExecutionSignal.after(0.2)
    with pytest.raises(DeadlineExceeded) as info:
        await asyncio.wait_for(search(store, signal), BOUND_S)
    assert info.value is signal.error
    assert crawl.started.is_set()  # it was running in SQLite when the deadline came
    await assert_sqlite_stopped(crawl)
    crawl.slow.clear()
    assert len((await search(store, ExecutionSignal())).hits) == 10


async def test_an_aborted_signal_starts_nothing(
    env: tuple[Corpus, SqliteSessionStore, Crawl],
) -> None:
    _, store, crawl = env
    signal = ExecutionSignal()
    signal.cancel("gone before it began")
    calls = [
        search(store, signal),
        store.generation(signal=signal),
        store.lineage("s1", signal=signal),
        store.read_event("s1", 2, before=1, after=1, signal=signal),
        store.read_titles(["s1"], signal=signal),
        store.event_relations("s1", 2, signal=signal),
        store.latest_seq_of_type("s1", "x", signal=signal),
        store.wait_for_seq("s1", 1, signal=signal),
        store.search_events(
            compiled("needle"), session_id="s1", events=EventFilter(), cursor=None, page_size=5,
            signal=signal,
        ),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(ExecutionAborted) as info:
            await call
        assert info.value is signal.error
    assert crawl.calls == 0


async def test_waiting_for_a_reader_is_abortable(
    env: tuple[Corpus, SqliteSessionStore, Crawl],
) -> None:
    _, store, crawl = env
    crawl.slow.set()
    holder_signal = ExecutionSignal()
    holder = asyncio.create_task(search(store, holder_signal))
    await started(crawl)  # the only reader is busy
    queued_signal = ExecutionSignal()
    # A second search waits for the reader; key lookups do not (their own connection).
    queued = asyncio.create_task(search(store, queued_signal))
    await asyncio.sleep(0.01)
    assert not queued.done()  # backpressure: it waits for the reader
    assert (await store.generation(signal=ExecutionSignal())).seq > 0
    queued_signal.cancel("queued request cancelled")
    with pytest.raises(ExecutionCancelled) as info:
        await asyncio.wait_for(queued, BOUND_S)
    assert info.value is queued_signal.error
    assert not holder.done()
    holder_signal.cancel("stop the holder")
    with pytest.raises(ExecutionCancelled):
        await asyncio.wait_for(holder, BOUND_S)
    crawl.slow.clear()
    # The reader went back to the pool exactly once: two sequential reads both get it.
    assert (await store.generation(signal=ExecutionSignal())).seq > 0
    assert len((await search(store, ExecutionSignal())).hits) == 10


async def test_task_cancellation_also_interrupts_and_settles(
    env: tuple[Corpus, SqliteSessionStore, Crawl],
) -> None:
    _, store, crawl = env
    crawl.slow.set()
    running = asyncio.create_task(search(store, ExecutionSignal()))
    await started(crawl)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, BOUND_S)
    await assert_sqlite_stopped(crawl)
    crawl.slow.clear()
    assert len((await search(store, ExecutionSignal())).hits) == 10


async def test_concurrent_reads_share_the_pool(tmp_path: Path) -> None:
    async with corpus_and_store(tmp_path, readers=3) as (corpus, store):
        for s in range(20):
            corpus.start(f"s{s}")
            corpus.say(f"s{s}", "a needle in the haystack")
        await corpus.flush()
        pages = await asyncio.gather(*(search(store, ExecutionSignal()) for _ in range(12)))
        assert all(len(p.hits) == 10 for p in pages)
        assert len({p.hits for p in pages}) == 1


async def test_many_reads_cancelled_at_random_points_leave_the_pool_whole(
    tmp_path: Path,
) -> None:
    rng = random.Random(5)
    async with corpus_and_store(tmp_path, readers=3) as (corpus, store):
        for s in range(40):
            corpus.start(f"s{s}")
            for i in range(40):
                corpus.say(f"s{s}", f"needle {i} in the haystack")
        await corpus.flush()
        signals = [ExecutionSignal() for _ in range(60)]
        tasks = [asyncio.create_task(search(store, signal)) for signal in signals]
        for i, signal in enumerate(signals):
            if rng.random() < 0.6:
                await asyncio.sleep(rng.random() * 0.003)
                signal.cancel(f"cancel {i}")
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), BOUND_S)
        for signal, outcome in zip(signals, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                assert outcome is signal.error  # only the exact cancel, never another error
            else:
                assert len(outcome.hits) == 10
        assert store._pool.qsize() == 3  # every reader came back exactly once
        pages = await asyncio.gather(*(search(store, ExecutionSignal()) for _ in range(6)))
        assert len({page.hits for page in pages}) == 1
