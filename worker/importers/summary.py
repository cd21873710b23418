"""The lines an import run ends with: the summary (per agent or format, the totals,
skipped and unknown kinds, sessions without a cwd, what the worker will dead-letter) and
``--dry-run``'s per-file table."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from worker.importers.base import Tally
from worker.importers.skips import kinds_text, unknown_text

if TYPE_CHECKING:
    from worker.importers.run import ImportReport


def print_summary(report: ImportReport, out: TextIO) -> None:
    for agent in report.agents:
        print(agent.line(), file=out)
    if not report.agents and len(report.formats) > 1:  # --format auto over paths
        for fmt, figures in sorted(report.formats.items()):
            print(figures.line(fmt), file=out)
    if report.dry_run:
        print(
            f"dry run: {report.published} events would be published from {report.files}"
            f" files (nothing was), {report.invalid} invalid lines skipped",
            file=out,
        )
    else:
        print(
            f"published {report.published} events ({report.duplicates} already in the stream),"
            f" {report.invalid} invalid lines skipped",
            file=out,
        )
    if report.tally.skipped:
        print(f"skipped records: {skipped_text(report.tally)}", file=out)
    if report.tally.unknown:
        print(unknown_text(report.tally.unknown), file=out)
    for line in report.unrecognised:
        print(line, file=out)
    if report.redacted:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.redacted.items()))
        print(f"credentials redacted before publishing: {report.redacted.total()} ({kinds})",
              file=out)  # fmt: skip
    if report.no_cwd_sessions:
        print(f"sessions without a cwd: {report.no_cwd_sessions} (the no-cwd workspace,"
              " where each session sees only itself)", file=out)  # fmt: skip
    if report.uncited_results:
        print(f"tool results citing no call: {report.uncited_results} (their call is in no"
              " source read: a transcript left out, or one the agent never wrote)",
              file=out)  # fmt: skip
    if report.left_open:
        print(left_open_line(report.left_open, report.idle_s), file=out)
    if report.will_dead_letter:
        print(dead_letter_line(report.will_dead_letter, report.dead_letter_reasons), file=out)


def print_files(report: ImportReport, out: TextIO) -> None:
    """``--dry-run``'s table: one block per source read, then the totals."""
    for file in report.read:
        print("\n".join(file.lines()), file=out)
    by_type: Counter[str] = Counter()
    for file in report.read:
        by_type.update(file.events)
    total = sum(by_type.values())
    sessions = sum(file.sessions for file in report.read)
    print(f"total: {len(report.read)} files, sessions {sessions}, events {total}"
          + (f": {kinds_text(by_type)}" if total else ""), file=out)  # fmt: skip
    if report.tally.unknown:
        print(f"total {unknown_text(report.tally.unknown)}", file=out)
    refused = sum(file.refused for file in report.read)
    looked_up = sum(file.looked_up for file in report.read)
    print(f"total would be refused: {refused}; would be looked up in the stream:"
          f" {looked_up} sessions", file=out)  # fmt: skip


def skipped_text(tally: Tally) -> str:
    return kinds_text(tally.skipped)


def dead_letter_line(count: int, reasons: tuple[str, ...] | list[str]) -> str:
    return (
        f"of those, the worker will dead-letter {count}"
        f" (see sessionquery deadletters): {'; '.join(reasons[:5])}"
    )


def left_open_line(count: int, idle_s: float) -> str:
    """Sessions published without their end, and why: each looks active."""
    if idle_s == float("inf"):
        return f"{count} sessions left open (--idle-seconds inf: import ends none)"
    within = f"{idle_s / 60:g} min" if idle_s >= 60 else f"{idle_s:g} s"
    return (
        f"{count} sessions look active (last event, or for a source that records no times"
        f" the file's modification, within {within}; a freshly copied folder looks active):"
        " their titles and ends wait; run again later, or with --idle-seconds 0 to end them now"
    )
