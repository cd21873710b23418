"""Archive bench: a big history imported as a user would, its time, memory and disk (issue 41).

1. Generate the archive-shaped corpus (``bench.corpus.generate_archive``: sessions of
   10-3,000 events over many workspaces, long tool outputs, pasted logs, base64 images;
   deterministic from ``--seed``) as our events JSON Lines, ``--events`` in all.
2. Start ``sessionquery serve --home DIR`` (its embedded nats-server on 127.0.0.1, a free
   port) and wait until it serves.
3. Run ``sessionquery import --format events FILE`` against it and time from its start
   (the first publish) until the store holds the stream's last seq and the search index's
   committed position covers the store's last event. Meanwhile sample each process's RSS
   from /proc (serve, its writer child, its nats-server; 0.2 s) and note when the search
   index first answers during the import.
4. Print time, events/s, MB/s, peak RSS and CPU per process, disk per component (stream,
   store, search index) against the source bytes, and the corpus's shape.

The targets are absolute (issue 41), the floor printed beside is the same run's publish
alone (``import``'s own time): events/s >= 15,000; serve + writer peak RSS <= 300 MiB;
the whole tree <= 512 MiB; stream + store + index <= 1.2x the source (index snapshots the
worker publishes meanwhile are printed apart). ``--check`` exits 1 when one is missed.

``--searches N``: then the searches at archive scale on the home just built
(``bench.archive_search``: N questions per tool drawn from the corpus, over NATS), their
targets in ``--check``.

``python -m bench.archive --events 250000 [--check] [--keep DIR] [--searches N]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench import corpus, report
from bench.child import REPO_ROOT, wait_searchable
from contracts.subjects import Subjects

TARGET_EVENTS_PER_S: Final = 15_000.0
TARGET_WORKER_MIB: Final = 300.0  # serve + writer child, peak RSS
TARGET_TREE_MIB: Final = 512.0  # serve + writer + embedded nats-server
TARGET_DISK_RATIO: Final = 1.2  # stream + store + index against the source bytes
SAMPLE_S: Final = 0.2
PARTS_STEP_KIB: Final = 1024
MIB: Final = 2**20


@dataclass
class ProcStats:
    """One process's peak RSS (VmRSS: what the machine must hold) and its last CPU time."""

    role: str
    pid: int
    peak_rss_kib: int = 0
    peak_anon_kib: int = 0  # RssAnon: the process's own memory, without mapped file pages
    cpu_s: float = 0.0
    # What its RSS was made of at its VmRSS peak (``rss_parts``), KiB by part.
    peak_parts: dict[str, int] = field(default_factory=dict)


@dataclass
class TreeSampler:
    """Samples serve's process tree: serve, its writer child, its nats-server."""

    root: int
    procs: dict[int, ProcStats] = field(default_factory=dict)
    tree_peak_kib: int = 0
    worker_peak_kib: int = 0  # serve + writer, sampled together
    worker_anon_peak_kib: int = 0  # their RssAnon, sampled together

    def sample(self) -> None:
        tree = worker = worker_anon = 0
        for pid in _descendants(self.root):
            found = _rss_kib(pid)
            if found is None:
                continue
            rss, anon = found
            stats = self.procs.get(pid)
            if stats is None:
                stats = self.procs[pid] = ProcStats(_role(pid, self.root), pid)
            if rss >= stats.peak_rss_kib + PARTS_STEP_KIB or not stats.peak_parts:
                # Read at a new peak only (a MiB above the last): smaps costs the kernel a
                # walk of the process's mappings.
                stats.peak_parts = rss_parts(pid) or stats.peak_parts
            stats.peak_rss_kib = max(stats.peak_rss_kib, rss)
            stats.peak_anon_kib = max(stats.peak_anon_kib, anon)
            with contextlib.suppress(OSError):
                stats.cpu_s = report.process_cpu_s(pid)
            tree += rss
            if stats.role != "nats-server":
                worker += rss
                worker_anon += anon
        self.tree_peak_kib = max(self.tree_peak_kib, tree)
        self.worker_peak_kib = max(self.worker_peak_kib, worker)
        self.worker_anon_peak_kib = max(self.worker_anon_peak_kib, worker_anon)

    def by_role(self) -> dict[str, ProcStats]:
        """One entry per role (a writer restarted mid-run: its largest peak, CPU summed)."""
        out: dict[str, ProcStats] = {}
        for stats in self.procs.values():
            seen = out.get(stats.role)
            if seen is None:
                out[stats.role] = ProcStats(
                    stats.role, stats.pid, stats.peak_rss_kib, stats.peak_anon_kib, stats.cpu_s,
                    dict(stats.peak_parts),
                )  # fmt: skip
            else:
                if stats.peak_rss_kib > seen.peak_rss_kib:
                    seen.peak_parts = dict(stats.peak_parts)
                seen.peak_rss_kib = max(seen.peak_rss_kib, stats.peak_rss_kib)
                seen.peak_anon_kib = max(seen.peak_anon_kib, stats.peak_anon_kib)
                seen.cpu_s += stats.cpu_s
        return out


