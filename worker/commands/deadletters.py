"""``sessionquery deadletters``: the events the index refused, with their reasons, read from
the index file (``--follow`` keeps printing new ones)."""

from __future__ import annotations

import argparse
import sys
import time

from worker.commands.status import EXIT_OK, EXIT_PROBLEM, add_arguments, index_file_of
from worker.store.files import file_reads

__all__ = ["add_arguments", "run"]


def run(args: argparse.Namespace) -> int:
    """The last ``--limit`` dead letters, oldest first; ``--follow`` then prints new ones."""
    db = index_file_of(args)
    if not db.exists():
        print(f"deadletters: no index at {db}", file=sys.stderr)
        return EXIT_PROBLEM
    rows = file_reads.last_dead_letters(db, args.limit)
    if not rows and not args.follow:
        print("no dead letters", file=sys.stderr)
    after = _print_dead_letters(rows, 0)
    while args.follow:
        try:
            time.sleep(1.0)
        except KeyboardInterrupt:
            break
        rows = file_reads.dead_letters_after(db, after)
        after = _print_dead_letters(rows, after)
    return EXIT_OK


def _print_dead_letters(rows: list[tuple[int, str, str]], after: int) -> int:
    for stream_seq, kind, reason in rows:
        print(f"seq {stream_seq}\t{kind}\t{reason}", flush=True)
        after = stream_seq
    return after
