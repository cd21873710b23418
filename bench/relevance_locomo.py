"""The outside conversational-memory benchmark (issue 42): LoCoMo's questions asked through
the store's session search, scored as published: session-level Hit@1.

LoCoMo (snap-research/locomo) is ten long two-person conversations, each of up to 35
dated sessions, and 1,986 questions in five categories (1 multi-hop, 2 temporal, 3
open-domain, 4 single-hop, 5 adversarial), each with its ``evidence``: the turns that
answer it (``D3:7``: session 3, turn 7). The data is not ours and never committed: the
bench reads it from the path given (``locomo10.json``, a list of the ten samples; a
directory or ``.zip`` of per-sample JSON files, the repository's ``locomo10_v2`` layout,
is read the same way).

Each conversation becomes one workspace: its sessions are sessions of that workspace
(``session_N`` at ``session_N_date_time``), each turn a message with the speaker's name
in front (``Caroline: ...``; the first speaker's turns ``message/user``, the other's
``message/assistant``), an image a turn shares in words after it as LoCoMo's own
retrieval baselines give it (``and shared <caption>``). Each question is asked as written
from an empty caller session of the workspace through ``search_sessions`` (the provider
behind the ``session_search`` tool: the same query, filters and order), first page of
100, and scored a hit at 1 when the first session is one of the evidence's sessions
(questions whose evidence names no session of the conversation, 4 of 1,986, are left
out). Lexical and, with the ``semantic`` extra, hybrid (the turns embedded first; keep
them with ``--db``) per category, and the targets: lexical >= 0.70, hybrid >= 0.72,
hybrid >= lexical - 0.005 in every category.

``python -m bench.relevance_locomo PATH [--db FILE] [--lexical-only] [--show-misses N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bench import relevance_corpus as rc
from bench.relevance import build_store_index
from bench.report import Absolute, format_table, result_dict, write_result

CATEGORIES: Final = {
    1: "multi_hop",
    2: "temporal",
    3: "open_domain",
    4: "single_hop",
    5: "adversarial",
}
LEXICAL_TARGET: Final = 0.70
HYBRID_TARGET: Final = 0.72
HYBRID_SLACK: Final = 0.005
PAGE_SIZE: Final = 100
_EVIDENCE: Final = re.compile(r"D(\d+):\d+")
_SESSION_KEY: Final = re.compile(r"session_(\d+)")
# "1:56 pm on 8 May, 2023"
_DATE: Final = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)


@dataclass(frozen=True, slots=True)
class Question:
    conversation: str
    category: str
    question: str
    cwd: str
    caller: str
    sessions: frozenset[str]  # the evidence's sessions: any of them first is a hit


@dataclass(frozen=True, slots=True)
class Dataset:
    events: list[dict[str, Any]]
    questions: list[Question]
    left_out: int  # questions whose evidence names no session of the conversation
    turns: int


def samples(path: Path) -> Iterator[dict[str, Any]]:
    """LoCoMo's samples: a JSON list (``locomo10.json``), one sample per JSON file of a
    directory, or the same files in a ``.zip``."""
    if path.is_dir():
        for file in sorted(path.rglob("*.json")):
            yield from _as_samples(json.loads(file.read_text()), file.stem)
    elif path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for name in sorted(n for n in archive.namelist() if n.endswith(".json")):
                yield from _as_samples(json.loads(archive.read(name)), Path(name).stem)
    else:
        yield from _as_samples(json.loads(path.read_text()), path.stem)


def _as_samples(data: Any, name: str) -> Iterator[dict[str, Any]]:
    if isinstance(data, list):
        for i, sample in enumerate(data):
            yield {"sample_id": sample.get("sample_id", f"{name}-{i}"), **sample}
    else:  # one sample: the conversation's keys at the top (locomo10_v2) or under it
        conversation = data.get("conversation", data)
        yield {"sample_id": data.get("sample_id", name), "conversation": conversation, **data}


def parse_date(text: str) -> datetime:
    found = _DATE.search(text)
    if found is None:
        raise ValueError(f"unreadable session date {text!r}")
    hour, minute, half, day, month, year = found.groups()
    clock = datetime.strptime(f"{int(hour)}:{minute} {half.upper()}", "%I:%M %p")
    date = datetime.strptime(f"{day} {month[:3]} {year}", "%d %b %Y")
    return date.replace(hour=clock.hour, minute=clock.minute, tzinfo=UTC)


def turn_text(turn: Mapping[str, Any]) -> str:
    """A turn as a message: the speaker's name, the words, the image it shares in words."""
    text = f"{turn['speaker']}: {turn.get('text', '')}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" and shared {caption}"
    return text


