"""Search cost, one source tree against another in the same run (issue 29: the ranking from
the workspace's own statistics against the ranking before it).

``python -m bench.search_ab --base DIR --new DIR [--sessions 4000 --events 250]
[--workspaces 24 --seed 7] [--rounds 3] [--work DIR]``

``DIR`` is a checkout of the project (``git worktree add /tmp/base <rev>``); its code runs
with ``PYTHONPATH=DIR`` on this interpreter. Each tree builds its own index of the same
generated corpus (``bench.corpus``, through its own writer: the index formats may differ;
kept in ``--work`` and reused when it holds the corpus). Rounds then alternate base and
new, each a fresh process of its tree timing the store's first page of 100 sessions
(``bench.store.ProviderSearch``) for the same queries per class (``bench.floors``), so the
drift of a shared machine hits both. Prints p50 and p99 per class and over all queries,
the ratios new / base, and the worker's CPU per search from ``/proc`` (the child's utime
and stime over its timed loop). Targets: p50 <= 1.3x and p99 <= 1.5x over all queries.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus
from bench.report import Check, Latency, checks_of, format_table, result_dict, write_result

P50_TARGET: Final = 1.3
P99_TARGET: Final = 1.5
TREES: Final = ("base", "new")

# Run inside a tree (its own bench and worker packages): build the index when missing.
_BUILD: Final = """
import asyncio, json, sys
from pathlib import Path
from bench import corpus, store
config = corpus.CorpusConfig(**json.loads(sys.argv[2]))
asyncio.run(store.ensure_index(config, Path(sys.argv[1])))
"""

# Run inside a tree: time each query's first page twice (after a warm-up), print JSON.
_TIME: Final = """
import asyncio, json, os, sys, time
from pathlib import Path
from bench import corpus, floors, store

def cpu_s():
    fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

config = corpus.CorpusConfig(**json.loads(sys.argv[2]))
queries = floors.class_queries(config, int(sys.argv[3]), classes=store.ALL_CLASSES)

async def main():
    provider = await store.ProviderSearch.open(Path(sys.argv[1]), page_size=100)
    for query in queries[:5]:
        await provider.page(query)
    samples = {}
    cpu0 = cpu_s()
    for _ in range(2):
        for query in queries:
            seconds, _page = await provider.page(query)
            samples.setdefault(query.kind, []).append(seconds)
    cpu = cpu_s() - cpu0
    await provider.close()
    print(json.dumps({"samples": samples, "cpu_s": cpu, "searches": 2 * len(queries)}))

asyncio.run(main())
"""


def _in_tree(tree: Path, code: str, *args: object) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def run(
    trees: dict[str, Path],
    config: corpus.CorpusConfig,
    *,
    queries: int,
    rounds: int,
    work: Path,
) -> dict[str, Any]:
    dbs = {name: work / f"{name}.sqlite" for name in TREES}
    shape = json.dumps(asdict(config))
    for name in TREES:
        print(f"index of {name} ({trees[name]}): {dbs[name]}", file=sys.stderr, flush=True)
        _in_tree(trees[name], _BUILD, dbs[name], shape)
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in TREES}
    cpu = dict.fromkeys(TREES, 0.0)
    searches = dict.fromkeys(TREES, 0)
    for number in range(rounds):
        # Alternating which goes first, as well as alternating the two.
        for name in TREES if number % 2 == 0 else reversed(TREES):
            out = json.loads(_in_tree(trees[name], _TIME, dbs[name], shape, queries))
            for kind, values in out["samples"].items():
                samples[name].setdefault(kind, []).extend(values)
            cpu[name] += out["cpu_s"]
            searches[name] += out["searches"]
            print(f"round {number + 1}: {name} done", file=sys.stderr, flush=True)
    latency = {
        name: {
            **{kind: Latency.of(values) for kind, values in by_kind.items()},
            "all": Latency.of([s for values in by_kind.values() for s in values]),
        }
        for name, by_kind in samples.items()
    }
    base, new = latency["base"]["all"], latency["new"]["all"]
    checks = [
        Check("search p50 (new vs base)", new.p50, base.p50, "ms", "max", P50_TARGET),
        Check("search p99 (new vs base)", new.p99, base.p99, "ms", "max", P99_TARGET),
    ]
    measurements = {
        "latency_ms": {
            name: {kind: asdict(value) for kind, value in by.items()}
            for name, by in latency.items()
        },
        "cpu_ms_per_search": {name: cpu[name] / searches[name] * 1000 for name in TREES},
        "trees": {name: str(path) for name, path in trees.items()},
    }
    params = {**asdict(config), "queries": queries, "rounds": rounds}
    return result_dict("search_ab", params=params, checks=checks, measurements=measurements)


def _info(m: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {}
    base, new = m["latency_ms"]["base"], m["latency_ms"]["new"]
    for kind in base:
        b, n = base[kind], new[kind]
        info[f"{kind}: base / new p50, p99 ms"] = (
            f"{b['p50']:.2f} / {n['p50']:.2f} ({n['p50'] / b['p50']:.2f}x),"
            f" {b['p99']:.2f} / {n['p99']:.2f} ({n['p99'] / b['p99']:.2f}x) (n={n['n']})"
        )
    cpu = m["cpu_ms_per_search"]
    info["worker CPU per search, base / new ms (/proc)"] = (
        f"{cpu['base']:.2f} / {cpu['new']:.2f} ({cpu['new'] / cpu['base']:.2f}x)"
    )
    return info


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_ab", description=__doc__)
    parser.add_argument("--base", type=Path, required=True, help="checkout of the floor")
    parser.add_argument("--new", type=Path, required=True, help="checkout measured against it")
    corpus.add_size_arguments(parser, sessions=4000, events=250)
    parser.add_argument("--queries", type=int, default=50, help="queries per class")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree")
    parser.add_argument("--work", type=Path, help="where the two indexes live (kept)")
    args = parser.parse_args(argv)
    trees = {"base": args.base.resolve(), "new": args.new.resolve()}
    for name, tree in trees.items():
        if not (tree / "bench" / "store.py").exists():
            parser.error(f"--{name} {tree} is not a checkout of this project")
    work = args.work or Path(tempfile.mkdtemp(prefix="sq-bench-search-ab-"))
    work.mkdir(parents=True, exist_ok=True)
    config = corpus.config_from_args(args)
    result = run(trees, config, queries=args.queries, rounds=args.rounds, work=work)
    title = f"search cost A/B: {args.sessions} sessions x {args.events} events"
    print(format_table(title, checks_of(result), _info(result["measurements"])))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
