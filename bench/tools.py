"""Tools bench: each tool end to end over NATS through a real ``Worker``, against floors
measured in the same run on the same nats-server and the same index file.

Over 400 lines: one bench: each phase over NATS beside the floors it is compared with.

1. Publish the corpus to a fresh SESSIONS stream; start a ``Worker`` (its own connection,
   a fresh index) and wait until it has ingested the stream.
2. Floors: raw nats-py echo (1 KiB; sequential p50/p99, throughput with 64 in flight, the
   responder's CPU per reply) and the reference FTS5 query (the search before issue 10: a
   global FTS5 table with a workspace token, ``bench.floors.ReferenceFts``) on a file
   built from the same corpus (printed; its 0.3x target was retired by issue 20).
3. ``session_search`` with ``samples`` queries of each class (``bench.vocabulary``: rare
   identifier, common word, three words, natural-language question), sequential, callers
   spread over the workspaces; every other tool called ``samples`` times in turn with
   realistic arguments over the corpus plan (``bench.loadgen.RequestMaker``).
4. ``session_event_read`` with 64 in flight; the worker's parallel queue is sized so 64 in
   flight fit (pool 8 running + waiting room), OVERLOADED replies are counted, not timed.
5. In-process floors, in this process on the worker's index file once the NATS phases
   are over: the same ``session_search`` pages (same queries, same callers) through the
   tool layer alone, and beside step 4 the same read mix 64 at a time (informational).
   The worker's CPU per call (all its threads, from /proc) over ``cpu_calls`` sequential
   calls of each exact tool and up to 100 searches.
6. Spill: a 16 MiB result stored by the worker's spill step (``Spiller.store``) and read
   back with ``SessionQueryClient.fetch_spilled`` (digest verified).

Targets (issue 31's decisions; every floor measured in the same run; the table's floor
column is the sum each target names):
- ``session_search`` (per query class) and ``session_event_search`` p50 over NATS <= 1.15x
  (the same page in-process + a JetStream work-queue echo: publish to a work-queue stream,
  pull, reply, ack; ``bench.child wq-echo``);
- traces and reads p50 <= echo p50 + 1.5x the same tool's in-process p50;
- the worker's CPU per exact call <= the echo responder's CPU per reply + 1.5x the same
  tool's in-process CPU per call;
- reads with 64 in flight >= 0.25x the echo's throughput;
- spill fetch >= 200 MiB/s; the worker's RssAnon after ingesting <= 1.5x a worker restarted
  on the same index (each read after 3 s idle; after the load is printed too).
p99s, the reference FTS5 query and the in-process read ceiling are printed beside them.
``python -m bench.tools --sessions 200 --events 250`` (``--profile /tmp/p``: every child
process's event loop profiled, the worker's to ``/tmp/p.worker.<pid>``; read with ``pstats``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus, floors, vocabulary
from bench.child import PROFILE_ENV, ChildProcess, wait_ingested, wait_searchable, worker_args
from bench.loadgen import RequestMaker, RssSampler, read_rss_kib
from bench.report import (
    Absolute,
    Check,
    Latency,
    bench_subjects,
    checks_of,
    format_table,
    nats_url,
    quiet_worker_logs,
    result_dict,
    threads_cpu_s,
    write_result,
)

# session_search over NATS against the same page in-process plus the echo (issue 20; the
# reference FTS5 query, the retired floor, is printed beside it).
SEARCH_TARGET: Final = 1.15
EVENT_SEARCH_TARGET: Final = 1.15
# Exact tools: p50 and worker CPU per call <= the echo's + this times the tool in-process.
EXACT_IN_PROCESS_FACTOR: Final = 1.5
THROUGHPUT_TARGET: Final = 0.25
SPILL_MIB_S_TARGET: Final = 200.0
# RssAnon of the worker after ingesting, against a worker restarted on the same index.
RSS_AFTER_INGEST_TARGET: Final = 1.5
# How long a worker is left idle before its RssAnon is read (it gives back what a burst
# left once ingestion has been idle for a second: worker.replica.ingest_actor.IDLE_RELEASE_S).
RSS_SETTLE_S: Final = 3.0
SEARCH_TOOLS: Final = ("session_search", "session_event_search")
# Calls asked once, unmeasured, before a measured sequence, over NATS and in-process alike:
# each side's first calls open readers and warm caches, and a floor measured warm against a
# path measured cold would charge the cold start to the path.
WARM_UP: Final = 20
EXACT_TOOLS: Final = ("session_trace", "session_event_trace", "session_event_read")


async def call_sequential(
    client: Any,
    maker: RequestMaker,
    tool: str,
    samples: int,
    queries: list[floors.Query] | None = None,
    calls: list[tuple[dict[str, Any], str]] | None = None,
) -> dict[str, Any]:
    """``samples`` calls one after another; search queries are appended to ``queries``
    (with the caller's workspace), so the raw FTS5 floor runs exactly the same ones, and
    every call (arguments, caller session) to ``calls``, to be replayed in-process."""
    latencies: list[float] = []
    codes: Counter[str] = Counter()
    planned = [maker.request(tool) for _ in range(samples)]
    for arguments, caller in planned[:WARM_UP]:  # the same first calls as in-process
        await client.call(tool, arguments, _execution(caller.session_id))
    for arguments, caller in planned:
        if queries is not None and "query" in arguments:
            queries.append(floors.Query(cwd=caller.cwd, text=arguments["query"]))
        if calls is not None:
            calls.append((arguments, caller.session_id))
        t0 = time.perf_counter()
        reply = await client.call(tool, arguments, _execution(caller.session_id))
        latencies.append(time.perf_counter() - t0)
        codes["ok" if reply.status == "ok" else reply.error.code.value] += 1
    return {"latency_ms": asdict(Latency.of(latencies)), "replies": dict(codes)}


async def search_by_class(
    client: Any,
    plans: Sequence[corpus.SessionPlan],
    per_class: int,
    *,
    seed: int = 11,
    classes: Sequence[str] = vocabulary.QUERY_CLASSES,
    callers: list[str] | None = None,
) -> tuple[dict[str, Any], list[floors.Query]]:
    """``session_search`` with ``per_class`` queries of each class, interleaved; returns
    latency and replies per class, and the queries with the caller's workspace (and
    appends each caller's session id to ``callers``)."""
    import random

    rng = random.Random(seed)
    samples: dict[str, list[float]] = {}
    codes: dict[str, Counter[str]] = {}
    planned = []
    for _ in range(per_class):
        for kind in classes:
            caller = rng.choice(plans)
            planned.append((kind, caller, vocabulary.class_query(rng, kind)))
    for _, caller, text in planned[:WARM_UP]:  # the same first calls as in-process
        await client.call("session_search", {"query": text}, _execution(caller.session_id))
    asked: list[floors.Query] = []
    for kind, caller, text in planned:
        asked.append(floors.Query(cwd=caller.cwd, text=text, kind=kind))
        if callers is not None:
            callers.append(caller.session_id)
        t0 = time.perf_counter()
        reply = await client.call("session_search", {"query": text}, _execution(caller.session_id))
        samples.setdefault(kind, []).append(time.perf_counter() - t0)
        code = "ok" if reply.status == "ok" else reply.error.code.value
        codes.setdefault(kind, Counter())[code] += 1
    per_kind = {
        kind: {"latency_ms": asdict(Latency.of(samples[kind])), "replies": dict(codes[kind])}
        for kind in samples
    }
    return per_kind, asked


def _execution(session_id: str) -> dict[str, Any]:
    return {"agent": {"session_id": session_id}}


async def worker_cpu_per_call(
    client: Any, maker: RequestMaker, tool: str, calls: int, pid: int
) -> dict[str, Any]:
    """The worker process's CPU per call (all its threads' run time, from /proc) over
    ``calls`` sequential calls of ``tool``."""
    prepared = [maker.request(tool) for _ in range(calls)]
    codes: Counter[str] = Counter()
    cpu0, t0 = threads_cpu_s(pid), time.perf_counter()
    for arguments, caller in prepared:
        reply = await client.call(tool, arguments, {"agent": {"session_id": caller.session_id}})
        codes["ok" if reply.status == "ok" else reply.error.code.value] += 1
    cpu, elapsed = threads_cpu_s(pid) - cpu0, time.perf_counter() - t0
    return {"cpu_us": cpu / calls * 1e6, "wall_us": elapsed / calls * 1e6, "replies": dict(codes)}


async def reads_in_flight(
    client: Any, maker: RequestMaker, total: int, in_flight: int
) -> dict[str, Any]:
    codes: Counter[str] = Counter()
    remaining = total

    async def lane() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            arguments, caller = maker.request("session_event_read")
            reply = await client.call(
                "session_event_read", arguments, {"agent": {"session_id": caller.session_id}}
            )
            codes["ok" if reply.status == "ok" else reply.error.code.value] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(in_flight)))
    elapsed = time.perf_counter() - t0
    return {
        "replies": dict(codes),
        "seconds": elapsed,
        "ok_per_s": codes["ok"] / elapsed if elapsed else 0.0,
        "in_flight": in_flight,
    }


