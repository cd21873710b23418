"""``sessionquery import --format FORMAT PATH...``: agent session files onto the stream.

A path may be a file or a directory (searched for the format's files); with no path,
Claude Code and Codex imports read the agent's own folder (``$CLAUDE_CONFIG_DIR/projects``
or ``~/.claude/projects``; ``$CODEX_HOME/sessions`` or ``~/.codex/sessions``). A line
that cannot be imported is reported with its file and number and the rest imports; the
exit code is then 1. Record types a format module does not know are skipped and counted.

Claude Code and Codex never write a session's end: a session whose last event is older
than ``--idle-seconds`` (default 1800, as ``watch``) gets its ``session/end`` at that
event's time, with the next seq, so importing the file again publishes the same end (the
stream and the index keep it once). Aider's events carry their session's start time, so
its last session is ended only when the file, too, is older than that.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Final, TextIO

from contracts.limits import MAX_EVENT_BYTES, event_size_limit
from contracts.subjects import Subjects
from worker.importers.base import Converter, Outgoing, SpawnLinks, Tally
from worker.importers.detect import FORMATS
from worker.importers.progress import Progress
from worker.importers.publish import DEFAULT_WINDOW, ImportFailed, Publisher
from worker.transport.connection import NatsOptions

# A session whose last event is older than this is over (import), as is a file that has
# not grown for this long (watch).
DEFAULT_IDLE_S: Final = 1800.0
EXIT_OK: Final = 0
EXIT_INVALID_LINES: Final = 1
EXIT_FAILED: Final = 2


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config_flags import add_flags, add_subject_arguments
    from worker.transport.flags import add_nats_arguments

    parser.add_argument(
        "paths", type=Path, nargs="*", metavar="PATH",
        help="files or directories (default: the agent's own session folder)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=[*FORMATS, "auto"], default="events",
        help="source format (default events: our own JSONL; auto: detect per file)",
    )  # fmt: skip
    parser.add_argument(
        "--window", type=int, default=DEFAULT_WINDOW,
        help=f"publishes in flight before awaiting their acks (default {DEFAULT_WINDOW})",
    )  # fmt: skip
    add_flags(parser, ("max_event_bytes",))
    parser.add_argument(
        "--timezone", default=None,
        help="zone of times written without one (Aider); default: this machine's local zone",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument(
        "--idle-seconds", type=float, default=DEFAULT_IDLE_S,
        help="end the open sessions whose last event (import) or file (watch) is older than"
        f" this (default {DEFAULT_IDLE_S:.0f}; inf: never)",
    )  # fmt: skip
    add_subject_arguments(parser)
    add_nats_arguments(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)


@dataclass
class ImportReport:
    published: int = 0
    duplicates: int = 0
    files: int = 0
    tally: Tally = field(default_factory=Tally)
    # Published, but the worker will dead-letter them (a session's order broken: no
    # session/start before it, a gap, an event after session/end), with the first reasons.
    will_dead_letter: int = 0
    dead_letter_reasons: tuple[str, ...] = ()

    @property
    def invalid(self) -> int:
        return len(self.tally.problems)


def resolve_paths(args: argparse.Namespace) -> list[Path] | str:
    """The paths to read, or the message to print when they cannot be."""
    from worker.importers.detect import default_paths

    paths = list(args.paths) or default_paths(args.format)
    if not paths:
        return f"no path given (the {args.format} format has no default folder)"
    missing = [p for p in paths if not p.exists()]
    if missing:
        return f"no such file: {missing[0]}"
    return paths


def assumed_zone(name: str | None) -> tzinfo | str | None:
    if name is None:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name!r}"


def run(args: argparse.Namespace) -> int:
    from worker.config_flags import config_from_args
    from worker.logs import configure_logging
    from worker.transport.flags import options_from_args

    configure_logging()
    config = config_from_args(args)
    if args.window < 1:
        print("import: --window must be at least 1", file=sys.stderr)
        return EXIT_FAILED
    paths = resolve_paths(args)
    zone = assumed_zone(args.timezone)
    for failure in (paths, zone):
        if isinstance(failure, str):
            print(f"import: {failure}", file=sys.stderr)
            return EXIT_FAILED
    assert isinstance(paths, list) and not isinstance(zone, str)
    try:
        report = asyncio.run(
            import_paths(
                paths, fmt=args.format, options=options_from_args(args),
                subjects=config.subjects, window=args.window,
                max_event_bytes=config.max_event_bytes, assume_tz=zone,
                progress=None if args.quiet else sys.stderr, idle_s=args.idle_seconds,
            )
        )  # fmt: skip
    except ImportFailed as exc:
        print(f"import: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print_summary(report, sys.stderr)
    return EXIT_INVALID_LINES if report.invalid or report.will_dead_letter else EXIT_OK


def print_summary(report: ImportReport, out: TextIO) -> None:
    print(
        f"published {report.published} events ({report.duplicates} already in the stream),"
        f" {report.invalid} invalid lines skipped",
        file=out,
    )
    if report.tally.skipped:
        parts = ", ".join(f"{what} {n}" for what, n in sorted(report.tally.skipped.items()))
        print(f"skipped records: {parts}", file=out)
    if report.will_dead_letter:
        print(dead_letter_line(report.will_dead_letter, report.dead_letter_reasons), file=out)


def dead_letter_line(count: int, reasons: tuple[str, ...] | list[str]) -> str:
    return (
        f"of those, the worker will dead-letter {count}"
        f" (see sessionquery deadletters): {'; '.join(reasons[:5])}"
    )


async def import_paths(
    paths: list[Path], *, fmt: str, options: NatsOptions, subjects: Subjects,
    window: int = DEFAULT_WINDOW, max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None, progress: TextIO | None = None, errors: TextIO | None = None,
    idle_s: float = DEFAULT_IDLE_S,
) -> ImportReport:  # fmt: skip
    from worker.importers.detect import expand
    from worker.importers.publish import connect_publisher

    files = list(expand(paths, fmt))
    sizes = await asyncio.to_thread(lambda: [f.stat().st_size for f in files])
    nc = await connect_publisher(options, name="sessionquery-import")
    bar = Progress(progress, total_bytes=sum(sizes), total_files=len(files))
    try:
        publisher = Publisher(nc, subjects, window=window)
        await publisher.prepare()
        limit = event_size_limit(publisher.max_payload, max_event_bytes)
        run = _ImportRun(publisher, bar, errors or sys.stderr, limit, assume_tz,
                         quiet_before=_quiet_before(idle_s))  # fmt: skip
        for file, size in zip(files, sizes, strict=True):
            await run.file(file, fmt)
            run.done_bytes += size
        await publisher.settle()
        run.report.published, run.report.duplicates = publisher.published, publisher.duplicates
        run.report.will_dead_letter = publisher.order.refused
        run.report.dead_letter_reasons = tuple(publisher.order.reasons)
        run.show(0, final=True)
    finally:
        bar.clear()
        await nc.close()
    return run.report


def _quiet_before(idle_s: float) -> datetime:
    """The time before which a session's last event means it is over: the same rule as
    ``watch``'s idle files, read from the file's own times."""
    now = datetime.now(UTC)
    try:
        return now - timedelta(seconds=idle_s)
    except OverflowError:  # inf, or further back than datetime reaches: nothing is over
        return datetime.min.replace(tzinfo=UTC)


@dataclass
class _ImportRun:
    publisher: Publisher
    bar: Progress
    errors: TextIO
    limit: int
    assume_tz: tzinfo | None
    quiet_before: datetime
    done_bytes: int = 0
    pending_problems: int = 0  # problems of the file being read, not yet in the report
    links: SpawnLinks = field(default_factory=dict)
    report: ImportReport = field(default_factory=ImportReport)

    async def file(self, path: Path, fmt: str) -> None:
        from worker.importers import make_converter
        from worker.importers.base import Problem
        from worker.importers.detect import detect
        from worker.importers.pipeline import all_lines

        chosen = detect(path) if fmt == "auto" else fmt
        if chosen is None:
            problem = Problem(str(path), 0, "cannot tell its format; not imported")
            self.report.tally.problems.append(problem)
            self.bar.clear()
            print(problem, file=self.errors)
            return
        converter = make_converter(chosen, path, max_event_bytes=self.limit,
                                   assume_tz=self.assume_tz, links=self.links)  # fmt: skip
        last = 0
        try:
            with path.open("rb") as fh:
                for line in all_lines(fh):
                    last = line.number
                    outs = converter.feed(line.number, line.data)
                    await self.send(converter, outs, path, last)
                    self.show(line.end)
        except OSError as exc:  # unreadable, or gone since the listing: the rest goes on
            converter.tally.problems.append(Problem(str(path), last, f"cannot read: {exc}"))
        await self.send(converter, converter.finish(), path, last)
        await self.send(converter, converter.end_quiet(self.quiet_before), path, last)
        self.report.tally.merge(converter.tally)
        self.report.files += 1
        self.pending_problems = 0

    async def send(
        self, converter: Converter, outs: list[Outgoing], path: Path, line_no: int
    ) -> None:
        from worker.importers.pipeline import checked

        for out in checked(converter, outs, str(path), line_no, self.limit):
            await self.publisher.send(out)
        for problem in converter.tally.problems[self.pending_problems :]:
            self.bar.clear()
            print(problem, file=self.errors)
        self.pending_problems = len(converter.tally.problems)

    def show(self, file_bytes: int, *, final: bool = False) -> None:
        p = self.publisher
        self.bar.show(
            files=self.report.files, events=p.published + p.in_flight,
            duplicates=p.duplicates, problems=self.report.invalid + self.pending_problems,
            done_bytes=self.done_bytes + file_bytes, final=final,
        )  # fmt: skip
