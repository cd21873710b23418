"""Ingestion: the actor's batching and backpressure, and the JetStream binding end to end.

Over 400 lines: the ingest actor's batching, order and memory, one behaviour per test.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import StorageType

from contracts.subjects import Subjects
from tests._events import event, subject_of
from worker.replica.ingest_actor import IngestActor
from worker.replica.ingest_consumer import (
    REASON_HEADER,
    STREAM_SEQ_HEADER,
    EventConsumer,
    ensure_events_stream,
)
from worker.store.files.integrity import check_integrity
from worker.store.index.writer import SqliteIndexWriter
from worker.store.writer_protocol import ApplyResult, IngestItem, Rejected, Staged
from worker.tasks import cancel_and_wait
from worker.transport.connection import open_connection
from worker.transport.embedded_server import EmbeddedNatsServer


def count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


# -- the actor, with a real writer ------------------------------------------------------


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[SqliteIndexWriter]:
    async with await SqliteIndexWriter.open(tmp_path / "index.sqlite") as w:
        yield w


async def test_actor_batches_and_dead_letters(writer: SqliteIndexWriter) -> None:
    dead: list[Rejected] = []

    async def sink(r: Rejected) -> None:
        dead.append(r)

    actor = IngestActor(writer, dead_letter=sink, batch_size=3, batch_ms=1000)
    bodies = [event("s", 1, "session/start"), b"{", *(event("s", n) for n in range(2, 7))]
    for i, body in enumerate(bodies, start=1):
        await actor.put(IngestItem(i, body))
    actor.stop()
    await actor.run()  # drains the mailbox, then returns
    stats = actor.stats
    assert (stats.applied, stats.dead_lettered, stats.last_stream_seq) == (6, 1, 7)
    assert stats.batches == 3  # 7 items in batches of at most 3
    assert [r.stream_seq for r in dead] == [2]
    assert await writer.last_stream_seq() == 7


async def test_actor_put_waits_for_room(writer: SqliteIndexWriter) -> None:
    async def sink(r: Rejected) -> None:
        pass

    actor = IngestActor(writer, dead_letter=sink, mailbox_size=2)
    await actor.put(IngestItem(1, event("s", 1, "session/start")))
    await actor.put(IngestItem(2, event("s", 2)))
    blocked = asyncio.create_task(actor.put(IngestItem(3, event("s", 3))))
    await asyncio.sleep(0.05)
    assert not blocked.done()  # the mailbox is full: the producer waits
    runner = asyncio.create_task(actor.run())
    await blocked
    await actor.wait_applied(3)
    actor.stop()
    await runner
    assert actor.stats.applied == 3


class FlakyWriter:
    """A writer whose first applies fail: the fault the actor must survive."""

    def __init__(self, inner: SqliteIndexWriter, failures: int) -> None:
        self.inner = inner
        self.failures = failures
        self.calls = 0

    async def last_stream_seq(self) -> int:
        return await self.inner.last_stream_seq()

    async def info(self) -> dict[str, object]:
        return await self.inner.info()

    async def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]:
        return await self.inner.bind_stream(name, created, first_seq, partitions)

    def stage(self, items: Sequence[IngestItem]) -> Staged:
        return Staged(partial(self.apply, items))  # no early chaining: one at a time

    async def apply(self, items: Sequence[IngestItem]) -> ApplyResult:
        self.calls += 1
        if self.calls <= self.failures:
            raise sqlite3.OperationalError("database is locked")
        return await self.inner.apply(items)

    async def purge(
        self, *, session_ids: Sequence[str] = (), older_than_ms: int | None = None
    ) -> int:
        return await self.inner.purge(session_ids=session_ids, older_than_ms=older_than_ms)


async def test_actor_retries_a_failed_batch(writer: SqliteIndexWriter, tmp_path: Path) -> None:
    async def sink(r: Rejected) -> None:
        pass

    flaky = FlakyWriter(writer, failures=2)
    actor = IngestActor(flaky, dead_letter=sink)
    await actor.put(IngestItem(1, event("s", 1, "session/start")))
    actor.stop()
    await actor.run()
    assert flaky.calls == 3
    assert actor.stats.apply_failures == 2 and actor.stats.applied == 1
    assert count(tmp_path / "index.sqlite", "SELECT count(*) FROM events") == 1


async def test_a_failing_dead_letter_sink_does_not_stop_ingestion(
    writer: SqliteIndexWriter,
) -> None:
    async def sink(r: Rejected) -> None:
        raise ConnectionError("nats down")

    actor = IngestActor(writer, dead_letter=sink)
    for i, body in enumerate([b"x", event("s", 1, "session/start")], start=1):
        await actor.put(IngestItem(i, body))
    actor.stop()
    await actor.run()
    assert actor.stats.dead_letter_failures == 1 and actor.stats.applied == 1


# -- JetStream end to end ---------------------------------------------------------------


async def test_ensure_stream_creates_once_and_keeps_an_existing_one(
    nc: NATS, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    info = await js.stream_info(subjects.events_stream)
    assert info.config.subjects == [subjects.events_publish_wildcard]
    assert info.config.storage == StorageType.FILE
    await js.publish(subject_of(subjects, "s"), b"kept")
    await ensure_events_stream(js, subjects)  # does not clobber
    assert (await js.stream_info(subjects.events_stream)).state.messages == 1
    await js.delete_stream(subjects.events_stream)


async def run_consumer(
    nc: NATS, writer: SqliteIndexWriter, subjects: Subjects
) -> tuple[EventConsumer, asyncio.Task[None]]:
    consumer = EventConsumer(nc, writer, subjects=subjects, batch_ms=10, idle_heartbeat_s=0.5)
    return consumer, asyncio.create_task(consumer.run())


async def ingest_through(nc: NATS, subjects: Subjects, db: Path, seq: int) -> EventConsumer:
    """One consumer run over ``db`` until the index holds stream seq ``seq``, then stopped."""
    async with await SqliteIndexWriter.open(db) as writer:
        consumer, task = await run_consumer(nc, writer, subjects)
        await asyncio.wait_for(consumer.actor.wait_applied(seq), 20)
        consumer.stop()
        await task
    return consumer


async def test_good_events_land_and_bad_ones_are_dead_lettered(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    dead: list[Msg] = []
    got_all = asyncio.Event()

    async def on_dead(msg: Msg) -> None:
        dead.append(msg)
        if len(dead) == 7:
            got_all.set()

    await nc.subscribe(subjects.deadletter, cb=on_dead)
    await nc.flush()

    oversized = event("s-a", 4, payload={"text": "x" * 2000})
    published: list[tuple[str, bytes]] = [
        ("s-a", event("s-a", 1, "session/start")),
        ("s-a", event("s-a", 2)),
        ("s-a", b"not json at all"),
        ("s-a", event("s-a", 3, seq="3")),  # wrong type
        ("s-a", event("s-a", 3, surface="robot")),  # closed set
        ("s-a", event("s-a", 3)),
        ("s-a", event("s-a", 9)),  # gap
        ("s-b", event("s-b", 2)),  # unknown session
        ("s-a", oversized),
        ("s-a", event("s-a", 2)),  # duplicate: no-op, not dead-lettered
        ("s-a", event("s-a", 4, "session/end")),
        ("s-a", event("s-a", 5, **{"clé": 1})),  # a non-ASCII field name in the reason
    ]
    for session_id, body in published:
        await js.publish(subject_of(subjects, session_id), body)

    db = tmp_path / "index.sqlite"
    async with await SqliteIndexWriter.open(db, max_event_bytes=1024) as writer:
        consumer, task = await run_consumer(nc, writer, subjects)
        await asyncio.wait_for(consumer.actor.wait_applied(len(published)), 20)
        await asyncio.wait_for(got_all.wait(), 20)
        consumer.stop()
        await task
        stats = consumer.actor.stats

    assert (stats.applied, stats.duplicates, stats.dead_lettered) == (4, 1, 7)
    assert count(db, "SELECT count(*) FROM events WHERE session_id = 's-a'") == 4
    assert count(db, "SELECT availability = 'persisted' FROM sessions") == 1
    reasons = {
        int(m.headers[STREAM_SEQ_HEADER]): m.headers[REASON_HEADER] for m in dead if m.headers
    }
    assert reasons[3].startswith("invalid JSON: ")
    assert reasons[4].startswith("contract violation: seq: ")
    assert "surface must be one of" in reasons[5]
    assert reasons[7] == "gap in session s-a: expected seq 4, got 9"
    assert reasons[8].startswith("unknown session s-b")
    assert reasons[9].startswith(
        f"oversized: the event is {len(oversized)} bytes, the maximum is 1024 bytes"
    )
    assert reasons[12] == "contract violation: cl\\xe9: Extra inputs are not permitted"
    # The original body travels with its reason.
    assert {m.data for m in dead} == {published[i - 1][1] for i in reasons}
    assert check_integrity(db) == []
    await js.delete_stream(subjects.events_stream)


async def test_resumes_from_the_stored_stream_seq(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    db = tmp_path / "index.sqlite"
    await js.publish(subject_of(subjects, "s"), event("s", 1, "session/start"))
    await js.publish(subject_of(subjects, "s"), event("s", 2))
    await ingest_through(nc, subjects, db, 2)
    await js.publish(subject_of(subjects, "s"), event("s", 3))
    consumer = await ingest_through(nc, subjects, db, 3)
    # Only the new message was delivered: nothing was replayed as a duplicate.
    assert (consumer.actor.stats.applied, consumer.actor.stats.duplicates) == (1, 0)
    assert count(db, "SELECT count(*) FROM events") == 3
    await js.delete_stream(subjects.events_stream)


async def test_a_cancelled_consumer_ends_its_ingest_actor_and_the_stream_replays(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """Cancelled rather than stopped (a worker start that failed once ingestion had begun):
    the actor ends with the run instead of running on, unowned, until the loop closes; what
    it had not applied is read again by the next run."""
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    db = tmp_path / "index.sqlite"
    await js.publish(subject_of(subjects, "s"), event("s", 1, "session/start"))
    async with await SqliteIndexWriter.open(db) as writer:
        consumer, task = await run_consumer(nc, writer, subjects)
        await asyncio.wait_for(consumer.actor.wait_applied(1), 20)
        (actor,) = [t for t in asyncio.all_tasks() if t.get_name() == "ingest-actor"]
        await cancel_and_wait(task)
        assert actor.done()
    await js.publish(subject_of(subjects, "s"), event("s", 2))
    await ingest_through(nc, subjects, db, 2)
    assert count(db, "SELECT count(*) FROM events") == 2
    await js.delete_stream(subjects.events_stream)


async def test_a_lost_consumer_is_recreated_from_the_last_sequence(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    db = tmp_path / "index.sqlite"
    await js.publish(subject_of(subjects, "s"), event("s", 1, "session/start"))
    async with await SqliteIndexWriter.open(db) as writer:
        consumer, task = await run_consumer(nc, writer, subjects)
        await asyncio.wait_for(consumer.actor.wait_applied(1), 20)
        # The server forgets the consumer (as after a restart of a memory consumer).
        names = [c.name async for c in _consumers(js, subjects.events_stream)]
        assert len(names) == 1
        await js.delete_consumer(subjects.events_stream, names[0])
        for n in range(2, 6):
            await js.publish(subject_of(subjects, "s"), event("s", n))
        await asyncio.wait_for(consumer.actor.wait_applied(5), 30)
        # A new consumer serves the rest (the ordered consumer made it itself).
        now = [c.name async for c in _consumers(js, subjects.events_stream)]
        assert now and names[0] not in now
        consumer.stop()
        await task
    assert count(db, "SELECT count(*) FROM events") == 5
    await js.delete_stream(subjects.events_stream)


async def _consumers(js: Any, stream: str) -> AsyncIterator[Any]:
    for info in await js.consumers_info(stream):
        yield info


async def test_ingestion_continues_across_a_nats_server_restart(
    own_nats_server: EmbeddedNatsServer, subjects: Subjects, tmp_path: Path
) -> None:
    nc = await open_connection(
        own_nats_server.url, max_reconnect_attempts=-1, reconnect_time_wait=0.1
    )
    try:
        js = nc.jetstream()
        await ensure_events_stream(js, subjects)
        await js.publish(subject_of(subjects, "s"), event("s", 1, "session/start"))
        db = tmp_path / "index.sqlite"
        async with await SqliteIndexWriter.open(db) as writer:
            consumer, task = await run_consumer(nc, writer, subjects)
            await asyncio.wait_for(consumer.actor.wait_applied(1), 20)
            own_nats_server.stop()
            own_nats_server.start()  # same port and store: the stream survives
            for n in range(2, 5):
                await _publish_retrying(js, subject_of(subjects, "s"), event("s", n))
            await asyncio.wait_for(consumer.actor.wait_applied(4), 30)
            consumer.stop()
            await task
        assert count(db, "SELECT count(*) FROM events") == 4
        assert count(db, "SELECT last_seq FROM sessions") == 4
    finally:
        await nc.close()


async def _publish_retrying(js: Any, subject: str, body: bytes) -> None:
    for _ in range(100):
        try:
            await js.publish(subject, body, timeout=1)
            return
        except (TimeoutError, nats.errors.Error):
            await asyncio.sleep(0.1)  # the client is still reconnecting
    raise AssertionError("publish never succeeded after the restart")


class FailsFirstPrepare(FlakyWriter):
    """Preparing the first batch raises: the actor, and so the run, fails mid-flight."""

    def __init__(self, inner: SqliteIndexWriter) -> None:
        super().__init__(inner, failures=0)
        self.prepares = 0

    def stage(self, items: Sequence[IngestItem]) -> Staged:
        self.prepares += 1
        if self.prepares == 1:
            raise RuntimeError("bug")
        return self.inner.stage(items)


async def test_run_again_after_a_failure_resumes(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    await js.publish(subject_of(subjects, "s"), event("s", 1, "session/start"))
    db = tmp_path / "index.sqlite"
    async with await SqliteIndexWriter.open(db) as writer:
        flaky = FailsFirstPrepare(writer)
        consumer = EventConsumer(nc, flaky, subjects=subjects, idle_heartbeat_s=0.5)
        with pytest.raises(RuntimeError, match="bug"):
            await consumer.run()
        await js.publish(subject_of(subjects, "s"), event("s", 2))
        task = asyncio.create_task(consumer.run())  # what a supervisor does
        await asyncio.wait_for(consumer.actor.wait_applied(2), 20)
        consumer.stop()
        await task
    # The failed batch was never committed, so the second run delivered it again.
    assert count(db, "SELECT count(*) FROM events") == 2
    await js.delete_stream(subjects.events_stream)


def test_release_memory_collects_what_a_burst_left_in_cycles() -> None:
    import gc
    import weakref

    from worker.memory import release_memory

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the cyclic collector frees it
    alive = weakref.ref(a)
    del a, b
    gc.disable()
    try:
        assert alive() is not None
        release_memory()
        assert alive() is None
    finally:
        gc.enable()


def _counted_releases(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The actor's releases, counted instead of run; idle after 0.2 s, past 50 events."""
    from worker.replica import ingest_actor as ingest

    releases: list[int] = []
    monkeypatch.setattr(ingest, "release_memory", lambda: releases.append(1))
    monkeypatch.setattr(ingest, "IDLE_RELEASE_S", 0.2)
    monkeypatch.setattr(ingest, "RELEASE_WHEN_IDLE_AFTER", 50)
    return releases