async def reads_in_process(
    db: Path, maker: RequestMaker, total: int, in_flight: int
) -> dict[str, Any]:
    """The ceiling of one CPython process for the 64-in-flight check: the same read mix
    through the tool layer alone (store, authorization, rendering; no NATS, envelope,
    lanes, logging or reply), on the worker's index file, ``in_flight`` at a time, in
    this process once the NATS phases are over."""
    from contracts.envelope import Execution
    from worker.signals import ExecutionSignal
    from worker.store.sqlite import SqliteSessionStore
    from worker.tools import register_tools

    store = await SqliteSessionStore.open(db)
    try:
        toolset = register_tools(store)
        tool = toolset.get("session_event_read")
        assert tool is not None
        calls = []
        for _ in range(total):
            arguments, caller = maker.request("session_event_read")
            calls.append((arguments, Execution(agent={"session_id": caller.session_id})))
        for arguments, execution in calls[: min(100, total)]:  # warm-up: caches, statements
            await tool.run(arguments, execution, ExecutionSignal())
        pending = iter(calls)

        async def lane() -> int:
            done = 0
            for arguments, execution in pending:
                await tool.run(arguments, execution, ExecutionSignal())
                done += 1
            return done

        t0 = time.perf_counter()
        finished = sum(await asyncio.gather(*(lane() for _ in range(in_flight))))
        elapsed = time.perf_counter() - t0
    finally:
        await store.close()
    return {
        "reads": finished,
        "seconds": elapsed,
        "per_s": finished / elapsed if elapsed else 0.0,
        "in_flight": in_flight,
    }


