"""What every bench shares: percentiles, ratio checks, the result table and JSON, NATS.

A check compares a measurement with a floor measured in the same run; its ratio is
``measured / floor`` and passes when it is on the right side of the target. Nothing here
asserts: a bench prints PASS or MISS and records both numbers.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import platform
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

OUT_DIR = Path(__file__).resolve().parent / "out"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True)
class Latency:
    """Milliseconds."""

    n: int
    p50: float
    p99: float
    mean: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ms = [s * 1000 for s in seconds]
        mean = sum(ms) / len(ms) if ms else math.nan
        return cls(n=len(ms), p50=percentile(ms, 50), p99=percentile(ms, 99), mean=mean)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    measured: float
    floor: float
    unit: str
    # "max": ratio must be <= target (latency); "min": ratio must be >= target (throughput).
    kind: Literal["max", "min"]
    target: float

    @property
    def ratio(self) -> float:
        return self.measured / self.floor if self.floor else math.inf

    @property
    def passed(self) -> bool:
        if self.kind == "max":
            return self.ratio <= self.target
        return self.ratio >= self.target

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "passed": self.passed}


@dataclass(frozen=True, slots=True)
class Absolute:
    """A check against a fixed number rather than a floor (e.g. spill fetch MiB/s)."""

    name: str
    measured: float
    unit: str
    kind: Literal["max", "min"]
    target: float

    @property
    def passed(self) -> bool:
        return self.measured <= self.target if self.kind == "max" else self.measured >= self.target

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


def format_table(
    title: str, checks: Sequence[Check | Absolute], info: dict[str, Any] | None = None
) -> str:
    lines = [title, "=" * len(title)]
    for key, value in (info or {}).items():
        lines.append(f"  {key}: {_fmt(value)}")
    header = f"{'check':<34} {'measured':>12} {'floor':>12} {'ratio':>8} {'target':>9}  result"
    lines += ["", header, "-" * len(header)]
    for c in checks:
        op = "<=" if c.kind == "max" else ">="
        result = "PASS" if c.passed else "MISS"
        if isinstance(c, Check):
            lines.append(
                f"{c.name:<34} {_fmt(c.measured):>12} {_fmt(c.floor):>12} "
                f"{c.ratio:>7.2f}x {op}{c.target:>6.2f}x  {result}   ({c.unit})"
            )
        else:
            lines.append(
                f"{c.name:<34} {_fmt(c.measured):>12} {'-':>12} {'-':>8} "
                f"{op}{_fmt(c.target):>7}  {result}   ({c.unit})"
            )
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def result_dict(
    name: str,
    *,
    params: dict[str, Any],
    checks: Sequence[Check | Absolute],
    measurements: dict[str, Any],
) -> dict[str, Any]:
    return {
        "bench": name,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "params": params,
        "checks": [c.as_dict() for c in checks],
        "measurements": measurements,
        "passed": all(c.passed for c in checks),
    }


def checks_of(result: dict[str, Any]) -> list[Check | Absolute]:
    """The checks of a result dict, rebuilt for printing."""
    checks: list[Check | Absolute] = []
    for c in result["checks"]:
        if "floor" in c:
            checks.append(
                Check(c["name"], c["measured"], c["floor"], c["unit"], c["kind"], c["target"])
            )
        else:
            checks.append(Absolute(c["name"], c["measured"], c["unit"], c["kind"], c["target"]))
    return checks


def write_result(result: dict[str, Any], out_dir: Path | None = None) -> Path:
    directory = out_dir or OUT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = directory / f"{result['bench']}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, default=_json_default))
    return path


def _json_default(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def quiet_worker_logs(bench: str) -> Path:
    """Worker logs as JSON lines to a file under bench/out (as a deployment would ship
    them), so the console shows the table and per-request lines do not cost a terminal."""
    from worker.logs import configure_logging

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{bench}-worker.log"
    configure_logging(json=True, stream=path.open("a", encoding="utf-8"))
    return path


def require_loopback(url: str) -> str:
    """Benches and load runs target this machine only."""
    for part in url.split(","):
        host = urlparse(part.strip()).hostname
        if host not in LOOPBACK_HOSTS:
            raise SystemExit(f"refusing non-loopback NATS URL {part.strip()!r}: benches are local")
    return url


@asynccontextmanager
async def nats_url(explicit: str | None = None) -> AsyncIterator[str]:
    """``explicit`` or ``NATS_URL`` when given (loopback only); else a nats-server we start."""
    url = explicit or os.environ.get("NATS_URL")
    if url:
        yield require_loopback(url)
        return
    from worker.transport.embedded_server import EmbeddedNatsServer

    with tempfile.TemporaryDirectory(prefix="sq-bench-nats-") as tmp:
        server = EmbeddedNatsServer(store_dir=Path(tmp))
        server.start()
        try:
            yield server.url
        finally:
            server.stop()


_SUBJECT_SERIAL = itertools.count()


def bench_subjects(tag: str) -> Any:
    """Fresh stream, consumer and bucket names, so a run never meets an earlier one."""
    from contracts.subjects import Subjects

    # The counter: two calls in one millisecond (fleets opened together) still differ.
    t = f"{tag}{os.getpid()}{int(time.time() * 1000) % 10_000_000}n{next(_SUBJECT_SERIAL)}"
    return Subjects(
        prefix=f"sqb{t}",
        events_stream=f"SESSIONS_B{t}",
        events_prefix=f"evb{t}.events",
        deadletter=f"evb{t}.deadletter",
        search_stream=f"SEARCH_B{t}",
        search_consumer=f"search-b{t}",
        spill_bucket=f"spill-b{t}",
    )


def layout_subjects(shared: Any, name: str) -> Any:
    """``shared``'s events stream with a tool prefix, search queue and spill bucket of a
    deployment ``name``'s own: two layouts of workers over one stream (a worker of every
    partition overlaps each shard's search consumer, so they cannot share a queue)."""
    return dataclasses.replace(
        shared,
        prefix=f"{shared.prefix}{name}",
        search_stream=f"{shared.search_stream}_{name.upper()}",
        search_consumer=f"{shared.search_consumer}-{name}",
        spill_bucket=f"{shared.spill_bucket}-{name}",
    )


