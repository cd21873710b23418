"""The publisher's per-session order check, on a real nats-server: what the worker will
dead-letter is said before it is published, for every format (one publish path)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY, workspace_key
from contracts.subjects import Subjects
from worker.importers.base import Outgoing
from worker.importers.publish import Publisher


def out(session_id: str, seq: int, kind: str = "message/user", key: str | None = None) -> Outgoing:
    body = {"session_id": session_id, "seq": seq, "type": kind}
    return Outgoing(session_id, seq, orjson.dumps(body), key, kind=kind)


@pytest.fixture
async def stream(nc: NATS, subjects: Subjects) -> AsyncIterator[Subjects]:
    await Publisher(nc, subjects).prepare()
    try:
        yield subjects
    finally:
        await nc.jetstream().delete_stream(subjects.events_stream)


async def send_all(publisher: Publisher, *events: Outgoing) -> list[str | None]:
    reasons = [await publisher.send(event) for event in events]
    await publisher.settle()
    return reasons


async def test_a_session_in_order_passes_and_breaks_are_named(nc: NATS, stream: Subjects) -> None:
    publisher = Publisher(nc, stream, window=2)
    reasons = await send_all(
        publisher,
        out("s-a", 1, "session/start"), out("s-a", 2), out("s-a", 2),  # a duplicate: no-op
        out("s-a", 4),  # gap
        out("s-a", 3, "session/end"), out("s-a", 4),  # after the end
        out("s-b", 1),  # seq 1 that is not a session/start
    )  # fmt: skip
    assert reasons == [
        None, None, None,
        "gap in session s-a: expected seq 3, got 4",
        None,
        "session s-a ended at seq 3: seq 4 after its session/end",
        "unknown session s-b: seq 1 (message/user) before its session/start",
    ]  # fmt: skip
    assert publisher.order.refused == 3 and len(publisher.order.reasons) == 3
    assert publisher.published == 7  # refused events are still published, and counted


async def test_a_session_begun_in_an_earlier_import_is_looked_up_in_the_stream(
    nc: NATS, stream: Subjects
) -> None:
    first = Publisher(nc, stream)
    assert await send_all(first, out("s-c", 1, "session/start"), out("s-c", 2)) == [None, None]
    # A later import (fresh state) goes on where the stream ends; a gap is still a gap.
    later = Publisher(nc, stream)
    assert await send_all(later, out("s-c", 3), out("s-c", 5), out("s-c", 2)) == [
        None,
        "gap in session s-c: expected seq 4, got 5",
        None,  # at or below the stream's last: a duplicate
    ]
    # An ended session in the stream refuses what follows; an unknown one its first event.
    await send_all(later, out("s-c", 4, "session/end"))
    again = Publisher(nc, stream)
    assert await send_all(again, out("s-c", 5), out("s-new", 3)) == [
        "session s-c ended at seq 4: seq 5 after its session/end",
        "unknown session s-new: seq 3 (message/user) before its session/start",
    ]


async def test_a_continued_session_is_published_under_the_key_the_stream_holds(
    nc: NATS, stream: Subjects
) -> None:
    """An events file that goes on with a session begun elsewhere does not know its cwd:
    the key comes from the session's stored subject, so its events stay in one partition."""
    key = workspace_key("/work/continued")
    await send_all(Publisher(nc, stream), out("s-k", 1, "session/start", key))
    later = Publisher(nc, stream)
    assert await send_all(later, out("s-k", 2)) == [None]
    held = await nc.jetstream().get_last_msg(
        stream.events_stream, stream.stored_session("*", "s-k")
    )
    assert held.subject is not None and held.seq == 2
    assert Subjects.key_of_stored(held.subject) == key
    # A session the stream does not hold gets the no-cwd key (and its reason).
    assert later.order.key_of("s-none") == NO_CWD_KEY