async def search_in_process(
    db: Path, asked: Sequence[floors.Query], callers: Sequence[str]
) -> dict[str, Any]:
    """The floor of ``session_search`` over NATS: the same pages (the same queries from
    the same callers) computed by the tool layer in this process, on the worker's index
    file, once the NATS phases are over; latency per query class."""
    from contracts.envelope import Execution
    from worker.signals import ExecutionSignal
    from worker.store.sqlite import SqliteSessionStore
    from worker.tools import register_tools

    store = await SqliteSessionStore.open(db)
    samples: dict[str, list[float]] = {}
    try:
        tool = register_tools(store).get("session_search")
        assert tool is not None
        calls = [
            ({"query": q.text}, Execution(agent={"session_id": sid}), q.kind)
            for q, sid in zip(asked, callers, strict=True)
        ]
        for arguments, execution, _ in calls[:WARM_UP]:  # warm-up: caches, statements
            await tool.run(arguments, execution, ExecutionSignal())
        for arguments, execution, kind in calls:
            t0 = time.perf_counter()
            await tool.run(arguments, execution, ExecutionSignal())
            samples.setdefault(kind, []).append(time.perf_counter() - t0)
    finally:
        await store.close()
    return {"by_class": {kind: asdict(Latency.of(v)) for kind, v in samples.items()}}


