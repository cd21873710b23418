"""Load generator: all five tools in a realistic mix against a generated corpus.

Over 400 lines: the request mix and the pacing it is driven by are one model of a fleet.

It knows the corpus's sessions, seqs and workspaces from the generator's plan (the seed
and sizes, or the sidecar file ``python -m bench.corpus`` writes), so every request names
real ids: callers are corpus sessions, targets are mostly sessions of the caller's own
workspace and sometimes (``foreign_share``) another workspace's or a missing id, as a
model's guesses are. Optionally it publishes extra sessions while the load runs, so
ingestion works under it.

Bounded by ``requests`` and ``seconds``. Reports requests answered, errors by code,
transport failures, p50/p99 per tool, and with worker pids the RSS of each worker sampled
from /proc: its peak, and whether it stayed flat (first vs last quarter of the run).

``await run_load(nc, subjects, plans, ...)`` for tests; CLI
``python -m bench.loadgen --nats-url nats://127.0.0.1:4222 --sessions 200 --events 100``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import nats.errors

from bench import corpus, vocabulary
from bench.report import Latency, require_loopback, write_result
from contracts.client import SessionQueryClient, SessionQueryClientError
from contracts.publish import EventRoutes
from contracts.subjects import TOOL_NAMES, Subjects

DEFAULT_MIX: Final[Mapping[str, float]] = {
    "session_search": 0.30,
    "session_event_search": 0.20,
    "session_trace": 0.15,
    "session_event_trace": 0.15,
    "session_event_read": 0.20,
}
# Transport failures other than the client's own (reconnecting, closed, stale connection).
_TRANSPORT_FAULTS: Final = (nats.errors.Error, ConnectionError, TimeoutError)
# RSS counts as flat when the last quarter's mean is within this of the first quarter's.
FLAT_GROWTH: Final = 1.25
# The extra publisher's wait for each acknowledgement. nats-py's default, 5 s, an R3
# stream on a loaded 2-core machine can outlast: the burst then sits in the stream while
# ``count`` never hears of it (and the publisher stops). A hang guard, not a bound.
EXTRA_ACK_WAIT_S: Final = 30.0
FLAT_SLACK_KIB: Final = 16 * 1024


@dataclass(frozen=True, slots=True)
class ToolStats:
    tool: str
    sent: int
    answered: int
    ok: int
    errors_by_code: dict[str, int]
    transport_errors: dict[str, int]
    latency_ms: Latency


@dataclass(frozen=True, slots=True)
class WorkerRss:
    pid: int
    samples: int
    peak_kib: int  # of RssAnon samples: the worker's own memory
    hwm_kib: int  # the kernel's high-water mark of VmRSS (with mapped index pages) at the end
    first_quarter_kib: float
    last_quarter_kib: float
    flat: bool
    alive_at_end: bool


@dataclass(frozen=True, slots=True)
class LoadReport:
    seconds: float
    sent: int
    answered: int
    ok: int
    errors_by_code: dict[str, int]
    # No reply (timeout), no responder, malformed reply: never a tool result.
    transport_errors: dict[str, int]
    per_tool: dict[str, ToolStats]
    rss: tuple[WorkerRss, ...] = ()
    extra_events_published: int = 0
    extra_publish_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class _Tally:
    sent: int = 0
    ok: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    transport: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)


class RequestMaker:
    """Builds realistic (tool, arguments, caller) triples over a corpus plan."""

    def __init__(
        self, plans: Sequence[corpus.SessionPlan], *, foreign_share: float = 0.05, seed: int = 1
    ) -> None:
        if not plans:
            raise ValueError("a load needs at least one corpus session")
        self.rng = random.Random(seed)
        self.plans = list(plans)
        self.by_cwd: dict[str, list[corpus.SessionPlan]] = {}
        for plan in plans:
            self.by_cwd.setdefault(plan.cwd, []).append(plan)
        self.foreign_share = foreign_share

    def caller(self) -> corpus.SessionPlan:
        return self.rng.choice(self.plans)

    def target(self, caller: corpus.SessionPlan) -> tuple[str, int]:
        """A (session_id, events) to name: usually the caller's workspace."""
        rng = self.rng
        if rng.random() < self.foreign_share:
            if rng.random() < 0.5:
                return f"missing-{rng.getrandbits(32):08x}", caller.events
            other = rng.choice(self.plans)
            return other.session_id, other.events
        mine = rng.choice(self.by_cwd[caller.cwd])
        return mine.session_id, mine.events

    def request(self, tool: str) -> tuple[dict[str, Any], corpus.SessionPlan]:
        rng = self.rng
        caller = self.caller()
        target_id, events = self.target(caller)
        seq = rng.randint(1, max(1, events))
        if tool == "session_search":
            args: dict[str, Any] = {"query": vocabulary.sample_query(rng)}
            if rng.random() < 0.2:
                args["event_types"] = [rng.choice(("tool/result", "message/assistant"))]
        elif tool == "session_event_search":
            args = {"query": vocabulary.sample_query(rng)}
            if rng.random() < 0.7:
                args["session_id"] = target_id
        elif tool == "session_trace":
            args = {"session_id": target_id}
        elif tool == "session_event_trace":
            args = {"session_id": target_id, "seq": seq}
        elif tool == "session_event_read":
            args = {"session_id": target_id, "seq": seq}
            if rng.random() < 0.5:
                args["before"] = rng.randint(0, 3)
                args["after"] = rng.randint(0, 3)
        else:
            raise ValueError(f"unknown tool {tool!r}")
        return args, caller

    def tool(self, mix: Mapping[str, float]) -> str:
        names = list(mix)
        return self.rng.choices(names, weights=[mix[n] for n in names], k=1)[0]