def load(path: Path) -> Dataset:
    events: list[dict[str, Any]] = []
    questions: list[Question] = []
    left_out = turns = 0
    for index, sample in enumerate(samples(path)):
        name = str(sample["sample_id"])
        conversation = sample["conversation"]
        cwd = f"/locomo/{name}"
        caller = f"locomo-{name}-caller"
        events.append(_start(caller, cwd, 0))
        speaker_a = conversation.get("speaker_a")
        ids: dict[int, str] = {}
        for key, value in conversation.items():
            number = _SESSION_KEY.fullmatch(key)
            if number is None or not isinstance(value, list) or not value:
                continue
            n = int(number.group(1))
            sid = f"locomo-{name}-s{n:02d}"
            ids[n] = sid
            start = parse_date(conversation[f"{key}_date_time"])
            session = rc.Session(
                sid, cwd, int(start.timestamp() * 1000), random.Random(f"{index}:{n}")
            )
            for turn in value:
                turns += 1
                if turn["speaker"] == speaker_a:
                    session.user(turn_text(turn))
                else:
                    session.assistant(turn_text(turn))
            session.end()
            events.extend(session.events)
        for qa in sample["qa"]:
            found = {
                ids[int(m)]
                for item in qa.get("evidence") or []
                for m in _EVIDENCE.findall(str(item))
                if int(m) in ids
            }
            if not found:
                left_out += 1
                continue
            category = CATEGORIES.get(int(qa["category"]), f"category_{qa['category']}")
            questions.append(
                Question(name, category, str(qa["question"]), cwd, caller, frozenset(found))
            )
    return Dataset(events, questions, left_out, turns)


def _start(sid: str, cwd: str, ms: int) -> dict[str, Any]:
    return {
        "session_id": sid,
        "seq": 1,
        "event_id": f"e{sid}-000001",
        "type": "session/start",
        "surface": "system",
        "time": datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "payload": {"cwd": cwd},
    }


async def ask(db: Path, questions: Sequence[Question], embedder: Any = None) -> list[list[str]]:
    """Each question through ``search_sessions`` from its caller: the sessions, best first
    (an empty list for a refused question)."""
    from worker.signals import ExecutionSignal
    from worker.store import CompiledQuery, EventFilter, SessionFilter, compile_query
    from worker.store.errors import StoreError
    from worker.store.sqlite import SqliteSessionStore

    store = await SqliteSessionStore.open(db, readers=1)
    if embedder is not None:
        store.attach_semantic(embedder)
    found: list[list[str]] = []
    try:
        for q in questions:
            signal = ExecutionSignal.after(60.0)
            try:
                page = await store.search_sessions(
                    CompiledQuery(q.question, compile_query(q.question)),
                    cwd=q.cwd,
                    sessions=SessionFilter(exclude_session_ids=(q.caller,)),
                    events=EventFilter(),
                    cursor=None,
                    page_size=PAGE_SIZE,
                    signal=signal,
                )
            except StoreError:
                found.append([])
                continue
            finally:
                signal.close()
            found.append([hit.header.session_id for hit in page.hits])
    finally:
        await store.close()
    return found