def _descendants(root: int) -> list[int]:
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
    return found


def _rss_kib(pid: int) -> tuple[int, int] | None:
    """(VmRSS, RssAnon) in KiB, or None when the process is gone."""
    values: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                values[key] = int(rest.split()[0])
    except OSError:
        return None
    if "VmRSS" not in values:
        return None
    return values["VmRSS"], values.get("RssAnon", values["VmRSS"])


def rss_parts(pid: int) -> dict[str, int]:
    """A process's RSS by part (KiB), from /proc/<pid>/smaps: ``anonymous`` (heap, arenas,
    stacks), ``search index`` (its mapped segment files), ``store`` (the SQLite file),
    ``libraries`` (mapped code) and ``other files``. Empty when the process is gone."""
    parts: Counter[str] = Counter()
    part = "anonymous"
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            part = _part_of(head[5] if len(head) == 6 else "")
        elif line.startswith("Rss:"):
            parts[part] += int(line.split()[1])
    return dict(parts)


def _part_of(name: str) -> str:
    if not name.startswith("/"):
        return "anonymous"  # [heap], [stack], [anon:...], arenas and maps of no file
    if ".search/" in name:
        return "search index"
    if name.endswith((".sqlite", ".sqlite-shm")):
        return "store"
    if ".so" in name or "/bin/" in name:
        return "libraries"
    return "other files"


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "serve"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    if "nats-server" in cmd:
        return "nats-server"
    if "python" in cmd:
        return "writer"
    return "other"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _store_count(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.OperationalError:
        return 0
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def _searchable_now(db: Path) -> bool:
    """Whether the search index has a commit covering at least one event."""
    from worker.store.search.search_reader import SearchIndexReader

    try:
        reader = SearchIndexReader.open(db)
        return reader is not None and reader.refresh().event_id > 0
    except Exception:  # not created yet, mid-commit: not searchable yet
        return False


def corpus_shape(path: Path) -> dict[str, Any]:
    """The generated file's shape: bytes by event type, event size p50/p99, sessions."""
    import orjson

    sizes: list[int] = []
    by_type: Counter[str] = Counter()
    sessions: set[str] = set()
    with path.open("rb") as fh:
        for line in fh:
            event = orjson.loads(line)
            sizes.append(len(line) - 1)
            by_type[event["type"]] += len(line) - 1
            sessions.add(event["session_id"])
    total = sum(sizes) or 1
    return {
        "events": len(sizes),
        "sessions": len(sessions),
        "size_p50": report.percentile(sizes, 50),
        "size_p99": report.percentile(sizes, 99),
        "share_of_bytes": {k: round(v / total, 3) for k, v in by_type.most_common()},
    }


async def run(
    total_events: int,
    *,
    seed: int = 7,
    work_dir: Path | None = None,
    keep: Path | None = None,
    timeout_s: float = 3600.0,
    serve_args: Sequence[str] = (),
    shape: bool = True,
    searches: int = 0,
) -> dict[str, Any]:
    import nats

    tmp_ctx = (
        contextlib.nullcontext(str(keep))
        if keep
        else tempfile.TemporaryDirectory(prefix="sq-bench-archive-", dir=work_dir)
    )
    with tmp_ctx as tmp_name:
        tmp = Path(tmp_name)
        source, source_bytes, home = await asyncio.to_thread(_prepare, tmp, total_events, seed)
        port = _free_port()
        url = f"nats://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
        env["PYTHONPATH"] = str(REPO_ROOT)
        cli = [sys.executable, "-m", "worker.cli"]
        serve_log = await asyncio.to_thread(_open_log, tmp / "serve.log")
        import_log = await asyncio.to_thread(_open_log, tmp / "import.log")
        serve = await asyncio.create_subprocess_exec(
            *cli, "serve", "--home", str(home), "--embedded-port", str(port),
            "--log-format", "json", *serve_args,
            stdout=serve_log, stderr=asyncio.subprocess.STDOUT, env=env,
        )  # fmt: skip
        sampler = TreeSampler(serve.pid)
        m: dict[str, Any] = {"source_bytes": source_bytes}
        db = home / "index.sqlite"
        try:
            nc = await _connect_when_up(nats, url, serve)
            events_stream = Subjects().events_stream
            await _wait_stream(nc.jetstream(), events_stream, serve)
            sampling = asyncio.create_task(_sample(sampler))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            importer = await asyncio.create_subprocess_exec(
                *cli, "import", "--format", "events", "--nats-url", url, str(source),
                stdout=asyncio.subprocess.DEVNULL, stderr=import_log,
                env=env,
            )  # fmt: skip
            searchable_at = None
            while importer.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(importer.wait(), 1.0)
                if searchable_at is None and await asyncio.to_thread(_searchable_now, db):
                    searchable_at = time.perf_counter() - t0
            m["import_s"] = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            m["import_cpu_s"] = (after.ru_utime + after.ru_stime) - (
                before.ru_utime + before.ru_stime
            )
            if importer.returncode != 0:
                raise RuntimeError(f"import exited {importer.returncode}: see {tmp}/import.log")
            last_seq = (await nc.jetstream().stream_info(events_stream)).state.last_seq
            await nc.close()
            m["stream_last_seq"] = last_seq
            deadline = time.perf_counter() + timeout_s
            while await asyncio.to_thread(_store_count, db) < last_seq:
                if time.perf_counter() > deadline or serve.returncode is not None:
                    raise TimeoutError(f"the store did not reach {last_seq} events")
                await asyncio.sleep(0.1)
            m["stored_s"] = time.perf_counter() - t0
            await wait_searchable(db, timeout_s, poll_s=0.05)
            m["indexed_s"] = time.perf_counter() - t0
            m["searchable_during_import_s"] = searchable_at
            sampling.cancel()
            sampler.sample()
        finally:
            if serve.returncode is None:
                serve.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(serve.wait(), 60)
                except TimeoutError:
                    serve.kill()
                    await serve.wait()
            serve_log.close()
            import_log.close()
        m["events"] = _store_count(db)
        m["disk"] = await asyncio.to_thread(_disk, home, db)
        m["processes"] = {
            role: {
                "pid": s.pid,
                "peak_rss_mib": s.peak_rss_kib / 1024,
                "peak_anon_mib": s.peak_anon_kib / 1024,
                "cpu_s": s.cpu_s,
                "peak_parts_mib": {k: v / 1024 for k, v in s.peak_parts.items()},
            }
            for role, s in sampler.by_role().items()
        }
        m["worker_peak_mib"] = sampler.worker_peak_kib / 1024
        m["worker_anon_peak_mib"] = sampler.worker_anon_peak_kib / 1024
        m["tree_peak_mib"] = sampler.tree_peak_kib / 1024
        if shape:
            m["shape"] = await asyncio.to_thread(corpus_shape, source)
        if searches:
            from bench import archive_search

            m["searches"] = await archive_search.measure(
                home, source, total_events, searches=searches, seed=seed,
                log=tmp / "serve-search.log", timeout_s=timeout_s,
            )  # fmt: skip
    seconds = m["indexed_s"]
    m["events_per_s"] = m["events"] / seconds if seconds else 0.0
    m["mb_per_s"] = source_bytes / 1e6 / seconds if seconds else 0.0
    disk_total = sum(m["disk"][part] for part in ("stream", "store", "index"))
    checks: list[report.Check | report.Absolute] = [
        report.Absolute("events/s until searchable", m["events_per_s"], "events/s", "min",
                        TARGET_EVENTS_PER_S),
        report.Absolute("serve + writer peak RSS", m["worker_peak_mib"], "MiB", "max",
                        TARGET_WORKER_MIB),
        report.Absolute("whole tree peak RSS", m["tree_peak_mib"], "MiB", "max",
                        TARGET_TREE_MIB),
        report.Check("disk against the source", disk_total, source_bytes, "bytes", "max",
                     TARGET_DISK_RATIO),
    ]  # fmt: skip
    if searches:
        from bench import archive_search

        checks += archive_search.checks(m["searches"])
    params = {
        "events": total_events, "seed": seed, "serve_args": list(serve_args),
        "searches": searches,
    }  # fmt: skip
    return report.result_dict("archive", params=params, checks=checks, measurements=m)


def _prepare(tmp: Path, total_events: int, seed: int) -> tuple[Path, int, Path]:
    """The corpus file (a kept directory reuses its own), its size, a fresh home."""
    tmp.mkdir(parents=True, exist_ok=True)
    source = tmp / f"archive-{total_events}-{seed}.jsonl"
    if not source.exists():
        corpus.write_archive_jsonl(total_events, source, seed)
    home = tmp / "home"
    if home.exists():
        shutil.rmtree(home)
    return source, source.stat().st_size, home


def _open_log(path: Path) -> Any:
    return path.open("wb")


def _disk(home: Path, db: Path) -> dict[str, int]:
    """Bytes per component; the index snapshots the worker publishes (every 10 minutes by
    default, so a long import has one) and the rest of JetStream apart from the stream."""
    streams = home / "nats" / "jetstream" / "jetstream" / "$G" / "streams"
    snapshots = sum(_tree_bytes(p) for p in streams.glob("OBJ_*snapshots*"))
    stream = _tree_bytes(streams / Subjects().events_stream)
    return {
        "stream": stream,
        "snapshots": snapshots,
        "other JetStream": _tree_bytes(home / "nats") - stream - snapshots,
        "store": sum(_tree_bytes(Path(f"{db}{s}")) for s in ("", "-wal", "-shm")),
        "index": report.search_index_bytes(db),
    }


async def _connect_when_up(nats: Any, url: str, serve: asyncio.subprocess.Process) -> Any:
    deadline = time.perf_counter() + 120
    while True:
        if serve.returncode is not None:
            raise RuntimeError(f"serve exited {serve.returncode} before serving")
        try:
            return await nats.connect(
                url, connect_timeout=1, allow_reconnect=False, error_cb=_quiet
            )
        except Exception:
            if time.perf_counter() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _quiet(exc: Exception) -> None:
    """Connection refusals while serve starts are expected: not printed."""


async def _wait_stream(js: Any, name: str, serve: asyncio.subprocess.Process) -> None:
    """serve creates the stream when it starts; the import would create it otherwise."""
    deadline = time.perf_counter() + 120
    while True:
        try:
            await js.stream_info(name)
            return
        except Exception:
            if time.perf_counter() > deadline or serve.returncode is not None:
                raise
            await asyncio.sleep(0.2)


async def _sample(sampler: TreeSampler) -> None:
    while True:
        await asyncio.to_thread(sampler.sample)
        await asyncio.sleep(SAMPLE_S)


def summary(result: dict[str, Any]) -> dict[str, Any]:
    m = result["measurements"]
    source = m["source_bytes"]
    info: dict[str, Any] = {
        "events (stored / stream last seq)": f"{m['events']:,} / {m['stream_last_seq']:,}",
        "source MB": f"{source / 1e6:,.1f}",
        "import (publish) s / events/s": (
            f"{m['import_s']:.1f} / {m['events'] / m['import_s']:,.0f}"
            f" (floor: the publish alone; ingest at {m['indexed_s'] / m['import_s']:.2f}x it)"
        ),
        "until stored s": f"{m['stored_s']:.1f}",
        "until searchable s / events/s / MB/s": (
            f"{m['indexed_s']:.1f} / {m['events_per_s']:,.0f} / {m['mb_per_s']:.1f}"
        ),
        "searchable during the import after s": m["searchable_during_import_s"],
        "import CPU s": f"{m['import_cpu_s']:.1f}",
    }
    for role, p in sorted(m["processes"].items()):
        info[f"{role} (pid {p['pid']}) peak RSS / RssAnon MiB, CPU s"] = (
            f"{p['peak_rss_mib']:.0f} / {p['peak_anon_mib']:.0f}, {p['cpu_s']:.1f}"
            f" ({p['cpu_s'] / m['events'] * 1e6:.0f} us/event)"
        )
        parts = p.get("peak_parts_mib") or {}
        if parts:
            info[f"{role} at its peak, MiB"] = ", ".join(
                f"{k} {v:.0f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
            )
    if "worker_anon_peak_mib" in m:
        info["serve + writer peak RSS / RssAnon MiB (sampled together)"] = (
            f"{m['worker_peak_mib']:.0f} / {m['worker_anon_peak_mib']:.0f}"
        )
    for part, size in m["disk"].items():
        info[f"disk {part} MB (x source)"] = f"{size / 1e6:,.1f} ({size / source:.2f}x)"
    if "shape" in m:
        s = m["shape"]
        info["corpus"] = (
            f"{s['sessions']:,} sessions, event bytes p50 {s['size_p50']:.0f}"
            f" p99 {s['size_p99']:.0f}"
        )
        info["share of bytes"] = ", ".join(f"{k} {v:.0%}" for k, v in s["share_of_bytes"].items())
    if "searches" in m:
        from bench import archive_search

        info.update(archive_search.summary(m["searches"]))
    return info


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.archive", description=__doc__)
    parser.add_argument("--events", type=int, default=250_000, help="events in all")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, default=None, help="where the temporary dir goes")
    parser.add_argument("--keep", type=Path, default=None, help="keep corpus and home here")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--searches", type=int, default=0, help="then N questions per tool (bench.archive_search)"
    )
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="extra flag for serve (repeatable)"
    )
    args = parser.parse_args(argv)
    result = asyncio.run(
        run(
            args.events,
            seed=args.seed,
            work_dir=args.work,
            keep=args.keep,
            timeout_s=args.timeout,
            serve_args=args.serve_arg,
            searches=args.searches,
        )
    )
    title = f"archive: {args.events:,} events (seed {args.seed})"
    print(report.format_table(title, report.checks_of(result), summary(result)))
    print(f"\nresult: {report.write_result(result)}")
    if args.check and not result["passed"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
