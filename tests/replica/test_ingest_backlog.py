"""What an event feed receives while the ingest mailbox is full waits in its backlog, in
order, and the server is held back by the flow-control answers it defers."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from contracts.subjects import Subjects
from tests._events import event, subject_of
from worker.config import WorkerConfig
from worker.replica.feed_backlog import FeedBacklog
from worker.replica.ingest_consumer import EventConsumer, ensure_events_stream
from worker.replica.ingest_feed import BACKLOG_FULL, EventFeed
from worker.store.index.writer import SqliteIndexWriter
from worker.store.writer_protocol import IngestItem
from worker.tasks import cancel_and_wait


def test_the_backlog_keeps_messages_and_replies_in_their_order() -> None:
    backlog = FeedBacklog()
    backlog.add_message(7, "ev.s", b"first")
    backlog.add_reply("$JS.FC.stream.consumer.1")
    backlog.add_message(8, "ev.\u00e9", b"")
    backlog.add_message(9, "ev.s", bytes(range(256)))
    assert len(backlog) == 4
    assert backlog.take() == IngestItem(7, b"first", "ev.s")
    assert backlog.take() == "$JS.FC.stream.consumer.1"
    assert backlog.take() == IngestItem(8, b"", "ev.\u00e9")
    assert backlog.take() == IngestItem(9, bytes(range(256)), "ev.s")
    assert len(backlog) == 0


def test_a_long_backlog_is_taken_whole_across_its_compactions() -> None:
    backlog = FeedBacklog()
    body = b"x" * 1000
    taken: list[int] = []
    for seq in range(1, 5001):  # ~5 MB: the read part is cut off several times
        backlog.add_message(seq, "ev.s", body)
        if seq % 3 == 0:
            item = backlog.take()
            assert isinstance(item, IngestItem) and item.data == body
            taken.append(item.stream_seq)
    while backlog:
        item = backlog.take()
        assert isinstance(item, IngestItem)
        taken.append(item.stream_seq)
    assert taken == list(range(1, 5001))


async def test_a_full_mailbox_holds_the_server_back_and_nothing_is_lost(
    nc: NATS, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    # 8 MB: well past the server's flow-control window (~2 MB when measured).
    total, body = 1000, event("s", 2, payload={"text": "y" * 8000})
    for _ in range(total):
        await js.publish(subject_of(subjects, "s"), body)
    mailbox: asyncio.Queue[IngestItem] = asyncio.Queue(maxsize=10)
    feed = EventFeed(nc, js, subjects, mailbox, start_seq=1, idle_heartbeat_s=1.0)
    await feed.open()
    try:
        # Nobody takes from the mailbox: deliveries stop at the flow-control window.
        delivered = await _settled_deliveries(js, subjects)
        assert mailbox.full()
        assert 0 < delivered < total
        # Whatever was delivered and is not in the mailbox comes to wait in the backlog
        # (with the deferred flow-control answers), none of it in the client library's
        # queue (given time to read its socket on a loaded machine).
        for _ in range(100):
            if feed.backlog_size >= delivered - mailbox.qsize():
                break
            await asyncio.sleep(0.1)
        assert feed.backlog_size >= delivered - mailbox.qsize()
        seqs = [(await asyncio.wait_for(mailbox.get(), 20)).stream_seq for _ in range(total)]
    finally:
        await feed.close()
    assert seqs == list(range(1, total + 1))
    assert feed.next_seq == total + 1 and feed.backlog_size == 0
    await js.delete_stream(subjects.events_stream)


async def _settled_deliveries(js: JetStreamContext, subjects: Subjects) -> int:
    """The consumer's delivered count once it stopped moving for a second."""
    last, since = -1, time.monotonic()
    while time.monotonic() - since < 1.0:
        infos = await js.consumers_info(subjects.events_stream)
        delivered = infos[0].delivered
        now = (delivered.consumer_seq or 0) if delivered is not None else 0
        if now != last:
            last, since = now, time.monotonic()
        await asyncio.sleep(0.1)
    return last


async def test_a_feed_holds_at_most_its_backlog_bound_and_the_next_feed_goes_on(
    nc: NATS, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    total, body = 100, event("s", 2, payload={"text": "z" * 4000})
    for _ in range(total):
        await js.publish(subject_of(subjects, "s"), body)
    bound = 40_000  # ten messages: far below the server's flow-control window
    mailbox: asyncio.Queue[IngestItem] = asyncio.Queue(maxsize=5)
    seqs: list[int] = []
    feeds = 0
    next_seq = 1
    while next_seq <= total:
        feed = EventFeed(
            nc, js, subjects, mailbox, start_seq=next_seq, idle_heartbeat_s=1.0,
            max_backlog_bytes=bound,
        )  # fmt: skip
        await feed.open()
        feeds += 1
        try:
            # Nobody takes from the mailbox yet: the backlog stops at its bound (plus the
            # message that reached it), whatever the server sends.
            await _settled_deliveries(js, subjects)
            assert feed._backlog.size_bytes < bound + len(body) + 100
            watching = asyncio.create_task(feed.watch())
            while not watching.done() or not mailbox.empty():
                with contextlib.suppress(TimeoutError):
                    seqs.append((await asyncio.wait_for(mailbox.get(), 0.5)).stream_seq)
                if len(seqs) == total:
                    break
            if watching.done():
                assert watching.result() == BACKLOG_FULL
            else:
                await cancel_and_wait(watching)
        finally:
            await feed.close()
        next_seq = feed.next_seq
    assert seqs == list(range(1, total + 1))  # each once, in order, across the feeds
    assert feeds > 1
    await js.delete_stream(subjects.events_stream)


async def test_the_consumer_gives_its_feeds_and_mailbox_their_bounds(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    async with await SqliteIndexWriter.open(tmp_path / "index.sqlite") as writer:
        consumer = EventConsumer(
            nc, writer, subjects=subjects, mailbox_size=123, backlog_bytes=45_678
        )
        assert consumer.actor.mailbox.maxsize == 123
        consumer._next_seq = await consumer.actor.start_from_writer()  # as ``run`` does
        feed = await consumer._open_feed(js)
        try:
            assert feed._max_backlog == 45_678
        finally:
            await feed.close()
    defaults = WorkerConfig()
    assert (defaults.ingest_mailbox_size, defaults.ingest_backlog_mib) == (2000, 8)
    await js.delete_stream(subjects.events_stream)
