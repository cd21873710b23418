"""Relevance bench: does search find the session a model is looking for?

Over the labelled corpus of ``bench.relevance_corpus`` (generated; no transcripts), every
labelled query runs, in one run, through:

- ``new``: the worker's real store on its public path (``WriterCore`` builds the index,
  ``SqliteSessionStore.search_sessions`` answers from the caller's session, which is
  excluded), whatever search it implements at the time;
- ``baseline``: today's AND semantics (``bench.legacy_fts``, a frozen copy of the search
  before issue 10);
- ``reference``: a small in-Python ranker with stems, identifier parts and CJK bigrams
  (``bench.relevance_reference``), which shows the labels are attainable;
- ``hybrid`` (when the ``semantic`` extra is installed, issue 21): the same store with
  semantic search attached (``SemanticFollower`` embeds the corpus first), so lexical-only
  (``new``) and hybrid are compared per category in one run.

Per engine and category it prints n, success@1, success@5, MRR and how many queries got
no results; then PASS/MISS per category for the new search against success@5 >= 0.95.
``python -m bench.relevance [--seed N] [--show-misses]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from bench import relevance_corpus as rc
from bench.legacy_fts import LegacyIndex
from bench.relevance_hybrid import EMBEDDING, ask_hybrid, hybrid_checks
from bench.relevance_paraphrase import shared_words
from bench.relevance_reference import ReferenceRanker, missing_terms
from bench.report import Absolute, checks_of, format_table, result_dict, write_result

TARGET: Final = 0.95
ENGINES: Final = ("new", "hybrid", "baseline", "reference")
TEXT_CAP_BYTES: Final = 64 * 1024
MAX_EVENT_BYTES: Final = 1024 * 1024
PAGE_SIZE: Final = 100


@dataclass(frozen=True, slots=True)
class Answer:
    sessions: tuple[str, ...]  # best first
    error: str | None = None  # the store refused the query (reported, counted as a miss)
    # Pairs of sessions in the list whose title lines render the same while their first
    # prompts differ: the model could not tell them apart without opening each.
    title_clashes: tuple[tuple[str, str], ...] = ()

    def rank_of(self, session_id: str) -> int | None:
        try:
            return self.sessions.index(session_id) + 1
        except ValueError:
            return None


def build_store_index(events: Sequence[dict[str, Any]], db: Path, *, batch: int = 500) -> int:
    """Apply the corpus through the real writer, stream_seq from 1; returns events applied."""
    from worker.store.protocol import IngestItem
    from worker.store.writer import WriterCore

    core = WriterCore.open(db, text_cap_bytes=TEXT_CAP_BYTES, max_event_bytes=MAX_EVENT_BYTES)
    applied = 0
    try:
        for start in range(0, len(events), batch):
            items = [
                IngestItem(stream_seq=start + i + 1, data=orjson.dumps(event))
                for i, event in enumerate(events[start : start + batch])
            ]
            result = core.apply(core.prepare(items))
            if result.rejected:
                raise RuntimeError(f"writer rejected {result.rejected[0].reason}")
            applied += result.applied
    finally:
        core.close()
    return applied


async def ask_store(
    db: Path,
    queries: Sequence[rc.LabelledQuery],
    prompts: Mapping[str, str | None],
    embedder: Any = None,
) -> list[Answer]:
    """Each query through ``search_sessions``, first page of 100, from its caller; and the
    title lines of the sessions found (``title_clashes``)."""
    from worker.signals import ExecutionSignal
    from worker.store.errors import StoreError
    from worker.store.protocol import EventFilter, SessionFilter
    from worker.store.sqlite import SqliteSessionStore

    store = await SqliteSessionStore.open(db, readers=1)
    if embedder is not None:
        store.attach_semantic(embedder)
    answers = []
    try:
        for q in queries:
            signal = ExecutionSignal.after(30.0)
            try:
                page = await store.search_sessions(
                    q.query,
                    cwd=q.cwd,
                    sessions=SessionFilter(exclude_session_ids=(q.caller,)),
                    events=EventFilter(),
                    cursor=None,
                    page_size=PAGE_SIZE,
                    signal=signal,
                )
            except StoreError as exc:  # e.g. InvalidQuery: the model would see an error
                answers.append(Answer((), error=type(exc).__name__))
                continue
            finally:
                signal.close()
            found = tuple(hit.header.session_id for hit in page.hits)
            answers.append(Answer(found, title_clashes=await title_clashes(store, found, prompts)))
    finally:
        await store.close()
    return answers


async def title_clashes(
    store: Any, session_ids: Sequence[str], prompts: Mapping[str, str | None]
) -> tuple[tuple[str, str], ...]:
    """Pairs of ``session_ids`` whose title lines (as the tools render them: the title,
    else the first prompt, marked) are equal although their first prompts (``prompts``,
    from the corpus itself) are not."""
    from worker.signals import ExecutionSignal
    from worker.tools.formatting import format_title
    from worker.tools.titles import title_info

    signal = ExecutionSignal.after(30.0)
    try:
        observed = await store.read_titles(list(session_ids), signal=signal)
    finally:
        signal.close()
    seen: dict[str, str] = {}  # title line -> the first session showing it
    clashes = []
    for sid in session_ids:
        if sid not in observed:
            continue
        line = format_title(title_info(observed[sid], visible=True))
        first = seen.setdefault(line, sid)
        if first != sid and prompts.get(first) != prompts.get(sid):
            clashes.append((first, sid))
    return tuple(clashes)


def first_prompts(events: Sequence[dict[str, Any]]) -> dict[str, str | None]:
    """Each session's first prompt the user wrote, read from the corpus events."""
    from contracts.harness import first_prompt

    texts: dict[str, list[str]] = {}
    for event in events:
        text = event.get("payload", {}).get("text")
        if event["type"] == "message/user" and isinstance(text, str):
            texts.setdefault(event["session_id"], []).append(text)
    return {sid: first_prompt(found) for sid, found in texts.items()}


