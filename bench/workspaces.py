"""Workspace benches of issue 10: cost isolation, and many small workspaces.

- ``isolation``: the same per-workspace size (sessions dealt to workspaces in turn) with
  6, 24 and 96 workspaces, each index built through the real writer; ``search_sessions``
  first pages of every query class (``bench.vocabulary.QUERY_CLASSES``), the same query
  texts on each index, the i-th query run on every index back to back (drift of a shared
  machine hits all alike). Target: p50 at 96 workspaces <= 1.3x p50 at 6.
- ``many``: 5,000 workspaces of 200 events against 24 workspaces at the same total, each
  through NATS and a real ``Worker`` process: the ingest rate (stream to searchable), the
  worker's start-up to serving (a new ``Worker`` process on the existing index until its
  first ``session_search`` is answered) and ``session_search`` p50 over every query class.
  Target: each within 1.5x of the 24-workspace figure.

``python -m bench.workspaces isolation [--events-per-workspace N]``
``python -m bench.workspaces many [--workspaces N --events-per-workspace N]``
(also ``python -m bench.store --isolation`` / ``--many-workspaces``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus, floors, vocabulary
from bench.report import (
    Check,
    Latency,
    bench_subjects,
    checks_of,
    db_size_bytes,
    format_table,
    nats_url,
    quiet_worker_logs,
    result_dict,
    write_result,
)

ISOLATION_TARGET: Final = 1.3
MANY_TARGET: Final = 1.5
SESSION_EVENTS: Final = 100


def _config(workspaces: int, events_per_workspace: int, session_events: int) -> Any:
    sessions = max(1, workspaces * events_per_workspace // session_events)
    return corpus.CorpusConfig(
        sessions=sessions, events=session_events, workspaces=workspaces, round_robin=True
    )


# --- isolation -----------------------------------------------------------------------------


async def _search_interleaved(
    dbs: dict[str, Path], queries: dict[str, list[floors.Query]], rounds: int
) -> dict[str, dict[str, Any]]:
    """Each query in turn on every index (the i-th query of each run back to back), so a
    shared machine's drift hits every workspace count alike."""
    from bench.store import ProviderSearch

    providers = {key: await ProviderSearch.open(db, page_size=100) for key, db in dbs.items()}
    samples: dict[str, dict[str, list[float]]] = {key: {} for key in dbs}
    try:
        for key, provider in providers.items():
            for query in queries[key][:3]:
                await provider.page(query)
        for _ in range(rounds):
            for i in range(min(len(q) for q in queries.values())):
                for key, provider in providers.items():
                    query = queries[key][i]
                    seconds, _ = await provider.page(query)
                    samples[key].setdefault(query.kind, []).append(seconds)
    finally:
        for provider in providers.values():
            await provider.close()
    out: dict[str, dict[str, Any]] = {}
    for key, by_kind in samples.items():
        every = [s for values in by_kind.values() for s in values]
        out[key] = {
            "latency_ms": asdict(Latency.of(every)),
            "by_class": {k: asdict(Latency.of(v)) for k, v in by_kind.items()},
        }
    return out