async def tools_in_process(
    db: Path, recorded: dict[str, list[tuple[dict[str, Any], str]]]
) -> dict[str, Any]:
    """The floors of the other four tools: the calls made over NATS replayed through the
    tool layer in this process, on the worker's index file, once the NATS phases are over;
    latency and this process's CPU per call (all its threads, reader threads included)."""
    from contracts.envelope import Execution
    from worker.signals import ExecutionSignal
    from worker.store.sqlite import SqliteSessionStore
    from worker.tools import register_tools

    store = await SqliteSessionStore.open(db)
    out: dict[str, Any] = {}
    try:
        toolset = register_tools(store)
        for name, calls in recorded.items():
            tool = toolset.get(name)
            assert tool is not None
            prepared = [(a, Execution(agent={"session_id": sid})) for a, sid in calls]
            for arguments, execution in prepared[:WARM_UP]:  # warm-up: caches, statements
                await tool.run(arguments, execution, ExecutionSignal())
            samples = []
            cpu0 = time.process_time()
            for arguments, execution in prepared:
                t0 = time.perf_counter()
                await tool.run(arguments, execution, ExecutionSignal())
                samples.append(time.perf_counter() - t0)
            cpu = time.process_time() - cpu0
            out[name] = {
                "latency_ms": asdict(Latency.of(samples)),
                "cpu_us": cpu / len(prepared) * 1e6 if prepared else 0.0,
            }
    finally:
        await store.close()
    return out


async def spill_fetch(
    nc: Any, client: Any, bucket: str, *, mib: int, rounds: int = 5
) -> dict[str, Any]:
    """Store ``mib`` MiB through the worker's spill step, fetch it back ``rounds`` times,
    each fetch beside a pull of the same chunks with nats-py's own pull API and nothing
    done with them (the transport's floor, alternating with the fetches)."""
    from worker.config import WorkerConfig
    from worker.serving.spill import Spiller, SpillPolicy

    defaults = WorkerConfig()
    spiller = await Spiller.bind(
        nc,
        nc.jetstream(),
        SpillPolicy(
            bucket=bucket,
            threshold_bytes=defaults.spill_threshold_bytes,
            preview_bytes=defaults.spill_preview_bytes,
            ttl_s=defaults.spill_ttl_s,
        ),
    )
    data = _spill_text(mib * 2**20)
    t0 = time.perf_counter()
    locator = await spiller.store(data)
    put_s = time.perf_counter() - t0
    rates, pulls = [], []
    for _ in range(rounds):
        pulls.append(len(data) / 2**20 / await _pull_chunks_s(nc, locator))
        t0 = time.perf_counter()
        fetched = await client.fetch_spilled(locator)
        elapsed = time.perf_counter() - t0
        if fetched != data:
            raise RuntimeError("spill fetch returned different bytes")
        rates.append(len(data) / 2**20 / elapsed)
    return {
        "bytes": len(data),
        "put_mib_per_s": len(data) / 2**20 / put_s,
        "fetch_mib_per_s": rates,
        "fetch_mib_per_s_median": statistics.median(rates),
        "pull_mib_per_s": pulls,
        "pull_mib_per_s_median": statistics.median(pulls),
    }


async def _pull_chunks_s(nc: Any, locator: Any) -> float:
    """Seconds to pull the object's chunks (a fresh consumer, nats-py's ``fetch``), with
    no hashing, decryption or buffer: the floor ``fetch_spilled`` is compared with."""
    from nats.js import api

    js = nc.jetstream()
    t0 = time.perf_counter()
    info = await (await js.object_store(locator.bucket)).get_info(locator.name)
    sub = await js.pull_subscribe(
        f"$O.{locator.bucket}.C.{info.nuid}",
        stream=f"OBJ_{locator.bucket}",
        config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, mem_storage=True),
    )
    got = 0
    try:
        while got < int(info.chunks or 0):
            got += len(await sub.fetch(int(info.chunks or 0) - got, timeout=30))
    finally:
        await sub.unsubscribe()
    return time.perf_counter() - t0


BIG_SESSION: Final = "bench-big-output"


