"""A real NATS slow consumer: the worker's event loop stops while a burst larger than its
endpoints' pending limit arrives on loopback.

The worker process is stopped (SIGSTOP, our own child by pid) and a burst of tool requests
is published; the kernel and nats-server hold it. On SIGCONT, nats-py's read loop queues
what the socket holds (up to 256 KiB per read) before any endpoint task runs, so each
endpoint's pending queue passes its limit (set low here, 16 messages) and nats-py drops the
rest as a slow consumer. The worker must count and log the drops, answer each dropped
request ``SESSION_QUERY_OVERLOADED`` at once, keep serving afterwards, and keep its RSS
bounded. Bounded: two rounds of 400 requests, 1 s stops, 20 s waits.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import nats
import orjson
from nats.aio.client import Client as NATS

from bench import corpus
from bench.loadgen import RequestMaker
from contracts.subjects import SEARCH_TOOLS, TOOL_NAMES, Subjects
from tests.reliability._harness import (
    NO_REPLY,
    OK,
    Requester,
    WorkerProcess,
    poll,
    seed_then_start,
    small_corpus,
    value_of,
)
from worker.config import WorkerConfig

OVERLOADED = "SESSION_QUERY_OVERLOADED"
DROPPED_EVENT = "slow consumer: message dropped"
PENDING_MSGS = 16
ROUNDS = 2
PER_ROUND = 400
PAUSE_S = 1.0
WAIT_S = 20.0
# As in test_overload: a burst may warm caches and arenas; it must not keep requests.
RSS_GROWTH_BOUND_KIB = 24 * 1024
_MIX = {
    "session_search": 0.2,
    "session_event_search": 0.2,
    "session_trace": 0.2,
    "session_event_trace": 0.2,
    "session_event_read": 0.2,
}


async def endpoint_stats(nc: NATS, subjects: Subjects) -> dict[str, dict[str, Any]]:
    """Each tool endpoint's ``data`` from ``$SRV.STATS`` (the worker's own counters)."""
    msg = await nc.request("$SRV.STATS.session-query", b"", timeout=10)
    endpoints = orjson.loads(msg.data)["endpoints"]
    return {e["name"]: e.get("data") or {} for e in endpoints if e["name"] in TOOL_NAMES}


async def paused_burst(
    worker: WorkerProcess, requester: Requester, maker: RequestMaker, samples: list[int]
) -> list[tuple[str, str, float]]:
    """Stop the worker, publish PER_ROUND requests, resume it; (tool, outcome, seconds from
    the resume to the outcome) for each."""
    nc = requester.nc
    published = int(nc.stats["out_msgs"])
    worker.pause()
    resumed = 0.0
    try:
        calls = []
        for _ in range(PER_ROUND):
            tool = maker.tool(_MIX)
            arguments, caller = maker.request(tool)
            call = requester.call(
                tool, arguments, caller.session_id, deadline_s=WAIT_S, wait_s=WAIT_S
            )
            calls.append((tool, asyncio.ensure_future(call)))
        # Every call has published, and the server has them (held for the stopped worker).
        sent = published + PER_ROUND
        await poll(lambda: value_of(int(nc.stats["out_msgs"])), lambda n: n >= sent, 10)
        await nc.flush()
        await asyncio.sleep(PAUSE_S)
        samples.append(worker.rss_kib())
    finally:
        worker.resume()
        resumed = time.perf_counter()
    out = []
    for tool, task in calls:
        _, outcome = await task
        out.append((tool, outcome, time.perf_counter() - resumed))
    return out


async def test_a_stopped_worker_sheds_a_burst_as_a_slow_consumer_and_keeps_serving(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    base = small_corpus()
    nc = await nats.connect(nats_url)
    worker = WorkerProcess(
        nats_url,
        subjects,
        tmp_path / "index.sqlite",
        tmp_path / "worker.log",
        config={"endpoint_pending_msgs": PENDING_MSGS},
    )
    try:
        await seed_then_start(nc, subjects, base, worker)
        requester = await Requester(nc, subjects).open()
        maker = RequestMaker(corpus.plan_sessions(base), seed=5)

        async def each_tool_once() -> dict[str, str]:
            got = {}
            for tool in TOOL_NAMES:
                arguments, caller = maker.request(tool)
                _, got[tool] = await requester.call(
                    tool, arguments, caller.session_id, deadline_s=WAIT_S, wait_s=WAIT_S
                )
            return got

        warm = await each_tool_once()  # readers, caches and buffers exist before "before"
        before = worker.rss_kib()
        samples: list[int] = []
        results: list[tuple[str, str, float]] = []
        for _ in range(ROUNDS):
            results += await paused_burst(worker, requester, maker, samples)
            samples.append(worker.rss_kib())
        after_burst = await each_tool_once()
        ping = await nc.request("$SRV.PING.session-query", b"", timeout=5)
        stats = await endpoint_stats(nc, subjects)
        await asyncio.sleep(1.0)
        after = worker.rss_kib()

        codes = Counter(outcome for _, outcome, _ in results)
        dropped = {tool: int(stats[tool].get("slow_consumer_dropped", -1)) for tool in TOOL_NAMES}
        overloaded_s = [s for _, outcome, s in results if outcome == OVERLOADED]
        logged = [line for line in worker.log_lines() if line.get("event") == DROPPED_EVENT]
        result = {
            "sent": len(results),
            "codes": dict(codes),
            "slow_consumer_dropped": dropped,
            "slow_consumer_log_lines": len(logged),
            "overloaded_after_resume_max_ms": round(max(overloaded_s, default=0) * 1000, 1),
            "pending_msgs_limit": {t: stats[t].get("pending_msgs_limit") for t in TOOL_NAMES},
            "rss_kib": {"before": before, "peak": max(samples), "after": after},
            "after_burst": after_burst,
        }
        print(json.dumps(result, indent=1))
        assert worker.alive, worker.log_tail()
        assert set(warm.values()) <= {OK, "SESSION_QUERY_NOT_FOUND"}, warm
        # The limits are on the endpoints' real subscriptions (bytes: the default, at least
        # twice max_payload).
        assert all(stats[t].get("pending_msgs_limit") == PENDING_MSGS for t in TOOL_NAMES), stats
        least_bytes = max(WorkerConfig().endpoint_pending_bytes, 2 * nc.max_payload)
        assert all(stats[t].get("pending_bytes_limit") == least_bytes for t in TOOL_NAMES)
        # A real slow consumer: nats-py dropped requests, the worker counted and logged them.
        total_dropped = sum(dropped.values())
        assert 0 < total_dropped <= ROUNDS * PER_ROUND, dropped
        assert logged and all(line.get("level") == "error" for line in logged), logged[:1]
        assert {"subject", "dropped_on_subject", "pending_msgs_limit"} <= set(logged[0])
        # Every request was answered: each dropped one OVERLOADED by the error callback, the
        # others by the tools or the lanes. The server drops nothing of a ~150 KB burst held
        # for 1 s (its max_pending is 64 MiB, its write deadline 10 s), so no request times
        # out at the client.
        assert codes[NO_REPLY] == 0, codes
        assert set(codes) <= {OK, "SESSION_QUERY_NOT_FOUND", OVERLOADED}, codes
        assert codes[OVERLOADED] >= total_dropped, (codes, dropped)
        # Shed at once after the resume, not left to the deadline.
        assert max(overloaded_s) < WAIT_S / 2
        # Still serving, with every tool, afterwards.
        assert ping.data
        assert set(after_burst.values()) <= {OK, "SESSION_QUERY_NOT_FOUND"}, after_burst
        assert any(after_burst[t] == OK for t in SEARCH_TOOLS), after_burst
        assert max(samples) - before < RSS_GROWTH_BOUND_KIB
        assert after - before < RSS_GROWTH_BOUND_KIB
    finally:
        await worker.stop()
        await nc.close()
