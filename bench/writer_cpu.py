"""The writer's CPU per event, in process, A against B (issue 41: the writer's cost per event).

``bench.archive`` measures the whole path over NATS, where the writer child's CPU moves
15-25% between runs of the same tree on this shared machine. This bench isolates it: the
archive-shaped corpus (``bench.corpus.generate_archive``) is fed to ``WriterCore`` in
batches of ``--batch`` messages (as a feed gives them: checked, applied, the search index
following with a commit every second, then a last commit), and the process's CPU time
(every thread: tantivy's too) is read around that loop only.

Each ``--tree`` is a checkout (its ``worker`` package is imported from there); the runs
alternate between the trees, ``--runs`` each, each in a fresh process, so the load on the
machine falls on all alike, and the spread of each tree's runs is printed.

``--profile FILE`` (one tree, one run): cProfile of the loop, written to FILE.
``--keep DIR``: the stores stay (``DIR/<n>/index.sqlite``) for ``bench.writer_same``.

``python -m bench.writer_cpu --events 50000 --tree /work/main --tree . --runs 3``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _corpus(events: int, seed: int, work: Path) -> Path:
    from bench import corpus

    out = work / f"archive-{events}-{seed}.jsonl"
    if not out.exists():
        corpus.write_archive_jsonl(events, out, seed=seed)
    return out


def child(source: Path, db: Path, batch: int, profile: Path | None) -> dict[str, Any]:
    """One run in this process (its ``worker`` imported from ``sys.path``)."""
    import orjson

    from contracts.partitions import workspace_key
    from worker.store.index.writer_core import WriterCore
    from worker.store.index.writer_limits import WriterLimits
    from worker.store.writer_protocol import IngestItem

    items: list[Any] = []
    key_of: dict[str, str] = {}
    with source.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            data = line.rstrip(b"\n")
            event = orjson.loads(data)
            sid = event["session_id"]
            if event["type"] == "session/start":
                key_of[sid] = workspace_key(event["payload"].get("cwd"))
            items.append(IngestItem(n, data, f"sq.events.{key_of[sid]}.{sid}"))
    # The writer child's limits: SESSIONQUERY_WRITER_LIMITS as serve passes them.
    core = WriterCore.open(
        db, text_cap_bytes=64 * 1024, max_event_bytes=1 << 20, limits=WriterLimits.from_env()
    )
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu0, wall0, main0 = time.process_time(), time.perf_counter(), time.thread_time()
    applied = 0
    for start in range(0, len(items), batch):
        result = core.apply(core.prepare(items[start : start + batch]))
        applied += result.applied
    core.follow_search(1 << 30, commit=True)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    main_cpu = time.thread_time() - main0
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))
    core.close()
    return {
        "events": len(items),
        "applied": applied,
        "cpu_s": cpu,
        "main_cpu_s": main_cpu,  # the Python thread; the rest is tantivy's threads
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writer_cpu", description=__doc__)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="a checkout, optionally @ the writer limits' JSON its runs get (the child's"
        " SESSIONQUERY_WRITER_LIMITS), e.g. '.@{\"search_commit_ms\": 3000}'",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        tree, source, db = args.child
        sys.path.insert(0, tree)
        prof = args.profile
        print(json.dumps(child(Path(source), Path(db), args.batch, prof)))
        return 0
    specs = [spec.partition("@")[::2] for spec in (args.tree or [str(REPO)])]
    trees = [f"{Path(path).resolve()}{'@' + limits if limits else ''}" for path, limits in specs]
    source = _corpus(args.events, args.seed, args.work)
    cpu: dict[str, list[float]] = {t: [] for t in trees}
    main_cpu: dict[str, list[float]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        for run in range(args.runs):
            for n, tree in enumerate(trees):
                base = args.keep if args.keep is not None else Path(tmp)
                db = base / f"{n}-{run}" / "index.sqlite"
                db.parent.mkdir(parents=True, exist_ok=True)
                cmd = [sys.executable, "-m", "bench.writer_cpu", "--batch", str(args.batch)]
                if args.profile is not None:
                    cmd += ["--profile", str(args.profile)]
                path, _, limits = tree.partition("@")
                cmd += ["--child", path, str(source), str(db)]
                env = {**os.environ, "PYTHONPATH": str(REPO)}
                if limits:
                    env["SESSIONQUERY_WRITER_LIMITS"] = limits
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                per = got["cpu_s"] / got["events"] * 1e6
                cpu[tree].append(per)
                main_per = got["main_cpu_s"] / got["events"] * 1e6
                main_cpu[tree].append(main_per)
                load = os.getloadavg()[0]
                print(
                    f"run {run} {tree}: {got['applied']} applied, CPU {got['cpu_s']:.1f} s"
                    f" = {per:.0f} us/event (Python thread {main_per:.0f};"
                    f" {got['events'] / got['cpu_s']:,.0f} events/s of CPU),"
                    f" wall {got['wall_s']:.1f} s, load {load:.1f}",
                    flush=True,
                )
    for tree, values in cpu.items():
        print(
            f"{tree}: us/event min {min(values):.0f} median {statistics.median(values):.0f}"
            f" max {max(values):.0f} ({', '.join(f'{v:.0f}' for v in values)});"
            f" Python thread median {statistics.median(main_cpu[tree]):.0f}"
        )
    if len(trees) == 2:
        a, b = (statistics.median(cpu[t]) for t in trees)
        print(f"second / first (medians): {b / a:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