def _big_session(cwd: str) -> list[dict[str, Any]]:
    """A session whose one tool result is near the 1 MiB event limit: reading it exactly
    makes a reply over the spill threshold, so the worker's own spill step runs."""
    output = _spill_text(900 * 1024).decode()
    start = corpus.iso_ms(corpus.ORIGIN_MS)
    return [
        {
            "session_id": BIG_SESSION,
            "seq": 1,
            "event_id": "big-1",
            "type": "session/start",
            "surface": "system",
            "time": start,
            "payload": {"cwd": cwd},
        },
        {
            "session_id": BIG_SESSION,
            "seq": 2,
            "event_id": "big-2",
            "type": "tool/result",
            "surface": "tool",
            "time": start,
            "payload": {"tool": "bash", "output": output},
        },
    ]


async def spilled_read(
    client: Any, caller: corpus.SessionPlan, big: list[dict[str, Any]]
) -> dict[str, Any]:
    """One exact read whose reply spills, then its spill fetched: the generic step end to
    end through a tool (informational; the 16 MiB check above is the target)."""
    t0 = time.perf_counter()
    reply = await client.call(
        "session_event_read",
        {"session_id": BIG_SESSION, "seq": 2},
        {"agent": {"session_id": caller.session_id}},
    )
    call_ms = (time.perf_counter() - t0) * 1000
    if reply.status != "ok" or reply.spill is None:
        return {"spilled": False, "status": reply.status, "call_ms": call_ms}
    t0 = time.perf_counter()
    text = await client.fetch_spilled(reply.spill)
    fetch_ms = (time.perf_counter() - t0) * 1000
    return {
        "spilled": True,
        "call_ms": call_ms,
        "fetch_ms": fetch_ms,
        "size": reply.spill.size,
        "preview_bytes": len((reply.content or "").encode()),
        # The exact event is rendered as JSON: look for the output's start as JSON text.
        "holds_output": json.dumps(big[1]["payload"]["output"][:1000])[1:-1] in text.decode(),
    }


def _spill_text(size: int) -> bytes:
    """Realistic result text (corpus JSON lines), exactly ``size`` bytes."""
    parts: list[bytes] = []
    total = 0
    for event in corpus.generate(corpus.CorpusConfig(sessions=400, events=200, seed=99)):
        line = corpus.encode(event) + b"\n"
        parts.append(line)
        total += len(line)
        if total >= size:
            break
    data = b"".join(parts)
    while len(data) < size:
        data += data
    return data[:size]