def read_rss_kib(pid: int) -> tuple[int, int] | None:
    """(RssAnon, VmHWM) in KiB from /proc, or None when the process is gone.

    RssAnon is the process's own memory, what a leak grows. The index is read through a
    memory map, so VmRSS also counts the index pages touched so far: shared, reclaimable
    page cache that grows with the index file, not with the worker; VmHWM includes them."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon"):
            values[key] = int(rest.split()[0])
    if "VmRSS" not in values:
        return None
    return values.get("RssAnon", values["VmRSS"]), values.get("VmHWM", values["VmRSS"])


class RssSampler:
    """Samples each pid's RSS every ``interval`` seconds until stopped."""

    def __init__(self, pids: Sequence[int], interval: float = 0.25) -> None:
        self.pids = tuple(pids)
        self.interval = interval
        self.samples: dict[int, list[int]] = {pid: [] for pid in self.pids}
        self.hwm: dict[int, int] = dict.fromkeys(self.pids, 0)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.pids:
            self._sample()
            self._task = asyncio.create_task(self._loop())

    async def stop(self) -> tuple[WorkerRss, ...]:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        alive = self._sample()
        return tuple(self._summary(pid, pid in alive) for pid in self.pids)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._sample()

    def _sample(self) -> set[int]:
        alive = set()
        for pid in self.pids:
            found = read_rss_kib(pid)
            if found is not None:
                alive.add(pid)
                self.samples[pid].append(found[0])
                self.hwm[pid] = max(self.hwm[pid], found[1])
        return alive

    def _summary(self, pid: int, alive: bool) -> WorkerRss:
        values = self.samples[pid]
        quarter = max(1, len(values) // 4)
        first = sum(values[:quarter]) / quarter if values else 0.0
        last = sum(values[-quarter:]) / quarter if values else 0.0
        return WorkerRss(
            pid=pid,
            samples=len(values),
            peak_kib=max(values, default=0),
            hwm_kib=self.hwm[pid],
            first_quarter_kib=first,
            last_quarter_kib=last,
            flat=bool(values) and last <= first * FLAT_GROWTH + FLAT_SLACK_KIB,
            alive_at_end=alive,
        )


async def run_load(
    nc: Any,
    subjects: Subjects,
    plans: Sequence[corpus.SessionPlan],
    *,
    requests: int = 1000,
    seconds: float = 60.0,
    concurrency: int = 8,
    mix: Mapping[str, float] = DEFAULT_MIX,
    request_timeout: float = 30.0,
    foreign_share: float = 0.05,
    worker_pids: Sequence[int] = (),
    rss_interval: float = 0.25,
    extra: corpus.CorpusConfig | None = None,
    extra_rate: float = 500.0,
    seed: int = 1,
) -> LoadReport:
    """Drive the tools until ``requests`` are sent or ``seconds`` pass (whichever first).

    ``extra``: a second corpus (another seed, so new session ids in the same workspaces)
    published to the events stream during the load at about ``extra_rate`` events/s.
    Every request carries a deadline of ``request_timeout``; a request still waiting when
    ``seconds`` run out is awaited, never abandoned, so each sent request is counted once
    as answered or as a transport error.
    """
    unknown = set(mix) - set(TOOL_NAMES)
    if unknown:
        raise ValueError(f"unknown tools in mix: {sorted(unknown)}")
    client = SessionQueryClient(nc, subjects)
    maker = RequestMaker(plans, foreign_share=foreign_share, seed=seed)
    tallies = {tool: _Tally() for tool in mix}
    budget = requests
    t0 = time.monotonic()
    stop_at = t0 + seconds
    sampler = RssSampler(worker_pids, rss_interval)
    sampler.start()
    publisher = _ExtraPublisher(nc, subjects, extra)
    publishing = asyncio.create_task(publisher.run(extra_rate, stop_at))

    async def lane() -> None:
        nonlocal budget
        while budget > 0 and time.monotonic() < stop_at:
            budget -= 1
            tool = maker.tool(mix)
            arguments, caller = maker.request(tool)
            tally = tallies[tool]
            tally.sent += 1
            execution = {
                "agent": {"session_id": caller.session_id},
                "deadline_ms": int((time.time() + request_timeout) * 1000),
            }
            started = time.perf_counter()
            try:
                reply = await client.call(tool, arguments, execution, cwd=caller.cwd)
            except (SessionQueryClientError, *_TRANSPORT_FAULTS) as exc:
                # Counted by kind: under fault injection (a NATS restart) a request may fail
                # in transit; the load goes on and the report says how many and why.
                tally.transport[type(exc).__name__] += 1
                continue
            tally.latencies.append(time.perf_counter() - started)
            if reply.status == "ok":
                tally.ok += 1
            else:
                tally.codes[reply.error.code.value if reply.error else "MISSING_ERROR"] += 1

    try:
        await asyncio.gather(*(lane() for _ in range(max(1, concurrency))))
    finally:
        elapsed = time.monotonic() - t0
        published = await publisher.finish(publishing)
        rss = await sampler.stop()
    per_tool = {
        tool: ToolStats(
            tool=tool,
            sent=t.sent,
            answered=len(t.latencies),
            ok=t.ok,
            errors_by_code=dict(t.codes),
            transport_errors=dict(t.transport),
            latency_ms=Latency.of(t.latencies),
        )
        for tool, t in tallies.items()
    }
    codes: Counter[str] = Counter()
    transport: Counter[str] = Counter()
    for t in tallies.values():
        codes.update(t.codes)
        transport.update(t.transport)
    return LoadReport(
        seconds=elapsed,
        sent=sum(s.sent for s in per_tool.values()),
        answered=sum(s.answered for s in per_tool.values()),
        ok=sum(s.ok for s in per_tool.values()),
        errors_by_code=dict(codes),
        transport_errors=dict(transport),
        per_tool=per_tool,
        rss=rss,
        extra_events_published=published,
        extra_publish_error=publisher.error,
    )


class _ExtraPublisher:
    """Publishes a second corpus during the load, paced, until told to stop.

    Stopping waits for the burst in flight instead of cancelling it: a cancelled burst may
    already sit in the stream while ``count`` never heard of it.
    """

    def __init__(self, nc: Any, subjects: Subjects, extra: corpus.CorpusConfig | None) -> None:
        self.nc = nc
        self.subjects = subjects
        self.extra = extra
        self.count = 0
        self.error: str | None = None
        self._stopping = asyncio.Event()

    async def run(self, rate: float, stop_at: float) -> None:
        if self.extra is None:
            return
        js = self.nc.jetstream(timeout=EXTRA_ACK_WAIT_S)
        await corpus.ensure_events_stream(js, self.subjects)
        burst = 50  # small paced bursts: ingestion runs beside the queries, not instead
        events = corpus.generate(self.extra)
        routes = EventRoutes(self.subjects)  # sessions span bursts
        while not self._stopping.is_set() and time.monotonic() < stop_at:
            chunk = [e for _, e in zip(range(burst), events, strict=False)]
            if not chunk:
                return
            self.count += await corpus.publish_events(
                js, self.subjects, chunk, max_in_flight=burst, routes=routes
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), burst / rate)

    async def finish(self, task: asyncio.Task[None]) -> int:
        self._stopping.set()
        try:
            await task
        except Exception as exc:  # reported, not raised: the load's numbers still stand
            self.error = f"{type(exc).__name__}: {exc}"
        return self.count