async def _no_dead_letters(r: Rejected) -> None:
    raise AssertionError(r)


async def _released(releases: list[int]) -> None:
    """Until a release was counted (bounded at 30 s: the assertion after it fails)."""
    for _ in range(600):
        if releases:
            return
        await asyncio.sleep(0.05)


async def test_the_end_of_a_burst_gives_back_its_memory(
    writer: SqliteIndexWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once no message came for IDLE_RELEASE_S after enough were applied, the actor
    releases memory once (and not while the burst goes on, nor for a few events)."""
    releases = _counted_releases(monkeypatch)
    actor = IngestActor(writer, dead_letter=_no_dead_letters, batch_size=20, batch_ms=10)
    running = asyncio.create_task(actor.run())
    try:
        await actor.put(IngestItem(1, event("s", 1, "session/start")))
        for seq in range(2, 31):  # 30 events: under the threshold
            await actor.put(IngestItem(seq, event("s", seq)))
        # Applied first (however loaded the machine), then idle past IDLE_RELEASE_S.
        await asyncio.wait_for(actor.wait_applied(30), 30)
        await asyncio.sleep(0.6)
        assert actor.stats.applied == 30 and releases == []
        for seq in range(31, 101):  # 100 in all: over it
            await actor.put(IngestItem(seq, event("s", seq)))
        await asyncio.wait_for(actor.wait_applied(100), 30)
        await _released(releases)
        assert actor.stats.applied == 100 and releases == [1]
        await asyncio.sleep(0.6)  # idle again, nothing new applied: no second release
        assert releases == [1]
    finally:
        actor.stop()
        await running


async def test_a_burst_of_one_batch_is_given_back_too(
    writer: SqliteIndexWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The burst's last batch is still being written when the wait for the next begins:
    the release counts what was taken, so a burst that is one batch is released as well."""
    releases = _counted_releases(monkeypatch)
    actor = IngestActor(writer, dead_letter=_no_dead_letters, batch_size=100, batch_ms=200)
    await actor.put(IngestItem(1, event("s", 1, "session/start")))
    for seq in range(2, 61):  # 60 events, over the threshold, in one batch
        await actor.put(IngestItem(seq, event("s", seq)))
    running = asyncio.create_task(actor.run())
    try:
        await asyncio.wait_for(actor.wait_applied(60), 30)
        await _released(releases)
        assert (actor.stats.batches, releases) == (1, [1])
    finally:
        actor.stop()
        await running