def scores(questions: Sequence[Question], answers: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Per category and overall: n, Hit@1 (as published), Hit@5 and MRR."""
    ranks: dict[str, list[int | None]] = {}
    for q, found in zip(questions, answers, strict=True):
        rank = next((i + 1 for i, sid in enumerate(found) if sid in q.sessions), None)
        ranks.setdefault(q.category, []).append(rank)
        ranks.setdefault("overall", []).append(rank)
    return {
        category: {
            "n": len(r),
            "hit_at_1": sum(x == 1 for x in r) / len(r),
            "hit_at_5": sum(x is not None and x <= 5 for x in r) / len(r),
            "mrr": sum(1 / x for x in r if x is not None) / len(r),
        }
        for category, r in ranks.items()
    }


async def run(path: Path, keep: Path | None, *, hybrid: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    data = load(path)
    answers: dict[str, list[list[str]]] = {}
    embedding: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sq-bench-locomo-") as tmp:
        db = keep or Path(tmp) / "index.sqlite"
        if not db.exists():
            await asyncio.to_thread(build_store_index, data.events, db)
        built_s = time.perf_counter() - t0
        answers["lexical"] = await ask(db, data.questions)
        if hybrid:
            answers["hybrid"] = await _ask_hybrid(db, data.questions, embedding)
    result = {name: scores(data.questions, found) for name, found in answers.items()}
    checks = [
        Absolute(
            "lexical Hit@1",
            result["lexical"]["overall"]["hit_at_1"],
            "share",
            "min",
            LEXICAL_TARGET,
        )
    ]
    if "hybrid" in result:
        checks.append(
            Absolute(
                "hybrid Hit@1",
                result["hybrid"]["overall"]["hit_at_1"],
                "share",
                "min",
                HYBRID_TARGET,
            )
        )
        for category, s in result["hybrid"].items():
            gain = s["hit_at_1"] - result["lexical"][category]["hit_at_1"]
            checks.append(
                Absolute(f"hybrid - lexical {category}", gain, "share", "min", -HYBRID_SLACK)
            )
    measurements = {
        "events": len(data.events),
        "turns": data.turns,
        "questions": len(data.questions),
        "left_out": data.left_out,
        "build_s": built_s,
        "embedding": embedding,
        "scores": result,
        "seconds": time.perf_counter() - t0,
        "per_question": [
            {
                "conversation": q.conversation,
                "category": q.category,
                "question": q.question,
                "evidence": sorted(q.sessions),
                **{name: found[i][:5] for name, found in answers.items()},
            }
            for i, q in enumerate(data.questions)
        ],
    }
    params = {"path": str(path), "hybrid": hybrid}
    return result_dict("relevance_locomo", params=params, checks=checks, measurements=measurements)


async def _ask_hybrid(
    db: Path, questions: Sequence[Question], embedding: dict[str, float]
) -> list[list[str]]:
    from worker.store.search import semantic

    if not semantic.available():
        return [[] for _ in questions]
    from worker.store.search.semantic.embedder import Embedder
    from worker.store.search.semantic.follower import SemanticFollower

    embedder = Embedder(threads=2)
    follower = SemanticFollower(db, embedder)
    t0 = time.perf_counter()
    try:
        await asyncio.to_thread(follower.catch_up)
        embedding.update(seconds=time.perf_counter() - t0, vectors=follower.lag().vectors)
    finally:
        follower.close()
    try:
        return await ask(db, questions, embedder)
    finally:
        embedder.close()


def format_scores(result: Mapping[str, Any]) -> str:
    table = result["measurements"]["scores"]
    engines = list(table)
    rows = [f"{'category':<14} {'n':>5} " + " ".join(f"{e + ' @1/@5':>18}" for e in engines)]
    for category in [*CATEGORIES.values(), "overall"]:
        if category not in table["lexical"]:
            continue
        n = table["lexical"][category]["n"]
        cells = " ".join(
            f"{table[e][category]['hit_at_1']:>9.3f}/{table[e][category]['hit_at_5']:.3f}"
            for e in engines
        )
        rows.append(f"{category:<14} {n:>5} {cells}")
    return "\n".join(rows)


def format_misses(result: Mapping[str, Any], engine: str, limit: int) -> str:
    lines = [f"{engine} misses (first {limit}):"]
    shown = 0
    for q in result["measurements"]["per_question"]:
        top = q.get(engine) or []
        if top and top[0] in q["evidence"]:
            continue
        lines.append(f"  [{q['category']}] {q['question']!r} want {q['evidence']} got {top[:3]}")
        shown += 1
        if shown >= limit:
            break
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.relevance_locomo", description=__doc__)
    parser.add_argument("path", type=Path, help="locomo10.json (or a directory/.zip of samples)")
    parser.add_argument("--db", type=Path, help="index file to build once and reuse")
    parser.add_argument("--lexical-only", action="store_true", help="skip the hybrid engine")
    parser.add_argument("--show-misses", type=int, default=0, help="print this many misses")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.path, args.db, hybrid=not args.lexical_only))
    m = result["measurements"]
    print(format_scores(result) + "\n")
    for engine in m["scores"]:
        if args.show_misses:
            print(format_misses(result, engine, args.show_misses) + "\n")
    info = {
        "events": m["events"],
        "turns": m["turns"],
        "questions": m["questions"],
        "questions left out (no evidence session)": m["left_out"],
        "embedding the turns (s)": round(m["embedding"].get("seconds", 0.0), 1),
        "seconds": round(m["seconds"], 1),
    }
    print(format_table("bench.relevance_locomo", [], info))
    from bench.report import checks_of

    print(format_table("checks", checks_of(result)))
    print(f"\nresult: {write_result(result)}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
