"""nats-server restarted under mixed load (all five tools, ingestion running).

The worker (its own process, connected the way ``sessionquery serve`` connects) must
reconnect by itself and re-create its subscriptions; no queued search may be lost: every
search the lane put on the work queue is answered (a result, or TIMEOUT when it expired
while queued). Events published through the restart land exactly once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from bench import corpus
from contracts.subjects import SEARCH_TOOLS, TOOL_NAMES, Subjects
from tests.reliability._harness import (
    NO_REPLY,
    NO_RESPONDERS,
    OK,
    EventFeed,
    MixedLoad,
    Requester,
    WorkerProcess,
    accepted_searches,
    check_ingest,
    drained,
    extra_corpus,
    seed_then_start,
    small_corpus,
    until_sent,
)
from worker.transport.embedded_server import EmbeddedNatsServer

# Replies a healthy worker may give this load (foreign and missing ids are NOT_FOUND).
TOOL_CODES = {OK, "SESSION_QUERY_NOT_FOUND", "SESSION_QUERY_TIMEOUT"}
# Only while the server is away: nobody to route to, or the request/reply died with it.
OUTAGE = {NO_REPLY, NO_RESPONDERS, "SESSION_QUERY_OVERLOADED"}


async def restart_under_load(
    server: EmbeddedNatsServer,
    subjects: Subjects,
    tmp_path: Path,
    *,
    restarts: int,
    per_phase: int,
    extra_sessions: int,
) -> dict[str, Any]:
    url = server.url
    base = small_corpus()
    opts: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.05}
    nc = await nats.connect(url, **opts)
    worker = WorkerProcess(
        url, subjects, tmp_path / "index.sqlite", tmp_path / "worker.log",
        config={"search_ack_wait_ms": 5000},
    )  # fmt: skip
    try:
        feed = await seed_then_start(nc, subjects, base, worker)
        plans = corpus.plan_sessions(base)
        requester = await Requester(nc, subjects).open()
        load = MixedLoad(
            requester, plans, lanes=6, requests=per_phase * (restarts + 2) * 10, short_share=0.1
        )
        extra = EventFeed(nc, subjects, extra_corpus(base, extra_sessions, seed=99))
        extra.start(rate=100)
        load.start()
        await until_sent(load, per_phase)
        for _ in range(restarts):
            before = load.sent()
            await asyncio.to_thread(server.stop)
            await asyncio.sleep(0.3)  # the clients see it gone and start reconnecting
            await asyncio.to_thread(server.start)
            # Serving again: the load makes progress through the restarted server.
            await until_sent(load, before + per_phase, within=90)
        tally = await load.stop()
        await extra.wait()
        await drained(nc, subjects)

        # Re-created subscriptions: every tool endpoint and discovery answer again.
        after: dict[str, str] = {}
        for tool in TOOL_NAMES:
            arguments, caller = load.maker.request(tool)
            _, after[tool] = await requester.call(
                tool, arguments, caller.session_id, deadline_s=20, wait_s=30
            )
        ping = await nc.request("$SRV.PING.session-query", b"", timeout=5)

        accepted = accepted_searches([worker])
        answered = {rid for rid, got in requester.replies.items() if got}
        lost = accepted - answered
        ingest = await check_ingest(nc, subjects, worker.db, extra.published + feed.published)
        result = {
            "restarts": restarts,
            **tally.summary(),
            "searches_accepted": len(accepted),
            "searches_accepted_answered": len(accepted & answered),
            "searches_accepted_lost": sorted(lost),
            "accepted_expired_timeout": sum(
                1 for rid in accepted if "SESSION_QUERY_TIMEOUT" in requester.replies.get(rid, [])
            ),
            "events_published": feed.published + extra.published,
            "publish_retries": extra.retries,
            "ingest": ingest,
            "after_restart": after,
        }
        print(json.dumps(result, default=repr, indent=1))
        assert worker.alive, worker.log_tail()
        assert ping.data, "discovery answers after the restart"
        assert set(after.values()) <= {OK, "SESSION_QUERY_NOT_FOUND"}, after
        assert accepted, "the load put searches on the work queue"
        assert not lost, f"accepted searches never answered: {sorted(lost)}"
        codes = set(tally.total())
        assert codes <= TOOL_CODES | OUTAGE, codes
        # Bounded by the faults, not by the volume of load: each lane has one request in
        # flight, so a fault costs it a few outcomes at most (OUTAGE_PER_LANE_PER_FAULT).
        outage = sum(n for code, n in tally.total().items() if code in OUTAGE)
        assert outage <= load.outage_bound(faults=restarts), (outage, tally.summary())
        for tool in SEARCH_TOOLS:
            assert tally.outcomes[tool][OK] > 0
        ingest.assert_exact(feed.published + extra.published)
        return result
    finally:
        await worker.stop()
        await nc.close()


async def test_server_restart_under_mixed_load_loses_no_queued_search(
    own_nats_server: EmbeddedNatsServer, subjects: Subjects, tmp_path: Path
) -> None:
    await restart_under_load(
        own_nats_server, subjects, tmp_path, restarts=1, per_phase=150, extra_sessions=12
    )


@pytest.mark.slow
async def test_server_restarted_three_times_under_longer_load(
    own_nats_server: EmbeddedNatsServer, subjects: Subjects, tmp_path: Path
) -> None:
    await restart_under_load(
        own_nats_server, subjects, tmp_path, restarts=3, per_phase=600, extra_sessions=60
    )
