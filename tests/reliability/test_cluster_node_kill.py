"""One node of a three-node NATS cluster (R3 streams) SIGKILLed under load.

Two workers and the requester use the whole cluster (every node a seed); the events
stream, the search work queue and the spill bucket have three replicas. The node leading
the search work queue is killed while the five tools and ingestion run. Zero accepted
searches may be lost, and each worker's index must hold exactly what was published
(count and checksum against the stream), integrity clean.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS

from bench import corpus
from contracts.subjects import SEARCH_TOOLS, Subjects
from tests._harness import until
from tests.reliability._cluster import LocalCluster, wait_jetstream
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
    ensure_events_stream,
    extra_corpus,
    small_corpus,
    until_sent,
    wait_indexed,
)

REPLICAS = 3
EXPECTED = {OK, "SESSION_QUERY_NOT_FOUND", "SESSION_QUERY_TIMEOUT"}
# Only around the kill: a request or reply in flight through the dead node, a JetStream
# publish that timed out while the stream elected a new leader.
OUTAGE = {NO_REPLY, NO_RESPONDERS, "SESSION_QUERY_OVERLOADED"}


def pick_victim(
    cluster: LocalCluster, requester: NATS, search_leader: str, labels: list[str]
) -> str:
    """The node to kill: the work queue's leader and the workers' own nodes score, the
    requester's node is spared. Core NATS replies are at most once: a reply in flight to
    a requester whose node dies is gone with it, which no worker can see or repair (that
    case is measured apart, in docs/reliability.md); here every reply has a live path."""
    url = requester.connected_url
    assert url is not None and url.port is not None
    mine = cluster.node_of_port(url.port)
    scores: dict[str, int] = {}
    for node in cluster.nodes:
        if node is mine or node.server_name is None:
            continue
        clients = cluster.clients_on(node)
        on_it = sum(1 for label in labels if f"reliability-{label}" in clients)
        scores[node.server_name] = 2 * (node.server_name == search_leader) + on_it
    return max(scores, key=lambda name: scores[name])


def _searches_ok(load: MixedLoad) -> int:
    return sum(load.tally.outcomes[t][OK] for t in SEARCH_TOOLS if t in load.tally.outcomes)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    nodes = LocalCluster(tmp_path / "cluster").start()
    try:
        yield nodes
    finally:
        nodes.stop()


async def node_kill_under_load(
    cluster: LocalCluster,
    subjects: Subjects,
    tmp_path: Path,
    *,
    per_phase: int,
    extra_sessions: int,
) -> dict[str, Any]:
    base = small_corpus()
    seeds = cluster.urls.split(",")
    nc = await nats.connect(servers=seeds, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    settings = {"stream_replicas": REPLICAS, "search_ack_wait_ms": 5000}
    workers = [
        WorkerProcess(
            cluster.urls,
            subjects,
            tmp_path / f"{label}.sqlite",
            tmp_path / f"{label}.log",
            label=label,
            config=settings,
        )
        for label in ("A", "B")
    ]
    try:
        js = nc.jetstream()
        await wait_jetstream(nc)
        await ensure_events_stream(js, subjects, replicas=REPLICAS)
        feed = EventFeed(nc, subjects, base)
        feed.start(rate=5000)
        await feed.wait()
        for w in workers:
            await w.start()
        for w in workers:
            await wait_indexed(w.db, feed.published)
        requester = await Requester(nc, subjects).open()
        # The phases below end the load; the budget only bounds it. On a quiet machine six
        # lanes send ~300 requests/s, so it must outlast the redelivery wait (ack_wait + 30 s).
        load = MixedLoad(requester, corpus.plan_sessions(base), lanes=6, requests=per_phase * 200)
        extra = EventFeed(nc, subjects, extra_corpus(base, extra_sessions, seed=55))
        extra.start(rate=100)
        load.start()
        await until_sent(load, per_phase)

        search_info = await js.stream_info(subjects.search_stream)
        events_info = await js.stream_info(subjects.events_stream)
        assert search_info.config.num_replicas == events_info.config.num_replicas == REPLICAS
        assert search_info.cluster is not None and search_info.cluster.leader
        victim = await asyncio.to_thread(
            pick_victim, cluster, nc, search_info.cluster.leader, [w.label for w in workers]
        )
        await asyncio.to_thread(cluster.node(victim).kill)
        killed_at_sent = load.sent()

        searches_ok_at_kill = _searches_ok(load)
        await until_sent(load, killed_at_sent + per_phase, within=120)
        # Serving searches again after the kill (the work queue has a new leader).
        await until(lambda: _searches_ok(load) >= searches_ok_at_kill + 20, within=120)
        tally = await load.stop()
        await extra.wait(within=180)
        await drained(nc, subjects, within=90)

        accepted = accepted_searches(workers)
        answered = {rid for rid, got in requester.replies.items() if got}
        total_events = feed.published + extra.published
        checks = [await check_ingest(nc, subjects, w.db, total_events) for w in workers]
        new_leader = (await js.stream_info(subjects.search_stream)).cluster
        result = {
            "killed_node": victim,
            "search_leader_at_kill": search_info.cluster.leader,
            "searches_ok_after_kill": _searches_ok(load) - searches_ok_at_kill,
            "search_stream_leader_after": new_leader.leader if new_leader else None,
            **tally.summary(),
            "searches_accepted": len(accepted),
            "searches_accepted_lost": sorted(accepted - answered),
            "events_published": total_events,
            "publish_retries": extra.retries,
            "ingest": {w.label: c for w, c in zip(workers, checks, strict=True)},
        }
        print(json.dumps(result, default=repr, indent=1))
        assert all(w.alive for w in workers), [w.log_tail() for w in workers]
        assert accepted, "the load put searches on the work queue"
        assert not accepted - answered, sorted(accepted - answered)
        codes = set(tally.total())
        assert codes <= EXPECTED | OUTAGE, codes
        # Bounded by the faults, not by the volume of load: each lane has one request in
        # flight, so a fault costs it a few outcomes at most (OUTAGE_PER_LANE_PER_FAULT).
        outage = sum(n for code, n in tally.total().items() if code in OUTAGE)
        assert outage <= load.outage_bound(faults=1), (outage, tally.summary())
        for check in checks:
            check.assert_exact(total_events)
        return result
    finally:
        for w in workers:
            await w.stop()
        await nc.close()


async def test_a_killed_node_loses_no_queued_search_and_no_event(
    cluster: LocalCluster, subjects: Subjects, tmp_path: Path
) -> None:
    await node_kill_under_load(cluster, subjects, tmp_path, per_phase=150, extra_sessions=12)


@pytest.mark.slow
async def test_a_killed_node_under_longer_load(
    cluster: LocalCluster, subjects: Subjects, tmp_path: Path
) -> None:
    await node_kill_under_load(cluster, subjects, tmp_path, per_phase=800, extra_sessions=60)