def ask_local(
    queries: Sequence[rc.LabelledQuery], search: Callable[[rc.LabelledQuery], list[str]]
) -> list[Answer]:
    return [Answer(tuple(search(q))) for q in queries]


def category_scores(
    queries: Sequence[rc.LabelledQuery], answers: Sequence[Answer]
) -> dict[str, dict[str, float]]:
    """Per category: n, success@1, success@5, MRR and the count of empty answers."""
    scores: dict[str, dict[str, float]] = {}
    for category in rc.CATEGORIES:
        ranks = [
            a.rank_of(q.expected)
            for q, a in zip(queries, answers, strict=True)
            if q.category == category
        ]
        empty = sum(
            1
            for q, a in zip(queries, answers, strict=True)
            if q.category == category and not a.sessions
        )
        if not ranks:
            continue
        n = len(ranks)
        scores[category] = {
            "n": n,
            "success_at_1": sum(r == 1 for r in ranks) / n,
            "success_at_5": sum(r is not None and r <= 5 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r is not None) / n,
            "no_results": empty,
        }
    return scores


async def answer_all(
    labelled: rc.RelevanceCorpus,
    sessions: Sequence[tuple[str, str, list[Any]]],
    work_dir: Path | None,
    keep: Path | None = None,
) -> tuple[dict[str, list[Answer]], int, float]:
    """Every query through each engine; also the events the store applied and the seconds
    its index took to build."""
    queries = labelled.queries
    with tempfile.TemporaryDirectory(prefix="sq-bench-relevance-", dir=work_dir) as tmp:
        db = keep or Path(tmp) / "index.sqlite"
        t0 = time.perf_counter()
        # A kept index (--db) of the same seed is reused, its vectors too.
        applied = (
            0 if db.exists() else await asyncio.to_thread(build_store_index, labelled.events, db)
        )
        build_s = time.perf_counter() - t0
        prompts = first_prompts(labelled.events)
        answers = {"new": await ask_store(db, queries, prompts)}
        answers["hybrid"] = await ask_hybrid(db, queries, prompts, ask_store)
    legacy = LegacyIndex(labelled.events)
    try:
        answers["baseline"] = ask_local(
            queries, lambda q: legacy.search(q.query, cwd=q.cwd, exclude=q.caller)
        )
    finally:
        legacy.close()
    reference = ReferenceRanker(sessions)
    answers["reference"] = ask_local(queries, lambda q: reference.rank(q.query, q.cwd, q.caller))
    return answers, applied, build_s