def format_report(report: LoadReport) -> str:
    lines = [
        f"load: {report.sent} sent, {report.answered} answered ({report.ok} ok) "
        f"in {report.seconds:.1f} s = {report.answered / max(report.seconds, 1e-9):.0f} req/s",
        f"errors by code: {report.errors_by_code or 'none'}",
        f"transport failures: {report.transport_errors or 'none'}",
        f"extra events published during the load: {report.extra_events_published}"
        + (f" (stopped: {report.extra_publish_error})" if report.extra_publish_error else ""),
        "",
        f"{'tool':<22} {'sent':>6} {'answered':>8} {'ok':>6} {'p50 ms':>8} {'p99 ms':>8}  errors",
    ]
    for s in report.per_tool.values():
        lines.append(
            f"{s.tool:<22} {s.sent:>6} {s.answered:>8} {s.ok:>6} {s.latency_ms.p50:>8.2f} "
            f"{s.latency_ms.p99:>8.2f}  {s.errors_by_code or ''}"
        )
    for w in report.rss:
        lines.append(
            f"worker pid {w.pid}: peak RSS {w.peak_kib / 1024:.1f} MiB anon (VmHWM "
            f"{w.hwm_kib / 1024:.1f} with mapped index pages), "
            f"first quarter {w.first_quarter_kib / 1024:.1f} MiB, "
            f"last quarter {w.last_quarter_kib / 1024:.1f} MiB, "
            f"{'flat' if w.flat else 'GROWING'}, {w.samples} samples"
            + ("" if w.alive_at_end else ", exited during the run")
        )
    return "\n".join(lines)


