"""A worker SIGKILLed under load, with a second worker beside it.

Worker A hangs on a search it fetched (a stuck backend) and is SIGKILLed holding it,
while the load (all five tools) and ingestion run. The kill lands with A's index behind
the stream: A is stopped (SIGSTOP) while one event is published, then SIGKILLed, so it
cannot have indexed that event. The search it held is redelivered to worker B after the
ack wait and answered; every search either worker accepted is answered. A is restarted on
the same index file: ingestion resumes with zero lost or doubled events (count and
checksum against the stream), a clean SQLite integrity check and a search index that matches
the store.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS

from bench import corpus
from contracts.subjects import Subjects
from tests._events import routes_for
from tests._index import index_seq
from tests.reliability._harness import (
    NO_REPLY,
    OK,
    EventFeed,
    MixedLoad,
    Requester,
    WorkerProcess,
    accepted_searches,
    check_ingest,
    drained,
    ensure_events_stream,
    extra_corpus,
    poll,
    small_corpus,
    until_sent,
    value_of,
    wait_indexed,
)

ACK_WAIT_MS = 3000
EXPECTED = {OK, "SESSION_QUERY_NOT_FOUND"}


async def publish_event(nc: NATS, subjects: Subjects, event: dict[str, Any]) -> int:
    """Publish one event; its stream sequence once the stream has it."""
    ack = await nc.jetstream().publish(
        routes_for(subjects).subject(event),
        corpus.encode(event),
        headers={"Nats-Msg-Id": corpus.msg_id(event)},
        timeout=10,
    )
    return int(ack.seq)


async def kill_under_load(
    nats_url: str,
    subjects: Subjects,
    tmp_path: Path,
    *,
    per_phase: int,
    extra_sessions: int,
    hold_at: int,
) -> dict[str, Any]:
    base = small_corpus()
    nc = await nats.connect(nats_url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    settings = {"search_ack_wait_ms": ACK_WAIT_MS}

    def worker(label: str, db: str, hold: int = 0) -> WorkerProcess:
        return WorkerProcess(
            nats_url, subjects, tmp_path / db, tmp_path / f"{label}.log",
            label=label, config=settings, hold_fetch=hold,
        )  # fmt: skip

    # A hangs on its hold_at-th search: killed mid-search, after serving for a while.
    a = worker("A", "a.sqlite", hold=hold_at)
    b = worker("B", "b.sqlite")
    a2 = worker("A2", "a.sqlite")  # A restarted on the same index file
    try:
        await ensure_events_stream(nc.jetstream(), subjects)
        feed = EventFeed(nc, subjects, base)
        feed.start(rate=5000)
        await feed.wait()
        await a.start()
        await b.start()
        for w in (a, b):
            await wait_indexed(w.db, feed.published)
        requester = await Requester(nc, subjects).open()
        # The phases below end the load; the budget only bounds it. On a quiet machine six
        # lanes send ~300 requests/s, so it must outlast the redelivery wait (ack_wait + 30 s).
        load = MixedLoad(requester, corpus.plan_sessions(base), lanes=6, requests=per_phase * 200)
        extra = EventFeed(nc, subjects, extra_corpus(base, extra_sessions, seed=77))
        # The first event of one more new session, published while A is stopped.
        late_event = next(e for e in corpus.generate(extra_corpus(base, 1, seed=78)))
        assert late_event["seq"] == 1
        extra.start(rate=150)
        load.start()
        held = await a.wait_holding()
        await until_sent(load, load.sent() + 20)  # A holds it while the load goes on
        # Killed with its index behind the stream: stopped, A can neither commit nor take
        # the event published now, so what it holds at the kill is what it held when
        # stopped, and the stream is past it. The pause lasts two round trips.
        extra_running_at_kill = extra.running
        a.pause()
        try:
            killed_at = await asyncio.to_thread(index_seq, a.db)
            unseen_seq = await publish_event(nc, subjects, late_event)
            stream_info = await nc.jetstream().stream_info(subjects.events_stream)
            stream_at_kill = stream_info.state.last_seq
        finally:
            await a.kill()
        assert a.process is not None and a.process.returncode == -9

        # The held search comes back from the work queue to B, is run and answered.
        redelivery_s = ACK_WAIT_MS / 1000 + 30
        await poll(lambda: value_of(requester.replies.get(held)), bool, within=redelivery_s)
        await until_sent(load, load.sent() + per_phase, within=90)
        await a2.start()
        await until_sent(load, load.sent() + per_phase, within=90)
        tally = await load.stop()
        await extra.wait()
        await drained(nc, subjects)

        accepted = accepted_searches([a, b, a2])
        answered = {rid for rid, got in requester.replies.items() if got}
        redelivered = [f for f in b.fetched() + a2.fetched() if f[1] == held]
        total_events = feed.published + extra.published + 1  # + late_event
        ingest_a = await check_ingest(nc, subjects, a.db, total_events)
        ingest_b = await check_ingest(nc, subjects, b.db, total_events)
        result = {
            **tally.summary(),
            "held_by_killed_worker": held,
            "held_reply": requester.replies.get(held),
            "redelivered_as": redelivered,
            "searches_accepted": len(accepted),
            "searches_accepted_lost": sorted(accepted - answered),
            "events_published": total_events,
            "ingest_restarted_a": ingest_a,
            "ingest_b": ingest_b,
            "a_indexed_through_at_kill": killed_at,
            "event_published_while_a_stopped": unseen_seq,
            "stream_last_seq_at_kill": stream_at_kill,
            "extra_feed_running_at_kill": extra_running_at_kill,
        }
        print(json.dumps(result, default=repr, indent=1))
        assert b.alive and a2.alive
        assert requester.replies[held][0] in EXPECTED
        assert redelivered and redelivered[0][0] == "B" and redelivered[0][2] >= 2
        assert not accepted - answered
        # A had ingested the base corpus and was behind the stream when killed.
        assert feed.published <= killed_at < unseen_seq <= stream_at_kill, result
        codes = set(tally.total())
        # Only requests A held when it was stopped and killed go unanswered. Each lane has
        # one request in flight and waits wait_s (30 s) for it, by which time the server has
        # long dropped A's closed connection and routes to B: at most one per lane.
        assert codes <= EXPECTED | {NO_REPLY}, codes
        assert tally.total()[NO_REPLY] <= load.lanes, tally.summary()
        for ingest in (ingest_a, ingest_b):
            ingest.assert_exact(total_events)
        return result
    finally:
        for w in (a2, b, a):
            await w.stop()
        await nc.close()


async def test_sigkill_under_load_redelivers_and_ingestion_resumes_exactly_once(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    await kill_under_load(
        nats_url, subjects, tmp_path, per_phase=100, extra_sessions=12, hold_at=20
    )


@pytest.mark.slow
async def test_sigkill_under_longer_load(nats_url: str, subjects: Subjects, tmp_path: Path) -> None:
    await kill_under_load(
        nats_url, subjects, tmp_path, per_phase=600, extra_sessions=60, hold_at=250
    )
