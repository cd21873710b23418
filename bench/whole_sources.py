"""What ``watch`` pays to look again at a busy OpenCode database: one session gains a turn
among many quiet ones.

Measured: reading the database with the converter's session cache (``SessionCache``: only
the changed session is decoded), against two floors from the same run on the same file:
the full reading it replaces (every session decoded), and the cache's own stamp query
(one ``GROUP BY`` per table, no JSON), the least any reading must do. The database is
built by the OpenCode generator the importer tests use (``tests/importers/gen_opencode``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.report import Check, checks_of, format_table, result_dict, write_result
from tests.importers import gen_opencode
from worker.importers import opencode
from worker.importers.readonly_db import read_only
from worker.importers.source_reading import SessionCache

INCREMENTAL_VS_FULL = 0.25
INCREMENTAL_VS_STAMPS = 3.0


def build(path: Path, sessions: int, turns: int) -> gen_opencode.History:
    history = gen_opencode.History()
    for n in range(sessions):
        sid = f"ses_{n:024d}"
        history.session(sid, f"Session {n}")
        for turn in range(turns):
            _turn(history, sid, f"question {turn} about module {n}")
    gen_opencode.write_database(path, history)
    return history


def _turn(history: gen_opencode.History, sid: str, question: str) -> None:
    user = history.message(sid, "user", agent="build")
    history.text(sid, user, question)
    answer = history.message(sid, "assistant")
    history.tool(sid, answer, "grep", {"pattern": "round("}, "cart.py:41: round(x) " * 20)
    history.text(sid, answer, "The totals are rounded once per cart. " * 10)


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(sessions: int = 1000, turns: int = 20, repeats: int = 5,
        work_dir: Path | None = None) -> dict[str, Any]:  # fmt: skip
    with tempfile.TemporaryDirectory(dir=work_dir) as scratch:
        db = Path(scratch) / "opencode.db"
        history = build(db, sessions, turns)
        full = median_seconds(lambda: opencode.read_database(db), repeats)

        def stamps() -> None:
            with read_only(db) as conn:
                opencode.session_stamps(conn)

        floor = median_seconds(stamps, repeats)
        cache = SessionCache()
        opencode.read_database(db, cache)
        busy = history.sessions[sessions // 2]["id"]
        times = []
        for n in range(repeats):
            _turn(history, busy, f"one more question {n}")
            gen_opencode.write_database(db, history)
            start = time.perf_counter()
            reading = opencode.read_database(db, cache)
            times.append(time.perf_counter() - start)
        incremental = statistics.median(times)
        items = sum(len(s.items) for s in reading.sessions)
        size = db.stat().st_size
    checks = [
        Check("cached re-read vs full read", incremental, full, "s", "max", INCREMENTAL_VS_FULL),
        Check("cached re-read vs stamp query", incremental, floor, "s", "max",
              INCREMENTAL_VS_STAMPS),
    ]  # fmt: skip
    measurements = {
        "full_read_s": full, "stamp_query_s": floor, "cached_reread_s": incremental,
        "items": items, "database_bytes": size,
    }  # fmt: skip
    params = {"sessions": sessions, "turns": turns, "repeats": repeats}
    return result_dict("whole_sources", params=params, checks=checks, measurements=measurements)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.whole_sources", description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    result = run(args.sessions, args.turns, args.repeats)
    m = result["measurements"]
    info = {"items": m["items"], "database MiB": m["database_bytes"] / 2**20}
    title = f"whole sources: OpenCode database, {args.sessions} sessions x {args.turns} turns"
    print(format_table(title, checks_of(result), info))
    print(f"\nresult: {write_result(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