async def run(
    config: corpus.CorpusConfig,
    *,
    samples: int = 200,
    cpu_calls: int = 1000,
    parallel_reads: int = 3000,
    in_flight: int = 64,
    spill_mib: int = 16,
    echo_sequential: int = 2000,
    echo_parallel: int = 20_000,
    url: str | None = None,
    work_dir: Path | None = None,
    ingest_timeout_s: float = 1800.0,
    worker_log: Path | None = None,
    rss_settle_s: float = RSS_SETTLE_S,
) -> dict[str, Any]:
    import nats

    from contracts.client import SessionQueryClient
    from worker.config import WorkerConfig

    subjects = bench_subjects("tools")
    plans = corpus.plan_sessions(config)
    measurements: dict[str, Any] = {}
    defaults = WorkerConfig()
    with tempfile.TemporaryDirectory(prefix="sq-bench-tools-", dir=work_dir) as tmp:
        db = Path(tmp) / "index.sqlite"
        async with nats_url(url) as resolved:
            nc = await nats.connect(resolved)
            js = nc.jetstream()
            # The worker serves from its own process, as deployed; 64 reads in flight must
            # fit its parallel lane (running slots plus waiting room).
            worker = ChildProcess(
                worker_args(
                    resolved,
                    db,
                    subjects,
                    parallel_queue_size=max(defaults.parallel_queue_size, in_flight),
                ),
                log_path=worker_log or Path(tmp) / "worker.log",
            )
            sampler: RssSampler | None = None
            restarted = False
            try:
                t0 = time.perf_counter()
                published = await corpus.publish_corpus(js, subjects, config)
                big = _big_session(plans[0].cwd)
                await corpus.publish_events(js, subjects, big)
                measurements["publish_s"] = time.perf_counter() - t0
                last_seq = (await js.stream_info(subjects.events_stream)).state.last_seq
                pid = await worker.start()
                measurements["ingest_wait_s"] = await wait_ingested(db, last_seq, ingest_timeout_s)
                measurements["search_wait_s"] = await wait_searchable(db, ingest_timeout_s)
                await asyncio.sleep(rss_settle_s)
                rss: dict[str, float] = {"after_ingest_mib": _rss_anon_mib(pid)}
                measurements["rss_anon"] = rss
                measurements["events"] = published
                reference = floors.ensure_reference_fts(config, Path(tmp) / "reference")

                echo = await floors.echo(
                    resolved, sequential=echo_sequential, parallel=echo_parallel
                )
                echo.pop("samples")
                # The search lane's floor: the same echo through a JetStream work queue.
                work_queue_echo = await floors.echo(
                    resolved, sequential=echo_sequential // 2, parallel=0, responder="work-queue"
                )
                work_queue_echo.pop("samples")

                sampler = RssSampler([pid])
                sampler.start()
                client = SessionQueryClient(nc, subjects)
                maker = RequestMaker(plans, foreign_share=0.0, seed=3)
                callers: list[str] = []
                per_class, asked = await search_by_class(client, plans, samples, callers=callers)
                measurements["session_search_by_class"] = per_class
                per_tool = {}
                searched: list[floors.Query] = []
                recorded: dict[str, list[tuple[dict[str, Any], str]]] = {}
                for tool in ("session_event_search", *EXACT_TOOLS):
                    sink = searched if tool == "session_event_search" else None
                    per_tool[tool] = await call_sequential(
                        client, maker, tool, samples, sink, recorded.setdefault(tool, [])
                    )
                measurements["tools"] = per_tool
                measurements["worker_cpu"] = {
                    tool: await worker_cpu_per_call(
                        client,
                        maker,
                        tool,
                        cpu_calls if tool in EXACT_TOOLS else min(100, cpu_calls),
                        pid,
                    )
                    for tool in (*EXACT_TOOLS, "session_search")
                }
                # The floor query runs the very queries the searches ran, per class.
                measurements["floors"] = {
                    "echo": echo,
                    "work_queue_echo": work_queue_echo,
                    "reference_fts": floors.reference_fts(reference, asked),
                    "reference_fts_mixed": floors.reference_fts(reference, searched),
                }
                measurements["reads_in_flight"] = await reads_in_flight(
                    client, maker, parallel_reads, in_flight
                )
                # The in-process floors, measured after the NATS phases (no NATS load).
                measurements["search_in_process"] = await search_in_process(db, asked, callers)
                measurements["tools_in_process"] = await tools_in_process(db, recorded)
                measurements["reads_in_process"] = await reads_in_process(
                    db, RequestMaker(plans, foreign_share=0.0, seed=4), parallel_reads, in_flight
                )
                measurements["spill"] = await spill_fetch(
                    nc, client, subjects.spill_bucket, mib=spill_mib
                )
                measurements["spilled_read"] = await spilled_read(client, plans[0], big)
                await asyncio.sleep(rss_settle_s)
                rss["after_load_mib"] = _rss_anon_mib(pid)
                # A worker restarted on the same index, serving, for the ratio's floor.
                measurements["worker_exit"] = await worker.stop()
                restarted = True
                fresh_pid = await worker.start()
                await asyncio.sleep(rss_settle_s)
                rss["restarted_mib"] = _rss_anon_mib(fresh_pid)
            finally:
                if sampler is not None:
                    measurements["worker_rss"] = [asdict(r) for r in await sampler.stop()]
                exit_code = await worker.stop()
                measurements["restarted_exit" if restarted else "worker_exit"] = exit_code
                for stream in (subjects.events_stream, subjects.search_stream):
                    with contextlib.suppress(Exception):
                        await js.delete_stream(stream)
                with contextlib.suppress(Exception):
                    await js.delete_object_store(subjects.spill_bucket)
                await nc.close()
    params = {
        **asdict(config),
        "samples": samples,
        "cpu_calls": cpu_calls,
        "parallel_reads": parallel_reads,
        "in_flight": in_flight,
        "spill_mib": spill_mib,
    }
    checks = _checks(measurements)
    return result_dict("tools", params=params, checks=checks, measurements=measurements)