def _parse_mix(text: str | None) -> Mapping[str, float]:
    if not text:
        return DEFAULT_MIX
    mix: dict[str, float] = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        mix[name.strip()] = float(weight)
    return mix


def main(argv: Sequence[str] | None = None) -> int:

    import nats

    parser = argparse.ArgumentParser(prog="python -m bench.loadgen", description=__doc__)
    parser.add_argument("--nats-url", default=os.environ.get("NATS_URL"), required=False)
    parser.add_argument(
        "--local",
        type=int,
        metavar="WORKERS",
        help="self-contained: publish the corpus to fresh streams and start this many worker "
        "processes (and a nats-server unless --nats-url), then load them",
    )
    parser.add_argument("--sidecar", type=Path, help="plan written by python -m bench.corpus")
    corpus.add_size_arguments(parser, sessions=200, events=100)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--mix", help="e.g. session_search=3,session_event_read=2")
    parser.add_argument("--request-timeout", type=float, default=30.0)
    parser.add_argument("--foreign-share", type=float, default=0.05)
    parser.add_argument("--worker-pid", type=int, action="append", default=[])
    parser.add_argument("--extra-sessions", type=int, default=0, help="publish during load")
    parser.add_argument("--extra-rate", type=float, default=500.0, help="events/s")
    parser.add_argument("--prefix", default="sessionquery", help="subject prefix")
    parser.add_argument("--events-stream", default="SESSIONS")
    parser.add_argument("--events-prefix", default="sessions.events")
    parser.add_argument("--seed-load", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.nats_url and not args.local:
        parser.error("--nats-url (or NATS_URL) is required without --local")
    if args.nats_url:
        require_loopback(args.nats_url)
    if args.sidecar:
        config, plans = corpus.load_sidecar(args.sidecar)
    else:
        config = corpus.config_from_args(args)
        plans = corpus.plan_sessions(config)
    extra = None
    if args.extra_sessions:
        extra = corpus.CorpusConfig(
            sessions=args.extra_sessions,
            events=config.events,
            workspaces=config.workspaces,
            seed=config.seed + 1000 + args.seed_load,
        )
    subjects = Subjects(
        prefix=args.prefix, events_stream=args.events_stream, events_prefix=args.events_prefix
    )

    def load(nc: Any, subjects: Subjects, pids: Sequence[int]) -> Any:
        return run_load(
            nc,
            subjects,
            plans,
            requests=args.requests,
            seconds=args.seconds,
            concurrency=args.concurrency,
            mix=_parse_mix(args.mix),
            request_timeout=args.request_timeout,
            foreign_share=args.foreign_share,
            worker_pids=pids,
            extra=extra,
            extra_rate=args.extra_rate,
            seed=args.seed_load,
        )

    async def go() -> LoadReport:
        if args.local:
            from bench.child import local_fleet

            async with local_fleet(config, workers=args.local, url=args.nats_url) as fleet:
                report: LoadReport = await load(
                    fleet.nc, fleet.subjects, [*fleet.pids, *args.worker_pid]
                )
                return report
        servers = [u.strip() for u in args.nats_url.split(",")]  # a cluster: all its nodes
        # A deployment with NATS users (compose.yaml) passes them in the environment.
        nc = await nats.connect(
            servers,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            user=os.environ.get("NATS_USER"),
            password=os.environ.get("NATS_PASSWORD"),
        )
        try:
            report = await load(nc, subjects, args.worker_pid)
            return report
        finally:
            await nc.close()

    report = asyncio.run(go())
    print(format_report(report))
    result = {
        "bench": "loadgen",
        "params": {k: v for k, v in vars(args).items() if not isinstance(v, Path)},
        "report": report.as_dict(),
        "checks": [],
    }
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
