"""Two stores the writer built from one corpus hold the same thing (issue 41: a change to
the writer's cost must not change what it writes).

Compares, between ``A`` and ``B`` (``index.sqlite`` files, each with its ``.search`` index,
e.g. two trees' runs of ``bench.writer_cpu --keep``):

- the store's rows: ``events`` (every column, the compressed ``doc`` byte for byte),
  ``sessions``, ``replacements``, ``citations``, ``deadletters``, ``zdict``;
- the search index's answers: ``--searches`` questions per kind drawn from the corpus as
  ``bench.archive_search`` draws them (rare and common words, identifiers, phrases), each
  asked of ``search_sessions`` from its workspace and of ``search_events`` in its session,
  first page of 50: every hit, in order, with what it shows.

``python -m bench.writer_same A/index.sqlite B/index.sqlite --corpus FILE.jsonl``
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from bench import archive_search, corpus

_TABLES = {
    "events": "SELECT * FROM events ORDER BY id",
    "sessions": "SELECT * FROM sessions ORDER BY session_id",
    "replacements": "SELECT * FROM replacements ORDER BY session_id, seq, replaced_seq",
    "citations": "SELECT * FROM citations ORDER BY session_id, seq, cited_session_id, cited_seq",
    "deadletters": "SELECT * FROM deadletters ORDER BY stream_seq",
    "zdict": "SELECT * FROM zdict ORDER BY id",
}


def rows_differ(a: Path, b: Path) -> list[str]:
    problems = []
    with sqlite3.connect(a) as ca, sqlite3.connect(b) as cb:
        for table, sql in _TABLES.items():
            ra, rb = ca.execute(sql).fetchall(), cb.execute(sql).fetchall()
            if ra != rb:
                first = next(
                    (i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y), None
                )
                problems.append(f"{table}: {len(ra)} / {len(rb)} rows, first difference at {first}")
            else:
                print(f"{table}: {len(ra)} rows, equal")
    return problems


async def answers(db: Path, questions: list[archive_search.Question]) -> list[str]:
    from worker.signals import ExecutionSignal
    from worker.store import CompiledQuery, EventFilter, SessionFilter, compile_query
    from worker.store.errors import StoreError
    from worker.store.sqlite import SqliteSessionStore

    store = await SqliteSessionStore.open(db, readers=1)
    out: list[str] = []
    try:
        for q in questions:
            query = CompiledQuery(q.text, compile_query(q.text))
            for tool in ("sessions", "events"):
                signal = ExecutionSignal.after(60.0)
                try:
                    page: Any
                    if tool == "sessions":
                        page = await store.search_sessions(
                            query,
                            cwd=q.cwd,
                            sessions=SessionFilter(),
                            events=EventFilter(),
                            cursor=None,
                            page_size=50,
                            signal=signal,
                        )
                    else:
                        page = await store.search_events(
                            query,
                            session_id=q.session_id,
                            events=EventFilter(),
                            cursor=None,
                            page_size=50,
                            signal=signal,
                        )
                    shown = (
                        "none"
                        if page is None
                        else f"n={len(page.hits)} "
                        + repr((page.hits, page.partial, page.unmatched, page.filtered_out))
                    )
                except StoreError as exc:
                    shown = f"error {type(exc).__name__}"
                finally:
                    signal.close()
                out.append(f"{tool} {q.kind} {q.text!r}: {shown}")
    finally:
        await store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writer_same", description=__doc__)
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--events", type=int, default=50_000, help="the corpus's size")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    problems = rows_differ(args.a, args.b)
    _, plans = corpus.archive_plans(args.events, seed=args.seed)
    questions = archive_search.draw_questions(
        args.corpus, plans, args.searches, sample=2000, seed=args.seed
    )
    got_a = asyncio.run(answers(args.a, questions))
    got_b = asyncio.run(answers(args.b, questions))
    hits = sum(1 for line in got_a if ": n=" in line and ": n=0 " not in line)
    differ = [f"A {x}\nB {y}" for x, y in zip(got_a, got_b, strict=True) if x != y]
    print(f"{len(got_a)} answers ({hits} with hits): {len(differ)} differ")
    problems += differ[:5]
    for problem in problems:
        print("DIFFERENT:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
