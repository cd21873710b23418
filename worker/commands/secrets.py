"""``sessionquery secrets``: the credentials the worker redacted, per workspace and kind:
how many markers its index holds and in which sessions, read from the index file. Never a
value: the index holds none, only ``[redacted:<kind>]`` markers (docs/security.md)."""

from __future__ import annotations

import argparse
import sys

import orjson

from worker.commands.status import EXIT_OK, EXIT_PROBLEM, add_arguments, index_file_of
from worker.store.files import file_reads

__all__ = ["add_arguments", "run"]

# Sessions named per workspace and kind in the text output (--json lists them all).
SHOWN_SESSIONS = 5


def run(args: argparse.Namespace) -> int:
    db = index_file_of(args)
    if not db.exists():
        print(f"secrets: no index at {db}", file=sys.stderr)
        return EXIT_PROBLEM
    found = file_reads.redactions(db)
    if args.json:
        doc = [
            {
                "workspace": cwd,
                "kinds": [
                    {"kind": kind, "redacted": n, "sessions": sessions}
                    for kind, (n, sessions) in kinds.items()
                ],
            }
            for cwd, kinds in sorted(found.items(), key=lambda item: item[0] or "")
        ]
        sys.stdout.write(orjson.dumps({"workspaces": doc}).decode() + "\n")
        return EXIT_OK
    if not found:
        print("no redacted credentials in this index", file=sys.stderr)
        return EXIT_OK
    for cwd, kinds in sorted(found.items(), key=lambda item: item[0] or ""):
        total = sum(n for n, _ in kinds.values())
        print(f"{cwd or '(no cwd)'}: {total} redacted")
        for kind, (n, sessions) in kinds.items():
            shown = ", ".join(sessions[:SHOWN_SESSIONS])
            more = (
                f" and {len(sessions) - SHOWN_SESSIONS} more"
                if len(sessions) > SHOWN_SESSIONS
                else ""
            )
            print(f"  {kind:<28} {n:>6}  in {len(sessions)} sessions: {shown}{more}")
    return EXIT_OK