def process_cpu_s(pid: int) -> float:
    """utime + stime of one live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu_s(pid: int) -> float:
    """CPU seconds of a live process's live threads at nanosecond resolution (the
    scheduler's ``/proc/<pid>/task/*/schedstat``): for per-request figures over a few
    hundred calls, where ``stat``'s 10 ms clock tick would be a large share. A thread
    that ended meanwhile is not counted (the worker's threads are long-lived pools)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1e9


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.extend(int(child) for child in (task / "children").read_text().split())
    return found


def tree_cpu_s(pid: int | None = None) -> float:
    """CPU seconds of a process (this one by default) and its live descendants (a
    worker's writer child), from /proc."""
    total, stack = 0.0, [os.getpid() if pid is None else pid]
    while stack:
        one = stack.pop()
        try:
            total += process_cpu_s(one)
            stack.extend(_children(one))
        except (FileNotFoundError, ProcessLookupError):
            continue  # a process that ended meanwhile
    return total


def db_size_bytes(path: Path) -> int:
    """The index: the SQLite file with its WAL and shared-memory files, plus the search
    index directory beside it (``<db>.search``)."""
    files = [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]
    search = Path(f"{path}.search")
    if search.is_dir():
        files += [p for p in search.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files)


def search_index_bytes(path: Path) -> int:
    """The search index directory beside the store file (``<db>.search``) alone."""
    search = Path(f"{path}.search")
    if not search.is_dir():
        return 0
    return sum(p.stat().st_size for p in search.rglob("*") if p.is_file())