async def run(
    config: rc.RelevanceConfig, *, work_dir: Path | None = None, keep: Path | None = None
) -> dict[str, Any]:
    t0 = time.perf_counter()
    labelled = rc.build(config)
    queries = labelled.queries
    sessions = list(rc.session_texts(labelled.events))
    payloads = {sid: items for sid, _, items in sessions}
    unfindable = {
        i: terms
        for i, q in enumerate(queries)
        if q.category != "paraphrase" and (terms := missing_terms(q.query, payloads[q.expected]))
    }
    # The paraphrase category's premise: no word of the question is in the session.
    sharing = {
        q.query: words
        for q in queries
        if q.category == "paraphrase" and (words := shared_words(q.query, payloads[q.expected]))
    }
    generate_s = time.perf_counter() - t0
    answers, applied, build_s = await answer_all(labelled, sessions, work_dir, keep)
    scores = {name: category_scores(queries, answers[name]) for name in ENGINES}
    checks = [
        Absolute(f"success@5 {category}", s["success_at_5"], "share", "min", TARGET)
        for category, s in scores["new"].items()
        if category != "paraphrase"  # lexical search cannot: it is what hybrid is for
    ]
    checks += hybrid_checks(scores, TARGET)
    # No two sessions of a result list share a title line unless their first prompts are
    # equal (a resumed or forked copy): otherwise the model must open each to tell them.
    clashes = [pair for answer in answers["new"] for pair in answer.title_clashes]
    checks.append(Absolute("title lines alike, prompts differ", len(clashes), "pairs", "max", 0))
    measurements = {
        "events": len(labelled.events),
        "applied": applied,
        "queries": len(queries),
        "workspaces": list(labelled.workspaces),
        "generate_s": generate_s,
        "build_s": build_s,
        "scores": scores,
        "title_clashes": [list(pair) for pair in clashes[:20]],
        "paraphrase_sharing_words": sharing,
        "embedding": dict(EMBEDDING),
        "unfindable_labels": [
            {"query": queries[i].query, "missing": terms} for i, terms in unfindable.items()
        ],
        "per_query": [
            _query_record(q, [answers[name][i] for name in ENGINES]) for i, q in enumerate(queries)
        ],
    }
    return result_dict("relevance", params=asdict(config), checks=checks, measurements=measurements)


def _query_record(q: rc.LabelledQuery, answers: Sequence[Answer]) -> dict[str, Any]:
    record: dict[str, Any] = {"category": q.category, "query": q.query, "cwd": q.cwd}
    record["expected"] = q.expected
    for name, answer in zip(ENGINES, answers, strict=True):
        record[name] = {
            "rank": answer.rank_of(q.expected),
            "top5": list(answer.sessions[:5]),
            "returned": len(answer.sessions),
            "error": answer.error,
        }
    return record


def format_scores(engine: str, scores: dict[str, dict[str, float]]) -> str:
    header = (
        f"{'category':<18} {'n':>4} {'success@1':>10} {'success@5':>10} {'MRR':>6}"
        f" {'no results':>11}"
    )
    lines = [f"{engine}", header, "-" * len(header)]
    for category, s in scores.items():
        lines.append(
            f"{category:<18} {int(s['n']):>4} {s['success_at_1']:>10.2f} {s['success_at_5']:>10.2f}"
            f" {s['mrr']:>6.2f} {int(s['no_results']):>11}"
        )
    return "\n".join(lines)


def format_misses(
    result: dict[str, Any], engines: Sequence[str] = ("new", "hybrid", "reference")
) -> str:
    lines = []
    for engine in engines:
        for record in result["measurements"]["per_query"]:
            answer = record[engine]
            if answer["rank"] is not None and answer["rank"] <= 5:
                continue
            got = ", ".join(answer["top5"]) or answer["error"] or "no results"
            lines.append(
                f"[{engine}] {record['category']}: {record['query']!r} expected "
                f"{record['expected']} (rank {answer['rank']}); top 5: {got}"
            )
    return "\n".join(lines) or "no misses"


_TITLES: Final = {
    "new": "lexical only (worker store, public path)",
    "hybrid": "hybrid: lexical + semantic (worker store, --semantic on)",
    "baseline": "baseline (today's AND semantics, bench.legacy_fts)",
    "reference": "reference (in-Python: stems, identifier parts, CJK bigrams)",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.relevance", description=__doc__)
    default = rc.RelevanceConfig()
    parser.add_argument("--seed", type=int, default=default.seed)
    parser.add_argument(
        "--noise-sessions", type=int, default=default.noise_sessions, help="per workspace"
    )
    parser.add_argument("--show-misses", action="store_true", help="print each missed query")
    parser.add_argument("--db", type=Path, help="index file to build once and reuse (same seed)")
    args = parser.parse_args(argv)
    config = rc.RelevanceConfig(seed=args.seed, noise_sessions=args.noise_sessions)
    result = asyncio.run(run(config, keep=args.db))
    m = result["measurements"]
    for engine in ENGINES:
        print(format_scores(_TITLES[engine], m["scores"][engine]) + "\n")
    if args.show_misses:
        print(format_misses(result) + "\n")
    info = {
        "events": m["events"],
        "labelled queries": m["queries"],
        "workspaces": len(m["workspaces"]),
        "labels with a query term the expected session lacks": len(m["unfindable_labels"]),
        "paraphrase labels sharing a word with the session": len(m["paraphrase_sharing_words"]),
        "embedding the corpus (s)": round(m["embedding"].get("seconds", 0.0), 1),
        "vectors": int(m["embedding"].get("vectors", 0)),
    }
    title = f"relevance (seed {config.seed}): the new search against success@5 >= {TARGET}"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