def _rss_anon_mib(pid: int) -> float:
    found = read_rss_kib(pid)
    return found[0] / 1024 if found else 0.0


def _checks(m: dict[str, Any]) -> list[Check | Absolute]:
    echo = m["floors"]["echo"]
    seq_echo = echo["sequential_ms"]
    queue_echo = m["floors"]["work_queue_echo"]["sequential_ms"]
    by_class = m["search_in_process"]["by_class"]
    in_process = m["tools_in_process"]
    checks: list[Check | Absolute] = []
    for kind, found in m["session_search_by_class"].items():
        floor = by_class[kind]["p50"] + queue_echo["p50"]
        name = f"session_search {kind} p50"
        checks.append(Check(name, found["latency_ms"]["p50"], floor, "ms", "max", SEARCH_TARGET))
    floor = in_process["session_event_search"]["latency_ms"]["p50"] + queue_echo["p50"]
    lat = m["tools"]["session_event_search"]["latency_ms"]["p50"]
    name = "session_event_search p50"
    checks.append(Check(name, lat, floor, "ms", "max", EVENT_SEARCH_TARGET))
    for tool in EXACT_TOOLS:
        inproc_p50 = in_process[tool]["latency_ms"]["p50"]
        floor = seq_echo["p50"] + EXACT_IN_PROCESS_FACTOR * inproc_p50
        lat = m["tools"][tool]["latency_ms"]["p50"]
        checks.append(Check(f"{tool} p50", lat, floor, "ms", "max", 1.0))
    echo_cpu = echo.get("responder_cpu_us") or 0.0
    for tool in EXACT_TOOLS:
        cpu = m["worker_cpu"][tool]["cpu_us"]
        floor = echo_cpu + EXACT_IN_PROCESS_FACTOR * in_process[tool]["cpu_us"]
        name = f"{tool} worker CPU/call"
        checks.append(Check(name, cpu, floor, "us", "max", 1.0))
    checks.append(
        Check(
            f"reads, {m['reads_in_flight']['in_flight']} in flight",
            m["reads_in_flight"]["ok_per_s"],
            echo["throughput_rps"],
            "req/s",
            "min",
            THROUGHPUT_TARGET,
        )
    )
    rss = m["rss_anon"]
    checks.append(
        Check(
            "worker RssAnon after ingest vs restarted",
            rss["after_ingest_mib"],
            rss["restarted_mib"],
            "MiB",
            "max",
            RSS_AFTER_INGEST_TARGET,
        )
    )
    checks.append(
        Absolute(
            f"spill fetch {m['spill']['bytes'] // 2**20} MiB",
            m["spill"]["fetch_mib_per_s_median"],
            "MiB/s",
            "min",
            SPILL_MIB_S_TARGET,
        )
    )
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tools", description=__doc__)
    corpus.add_size_arguments(parser)
    parser.add_argument("--samples", type=int, default=200, help="sequential calls per tool")
    parser.add_argument(
        "--cpu-calls", type=int, default=1000, help="sequential calls per exact tool for CPU"
    )
    parser.add_argument("--parallel-reads", type=int, default=3000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--spill-mib", type=int, default=16)
    parser.add_argument("--nats-url", default=None)
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        default=None,
        help="profile every child's event loop (its CPU, cProfile) to PREFIX.<mode>.<pid>",
    )
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    if args.profile:
        os.environ[PROFILE_ENV] = args.profile  # the children inherit it (bench.child)
    # The worker process and this one (its spill step in the 16 MiB check) log to one file.
    logs = quiet_worker_logs("tools")
    result = asyncio.run(
        run(
            config,
            samples=args.samples,
            cpu_calls=args.cpu_calls,
            parallel_reads=args.parallel_reads,
            in_flight=args.in_flight,
            spill_mib=args.spill_mib,
            url=args.nats_url,
            worker_log=logs,
        )
    )
    m = result["measurements"]
    info: dict[str, Any] = {
        "events": m["events"],
        "ingest wait s (store, then search index)": (
            f"{m['ingest_wait_s']:.1f} + {m['search_wait_s']:.1f}"
        ),
    }
    ref = m["floors"]["reference_fts"]["by_class"]
    inproc = m["search_in_process"]["by_class"]
    for kind, t in m["session_search_by_class"].items():
        info[f"session_search {kind} replies"] = t["replies"]
        info[f"  in-process page {kind} p50 / p99 ms"] = (
            f"{inproc[kind]['p50']:.2f} / {inproc[kind]['p99']:.2f}; over NATS "
            f"{t['latency_ms']['p50']:.2f} / {t['latency_ms']['p99']:.2f}"
        )
        info[f"  reference FTS5 {kind} p50 / p99 ms (retired floor)"] = (
            f"{ref[kind]['p50']:.2f} / {ref[kind]['p99']:.2f}; over NATS "
            f"{t['latency_ms']['p50'] / ref[kind]['p50']:.1f}x its p50"
        )
    queue_echo = m["floors"]["work_queue_echo"]["sequential_ms"]
    info["work-queue echo p50 / p99 ms (floor)"] = (
        f"{queue_echo['p50']:.2f} / {queue_echo['p99']:.2f}"
    )
    for tool, t in m["tools"].items():
        info[f"{tool} replies"] = t["replies"]
        inproc = m["tools_in_process"][tool]
        info[f"  {tool} p99 ms over NATS / in-process"] = (
            f"{t['latency_ms']['p99']:.2f} / {inproc['latency_ms']['p99']:.2f}"
            f"; in-process p50 {inproc['latency_ms']['p50']:.3f} ms, "
            f"CPU {inproc['cpu_us']:.0f} us/call"
        )
    echo_cpu = m["floors"]["echo"].get("responder_cpu_us")
    info["echo responder CPU us/reply (floor)"] = echo_cpu
    for tool, cpu in m["worker_cpu"].items():
        ratio = f" = {cpu['cpu_us'] / echo_cpu:.1f}x echo" if echo_cpu else ""
        info[f"{tool} worker CPU us/call"] = (
            f"{cpu['cpu_us']:.0f}{ratio} (wall {cpu['wall_us']:.0f} us; {cpu['replies']})"
        )
    info["reads in flight replies"] = m["reads_in_flight"]["replies"]
    ceiling = m["reads_in_process"]["per_s"]
    echo_rps = m["floors"]["echo"]["throughput_rps"]
    info["reads in-process ceiling (tool layer, no NATS) req/s"] = (
        f"{ceiling:,.0f} = {ceiling / echo_rps:.2f}x echo; over NATS "
        f"{m['reads_in_flight']['ok_per_s']:,.0f} = "
        f"{m['reads_in_flight']['ok_per_s'] / ceiling:.2f}x the ceiling"
    )
    info["spill put MiB/s"] = m["spill"]["put_mib_per_s"]
    pull = m["spill"]["pull_mib_per_s_median"]
    info["spill chunks pulled alone MiB/s, median (floor)"] = (
        f"{pull:.0f}; fetch_spilled = {m['spill']['fetch_mib_per_s_median'] / pull:.2f}x it"
    )
    info["spilled read (call ms, fetch ms)"] = (
        f"{m['spilled_read'].get('call_ms', 0):.1f}, {m['spilled_read'].get('fetch_ms', 0):.1f}"
        f" of {m['spilled_read'].get('size')} bytes"
    )
    info["worker RssAnon MiB after ingest / after load / restarted"] = (
        f"{m['rss_anon']['after_ingest_mib']:.1f} / {m['rss_anon']['after_load_mib']:.1f} / "
        f"{m['rss_anon']['restarted_mib']:.1f}"
    )
    for rss in m.get("worker_rss", []):
        info[f"worker {rss['pid']} peak anon RSS MiB"] = rss["peak_kib"] / 1024
    title = f"tools: {config.sessions} sessions x {config.events} events, over NATS"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}\nworker log: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
