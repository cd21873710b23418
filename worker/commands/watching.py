"""``sessionquery watch --format FORMAT PATH...``: import, then follow the files as they grow.

The command: its flags, what to read, the exit code. How files are followed, resumed and
ended is ``worker.importers.watch``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import TextIO

from contracts.subjects import Subjects
from worker.commands.importing import EXIT_FAILED, EXIT_OK, add_common_arguments, what_to_read
from worker.importers.publish import ImportFailed
from worker.importers.run import Job
from worker.importers.skips import unknown_text
from worker.importers.summary import dead_letter_line
from worker.importers.watch import (
    DEFAULT_BUCKET,
    DEFAULT_CHUNK_LINES,
    DEFAULT_POLL_S,
    Watcher,
    WatchSettings,
)
from worker.transport.connection import NatsOptions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument(
        "--poll-interval", type=float, default=DEFAULT_POLL_S,
        help=f"seconds between looks at the files (default {DEFAULT_POLL_S})",
    )  # fmt: skip
    parser.add_argument(
        "--state-bucket", default=DEFAULT_BUCKET,
        help=f"JetStream KV bucket holding each file's position (default {DEFAULT_BUCKET})",
    )  # fmt: skip
    parser.add_argument(
        "--chunk-lines", type=int, default=DEFAULT_CHUNK_LINES,
        help="lines published between two stores of a file's position",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from worker.config_flags import config_from_args, subjects_from_args
    from worker.logs import configure_logging
    from worker.transport.flags import options_from_args

    configure_logging()
    read = what_to_read(args, "watch")
    if read is None:
        return EXIT_FAILED
    jobs, zone = read
    config = config_from_args(args)
    max_event_bytes = config.max_event_bytes
    settings = WatchSettings(
        idle_s=args.idle_seconds, poll_s=args.poll_interval,
        bucket=args.state_bucket, chunk_lines=max(1, args.chunk_lines),
        window=max(1, args.window), max_event_bytes=max_event_bytes, assume_tz=zone,
        imports_bucket=args.imports_bucket or None,
        redaction=config.redaction_spec() if args.redact else None,
    )  # fmt: skip
    progress = None if args.quiet else sys.stderr
    try:
        asyncio.run(_main(jobs, settings, options_from_args(args), subjects_from_args(args),
                          progress))  # fmt: skip
    except ImportFailed as exc:
        print(f"watch: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def _main(
    jobs: list[Job], settings: WatchSettings, options: NatsOptions, subjects: Subjects,
    progress: TextIO | None,
) -> None:  # fmt: skip
    from worker.importers.publish import connect_publisher

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # A follower, like the worker: --connect-attempts as given (0: until stopped).
    nc = await connect_publisher(
        options, name="sessionquery-watch", attempts=options.connect_attempts, stop=stop
    )
    try:
        watcher = Watcher(nc, subjects, jobs, settings, progress=progress, errors=sys.stderr)
        await watcher.run(stop)
    finally:
        await nc.close()
    tally, order = watcher.tally, watcher.publisher.order
    print(
        f"watch stopped: published {watcher.publisher.published} events"
        f" ({watcher.publisher.duplicates} already in the stream) from {len(watcher.files)}"
        f" files, {len(tally.problems)} invalid lines skipped",
        file=sys.stderr,
    )
    if tally.unknown:
        print(unknown_text(tally.unknown), file=sys.stderr)
    if order.refused:
        print(dead_letter_line(order.refused, order.reasons), file=sys.stderr)