async def isolation(
    *,
    counts: Sequence[int] = (6, 24, 96),
    events_per_workspace: int = 4000,
    session_events: int = SESSION_EVENTS,
    per_class: int = 25,
    rounds: int = 2,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    dbs: dict[str, Path] = {}
    queries: dict[str, list[floors.Query]] = {}
    with tempfile.TemporaryDirectory(prefix="sq-bench-isolation-", dir=work_dir) as tmp:
        for count in counts:
            config = _config(count, events_per_workspace, session_events)
            db = dbs[str(count)] = Path(tmp) / f"ws{count}.sqlite"
            t0 = time.perf_counter()
            built = await corpus.write_index(config, db)
            build_s = time.perf_counter() - t0
            queries[str(count)] = floors.class_queries(config, per_class)
            runs[str(count)] = {
                "events": built,
                "build_s": build_s,
                "build_events_per_s": built / build_s if build_s else 0.0,
                "db_bytes": db_size_bytes(db),
            }
        found = await _search_interleaved(dbs, queries, rounds)
        for key, measured in found.items():
            runs[key].update(measured)
    low, high = runs[str(counts[0])], runs[str(counts[-1])]
    checks = [
        Check(
            f"search p50, {counts[-1]} vs {counts[0]} workspaces",
            high["latency_ms"]["p50"],
            low["latency_ms"]["p50"],
            "ms",
            "max",
            ISOLATION_TARGET,
        )
    ]
    for kind in vocabulary.QUERY_CLASSES:
        checks.append(
            Check(
                f"{kind} p50, {counts[-1]} vs {counts[0]}",
                high["by_class"][kind]["p50"],
                low["by_class"][kind]["p50"],
                "ms",
                "max",
                ISOLATION_TARGET,
            )
        )
    params = {
        "counts": list(counts),
        "events_per_workspace": events_per_workspace,
        "session_events": session_events,
        "per_class": per_class,
        "rounds": rounds,
    }
    return result_dict("isolation", params=params, checks=checks, measurements={"runs": runs})


# --- many small workspaces -----------------------------------------------------------------


async def _first_search(client: Any, plan: corpus.SessionPlan, timeout_s: float) -> None:
    """Until the worker answers a search (it may still be subscribing)."""
    deadline = time.perf_counter() + timeout_s
    while True:
        try:
            reply = await client.call(
                "session_search",
                {"query": "error"},
                {"agent": {"session_id": plan.session_id}},
            )
        except Exception:
            if time.perf_counter() > deadline:
                raise
            await asyncio.sleep(0.01)
            continue
        if reply.status != "ok":
            raise RuntimeError(f"first search failed: {reply.error}")
        return


async def _one_fleet(
    url: str, config: corpus.CorpusConfig, per_class: int, tmp: Path, timeout_s: float
) -> dict[str, Any]:
    import nats

    from bench.child import ChildProcess, wait_ingested, wait_searchable, worker_args
    from bench.tools import search_by_class
    from contracts.client import SessionQueryClient

    subjects = bench_subjects("many")
    db = tmp / f"ws{config.workspaces}.sqlite"
    plans = corpus.plan_sessions(config)
    nc = await nats.connect(url)
    js = nc.jetstream()
    out: dict[str, Any] = {"workspaces": config.workspaces, "events": config.total_events}
    try:
        t0 = time.perf_counter()
        await corpus.publish_corpus(js, subjects, config)
        out["publish_s"] = time.perf_counter() - t0
        last = (await js.stream_info(subjects.events_stream)).state.last_seq
        worker = ChildProcess(worker_args(url, db, subjects), log_path=tmp / "worker.log")
        t0 = time.perf_counter()
        await worker.start()
        await wait_ingested(db, last, timeout_s)
        await wait_searchable(db, timeout_s)
        out["ingest_s"] = time.perf_counter() - t0
        out["ingest_events_per_s"] = config.total_events / out["ingest_s"]
        await worker.stop()
        out["db_bytes"] = db_size_bytes(db)
        client = SessionQueryClient(nc, subjects)
        # Start-up to serving: a new worker process on the existing index.
        again = ChildProcess(worker_args(url, db, subjects), log_path=tmp / "worker.log")
        t0 = time.perf_counter()
        await again.start()
        await _first_search(client, plans[0], timeout_s)
        out["startup_s"] = time.perf_counter() - t0
        try:
            per_kind, _ = await search_by_class(client, plans, per_class)
        finally:
            await again.stop()
        every = [per_kind[k]["latency_ms"]["p50"] for k in per_kind]
        out["search_by_class"] = per_kind
        out["search_p50_ms_median_of_classes"] = sorted(every)[len(every) // 2]
    finally:
        for stream in (subjects.events_stream, subjects.search_stream):
            with contextlib.suppress(Exception):
                await js.delete_stream(stream)
        with contextlib.suppress(Exception):
            await js.delete_object_store(subjects.spill_bucket)
        await nc.close()
    return out


async def many(
    *,
    workspaces: int = 5000,
    events_per_workspace: int = 200,
    base_workspaces: int = 24,
    session_events: int = SESSION_EVENTS,
    per_class: int = 50,
    url: str | None = None,
    work_dir: Path | None = None,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    total = workspaces * events_per_workspace
    small = _config(workspaces, events_per_workspace, session_events)
    base = _config(base_workspaces, total // base_workspaces, session_events)
    runs: dict[str, Any] = {}
    async with nats_url(url) as resolved:
        for config in (base, small):
            with tempfile.TemporaryDirectory(prefix="sq-bench-many-", dir=work_dir) as tmp:
                runs[str(config.workspaces)] = await _one_fleet(
                    resolved, config, per_class, Path(tmp), timeout_s
                )
    b, s = runs[str(base.workspaces)], runs[str(small.workspaces)]
    checks = [
        Check("start-up to serving s", s["startup_s"], b["startup_s"], "s", "max", MANY_TARGET),
        Check(
            "ingest events/s",
            s["ingest_events_per_s"],
            b["ingest_events_per_s"],
            "events/s",
            "min",
            1 / MANY_TARGET,
        ),
    ]
    for kind in vocabulary.QUERY_CLASSES:
        mine = s["search_by_class"][kind]["latency_ms"]["p50"]
        floor = b["search_by_class"][kind]["latency_ms"]["p50"]
        checks.append(Check(f"session_search {kind} p50", mine, floor, "ms", "max", MANY_TARGET))
    params = {
        "workspaces": workspaces,
        "events_per_workspace": events_per_workspace,
        "base_workspaces": base_workspaces,
        "session_events": session_events,
        "per_class": per_class,
    }
    return result_dict("many_workspaces", params=params, checks=checks, measurements=runs)


# --- CLI -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workspaces", description=__doc__)
    sub = parser.add_subparsers(dest="mode", required=True)
    iso = sub.add_parser("isolation")
    iso.add_argument("--events-per-workspace", type=int, default=4000)
    iso.add_argument("--counts", default="6,24,96")
    iso.add_argument("--queries", type=int, default=25, help="queries per class")
    iso.add_argument("--rounds", type=int, default=2)
    m = sub.add_parser("many")
    m.add_argument("--workspaces", type=int, default=5000)
    m.add_argument("--events-per-workspace", type=int, default=200)
    m.add_argument("--base-workspaces", type=int, default=24)
    m.add_argument("--queries", type=int, default=50, help="session_search calls per class")
    m.add_argument("--nats-url", default=None)
    args = parser.parse_args(argv)
    if args.mode == "isolation":
        counts = tuple(int(c) for c in args.counts.split(","))
        result = asyncio.run(
            isolation(
                counts=counts,
                events_per_workspace=args.events_per_workspace,
                per_class=args.queries,
                rounds=args.rounds,
            )
        )
        info = {
            f"{count} workspaces": (
                f"{run['events']} events, build {run['build_events_per_s']:,.0f} events/s,"
                f" search p50 {run['latency_ms']['p50']:.2f} ms,"
                f" p99 {run['latency_ms']['p99']:.2f} ms"
            )
            for count, run in result["measurements"]["runs"].items()
        }
        title = f"isolation: {args.events_per_workspace} events per workspace"
    else:
        logs = quiet_worker_logs("many")
        result = asyncio.run(
            many(
                workspaces=args.workspaces,
                events_per_workspace=args.events_per_workspace,
                base_workspaces=args.base_workspaces,
                per_class=args.queries,
                url=args.nats_url,
            )
        )
        info = {
            f"{count} workspaces": (
                f"{run['events']} events, ingest {run['ingest_events_per_s']:,.0f} events/s,"
                f" start-up {run['startup_s']:.2f} s,"
                f" index {run['db_bytes'] / 2**20:,.0f} MiB"
            )
            for count, run in result["measurements"].items()
        }
        info["worker log"] = str(logs)
        title = f"many workspaces: {args.workspaces} x {args.events_per_workspace} events"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
