"""``sessionquery purge``: remove sessions from the index (bumps the epoch).

The command-line glue lives in the runtime (configuration defaults, logging, output); the
purge itself is the store's ``SqliteIndexWriter.purge``.

``--session ID`` (repeatable) or ``--older-than DURATION`` (sessions whose latest event is
older than now minus DURATION). Runs beside a live worker: it opens its own writer
connection, and SQLite's write lock (with a busy timeout) keeps the two writers apart.

Purging only edits the index: the events stay in the SESSIONS stream, so an index rebuilt
from the stream would hold them again.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path
from typing import Final

from worker.failures import RuntimeFailure

_UNITS_MS: Final = {"w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}
_DURATION: Final = re.compile(r"(\d+)([wdhms])")


class InvalidDuration(RuntimeFailure, ValueError):
    pass


def parse_duration_ms(text: str) -> int:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or combinations such as ``1d12h``."""
    value = text.strip()
    parts = _DURATION.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise InvalidDuration(
            f"invalid duration {text!r}: use a whole number followed by a unit"
            " (w, d, h, m or s), e.g. 30d, 12h, 90m, 1d12h"
        )
    return sum(int(n) * _UNITS_MS[u] for n, u in parts)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config import WorkerConfig

    parser.add_argument(
        "--db",
        type=Path,
        default=WorkerConfig.from_env().db_path,
        help="the index file (env SESSIONQUERY_DB_PATH)",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--session",
        action="append",
        metavar="ID",
        dest="sessions",
        help="a session to remove (repeatable)",
    )
    which.add_argument(
        "--older-than",
        metavar="DURATION",
        help="remove sessions whose latest event is older than this, e.g. 30d, 12h, 90m",
    )


def run(args: argparse.Namespace) -> int:
    from worker.logs import configure_logging

    configure_logging()  # log lines to stderr; stdout carries only the result
    older_than_ms: int | None = None
    if args.older_than is not None:
        try:
            older_than_ms = int(time.time() * 1000) - parse_duration_ms(args.older_than)
        except InvalidDuration as exc:
            print(f"purge: {exc}", file=sys.stderr)
            return 2
    db: Path = args.db
    if not db.is_file():
        # Never create an empty index as a side effect of a purge.
        print(f"purge: no index at {db}", file=sys.stderr)
        return 2
    removed = asyncio.run(_purge(db, tuple(args.sessions or ()), older_than_ms))
    noun = "session" if removed == 1 else "sessions"
    print(f"removed {removed} {noun} from {db}")
    return 0


async def _purge(db: Path, session_ids: tuple[str, ...], older_than_ms: int | None) -> int:
    from worker.store.index.writer import SqliteIndexWriter

    async with await SqliteIndexWriter.open(db) as writer:
        return await writer.purge(session_ids=session_ids, older_than_ms=older_than_ms)
