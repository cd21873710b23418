"""``sessionquery import --format FORMAT PATH...``: agent session files onto the stream.

A path may be a file or a directory (searched for the format's files); with no path, a
format reads the agent's own folder (``importer.default_locations``), and with no path and
no ``--format`` (or ``--format auto``) every registered importer's folders that exist are
read, each with its own importer, and the summary says per agent what it found, imported
and skipped. A line that cannot be imported is reported with its file and number and the
rest imports; the exit code is then 1. Record types a format module does not know are
skipped and counted, apart from those it skips by design (``worker.importers.skips``): the
summary shows them loud, as format drift, and a source with nothing but such records is
reported as not of its format (exit code 1). ``--dry-run`` converts and checks without
NATS and prints a table per file; ``--output`` writes the events as our JSON Lines.

The run itself (converting, publishing, the report) is ``worker.importers.run``'s; this
module is the command: its flags, what to read, the exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from datetime import tzinfo
from pathlib import Path
from typing import Final

from worker.importers.detect import AUTO
from worker.importers.figures import DEFAULT_IMPORTS_BUCKET
from worker.importers.publish import DEFAULT_WINDOW, ImportFailed
from worker.importers.run import DEFAULT_IDLE_S, Job, import_jobs
from worker.importers.summary import print_files, print_summary

EXIT_OK: Final = 0


EXIT_INVALID_LINES: Final = 1


EXIT_FAILED: Final = 2


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config_flags import add_flags, add_subject_arguments
    from worker.importers import registry
    from worker.transport.flags import add_nats_arguments

    parser.add_argument(
        "paths", type=Path, nargs="*", metavar="PATH",
        help="files or directories (default: the agent's own session folder)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=[*registry.names(), AUTO], default=None,
        help="source format (default with paths: events, our own JSONL; without: auto);"
        " auto: detect per file, and with no path read every agent's own folders",
    )  # fmt: skip
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "formats:\n" + "\n".join(
        f"  {name:<14} {importer.help}" for name, importer in registry.importers().items()
    )
    parser.add_argument(
        "--window", type=int, default=DEFAULT_WINDOW,
        help=f"publishes in flight before awaiting their acks (default {DEFAULT_WINDOW})",
    )  # fmt: skip
    # The worker's own extra rules and allow-list, so both redact alike.
    add_flags(parser, ("max_event_bytes", "redaction_patterns", "redaction_allow"))
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
    parser.add_argument(
        "--imports-bucket", default=DEFAULT_IMPORTS_BUCKET,
        help="JetStream KV bucket where each format's last figures are kept for"
        f" sessionquery status (default {DEFAULT_IMPORTS_BUCKET}; empty: none)",
    )  # fmt: skip
    parser.add_argument(
        "--no-redact", dest="redact", action="store_false",
        help="publish the text as found: credentials are not replaced by [redacted:<kind>]"
        " (docs/security.md)",
    )  # fmt: skip
    add_subject_arguments(parser)
    add_nats_arguments(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument(
        "--dry-run", action="store_true",
        help="convert and check without connecting to NATS or publishing; print per file:"
        " sessions, events by type, records skipped (by design or unknown), what would be"
        " refused",
    )  # fmt: skip
    parser.add_argument(
        "--output", type=Path, default=None, metavar="FILE",
        help="also write the events to FILE as our JSON Lines (the events format: the"
        " bytes that would be published), with or without --dry-run",
    )  # fmt: skip


def resolve_jobs(args: argparse.Namespace) -> list[Job] | str:
    """What to read, or the message to print when it cannot be."""
    from worker.importers.detect import default_paths, discover

    paths = list(args.paths)
    if not paths and args.format in (None, AUTO):
        jobs = [Job(name, found, agent=name) for name, found in discover()]
        return jobs or "no path given, and no agent's session folder found on this machine"
    fmt = args.format or "events"
    paths = paths or default_paths(fmt)
    if not paths:
        return f"no path given (the {fmt} format has no default folder)"
    missing = [p for p in paths if not p.exists()]
    if missing:
        return f"no such file: {missing[0]}"
    return [Job(fmt, paths)]


def what_to_read(args: argparse.Namespace, command: str) -> tuple[list[Job], tzinfo | None] | None:
    """The jobs and the zone of times written without one; None, once the reason is said
    on stderr, when either cannot be had."""
    jobs = resolve_jobs(args)
    zone = assumed_zone(args.timezone)
    for failure in (jobs, zone):
        if isinstance(failure, str):
            print(f"{command}: {failure}", file=sys.stderr)
            return None
    assert isinstance(jobs, list) and not isinstance(zone, str)
    return jobs, zone


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
    read = what_to_read(args, "import")
    if read is None:
        return EXIT_FAILED
    jobs, zone = read
    try:
        with contextlib.ExitStack() as stack:
            output = stack.enter_context(args.output.open("wb")) if args.output else None
            report = asyncio.run(
                import_jobs(
                    jobs, options=options_from_args(args),
                    subjects=config.subjects, window=args.window,
                    max_event_bytes=config.max_event_bytes, assume_tz=zone,
                    progress=None if args.quiet else sys.stderr, idle_s=args.idle_seconds,
                    dry_run=args.dry_run, output=output,
                    imports_bucket=args.imports_bucket or None,
                    redaction=config.redaction_spec() if args.redact else None,
                )
            )  # fmt: skip
    except ImportFailed as exc:
        print(f"import: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # --output cannot be written
        print(f"import: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.dry_run:
        print_files(report, sys.stdout)
    print_summary(report, sys.stderr)
    failed = report.invalid or report.will_dead_letter or report.unrecognised
    return EXIT_INVALID_LINES if failed else EXIT_OK
