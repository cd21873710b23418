"""``sessionquery watch --format FORMAT PATH...``: import, then follow the files as they grow.

What exists is imported first (with a progress line: files, events, rate, ETA). Then the
paths are polled: appended lines and new files are imported as the agent writes them; a
partial last line is held until its newline arrives.

Position: after the events of a chunk of lines are acknowledged by the stream, the file's
offset is stored in a JetStream KV bucket (key: a digest of the file's absolute path), so
a restart on any machine watching the same files resumes there. On restart a file is read
again up to the stored offset without publishing, to rebuild the converter's state
(numbering, tool-call citations); the lines after it are published. A crash between a
publish and the offset's store re-publishes at most one chunk, with the same
``Nats-Msg-Id`` values: the stream's duplicate window drops them and, past it, the index
stores each (session_id, seq) once.

A file that stops growing for ``--idle-seconds`` gets a ``session/end`` for each of its
sessions the format left open (Claude Code and Codex never write an end; Aider ends a
session when the next starts). SIGTERM or SIGINT stops after the chunk in flight is
acknowledged and its offset stored.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any, Final, TextIO

import orjson

from contracts.limits import MAX_EVENT_BYTES, event_size_limit
from contracts.subjects import Subjects
from worker.commands.importing import (
    DEFAULT_IDLE_S,
    EXIT_FAILED,
    EXIT_OK,
    add_common_arguments,
    dead_letter_line,
)
from worker.importers.base import Converter, Outgoing, SpawnLinks, Tally
from worker.importers.publish import ImportFailed, Publisher
from worker.transport.connection import NatsOptions

DEFAULT_BUCKET: Final = "sessionquery-watch"
DEFAULT_POLL_S: Final = 1.0
DEFAULT_CHUNK_LINES: Final = 500


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
    from worker.commands.importing import assumed_zone, resolve_paths
    from worker.config_flags import config_from_args, subjects_from_args
    from worker.logs import configure_logging
    from worker.transport.flags import options_from_args

    configure_logging()
    paths = resolve_paths(args)
    zone = assumed_zone(args.timezone)
    for failure in (paths, zone):
        if isinstance(failure, str):
            print(f"watch: {failure}", file=sys.stderr)
            return EXIT_FAILED
    assert isinstance(paths, list) and not isinstance(zone, str)
    max_event_bytes = config_from_args(args).max_event_bytes
    settings = WatchSettings(
        fmt=args.format, idle_s=args.idle_seconds, poll_s=args.poll_interval,
        bucket=args.state_bucket, chunk_lines=max(1, args.chunk_lines),
        window=max(1, args.window), max_event_bytes=max_event_bytes, assume_tz=zone,
    )  # fmt: skip
    progress = None if args.quiet else sys.stderr
    try:
        asyncio.run(_main(paths, settings, options_from_args(args), subjects_from_args(args),
                          progress))  # fmt: skip
    except ImportFailed as exc:
        print(f"watch: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def _main(
    paths: list[Path], settings: WatchSettings, options: NatsOptions, subjects: Subjects,
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
        watcher = Watcher(nc, subjects, paths, settings, progress=progress, errors=sys.stderr)
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
    if order.refused:
        print(dead_letter_line(order.refused, order.reasons), file=sys.stderr)


@dataclass(frozen=True)
class WatchSettings:
    fmt: str
    idle_s: float = DEFAULT_IDLE_S
    poll_s: float = DEFAULT_POLL_S
    bucket: str = DEFAULT_BUCKET
    chunk_lines: int = DEFAULT_CHUNK_LINES
    window: int = 512
    max_event_bytes: int = MAX_EVENT_BYTES
    assume_tz: tzinfo | None = None


@dataclass
class Tracked:
    """One followed file: its converter and how far it has been published."""

    path: Path
    fmt: str
    key: str
    converter: Converter
    offset: int = 0
    line: int = 0
    idle_marks: list[int] = field(default_factory=list)  # offsets where idle() was applied
    reported: int = 0  # problems already printed

    def state(self) -> bytes:
        return orjson.dumps(
            {"path": str(self.path), "format": self.fmt, "offset": self.offset,
             "line": self.line, "idle_marks": self.idle_marks}
        )  # fmt: skip


def state_key(path: Path) -> str:
    return "f-" + hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:40]


class Watcher:
    def __init__(
        self, nc: Any, subjects: Subjects, paths: list[Path], settings: WatchSettings, *,
        progress: TextIO | None = None, errors: TextIO | None = None,
    ) -> None:  # fmt: skip
        self.nc = nc
        self.paths = paths
        self.settings = settings
        self.publisher = Publisher(nc, subjects, window=settings.window)
        self.files: dict[Path, Tracked] = {}
        self.progress = progress
        self.errors = errors or sys.stderr
        self.tally = Tally()
        self.limit = settings.max_event_bytes
        self.kv: Any = None
        self.links: SpawnLinks = {}

    async def run(self, stop: asyncio.Event) -> None:
        import nats.errors

        try:
            await self.publisher.prepare()
            self.limit = event_size_limit(self.publisher.max_payload, self.settings.max_event_bytes)
            self.kv = await self._bucket()
            await self._catch_up(stop)
            while not stop.is_set():
                await self._poll(stop)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.poll_s)
        except nats.errors.Error as exc:
            raise ImportFailed(f"NATS failed: {exc!r}") from exc
        finally:
            for tracked in self.files.values():
                self.tally.merge(tracked.converter.tally)

    async def _bucket(self) -> Any:
        """The position bucket: the existing one as it is, else a new one."""
        import nats.js.errors

        js = self.nc.jetstream()
        try:
            return await js.key_value(self.settings.bucket)
        except nats.js.errors.BucketNotFoundError:
            return await js.create_key_value(bucket=self.settings.bucket, history=1)

    async def _catch_up(self, stop: asyncio.Event) -> None:
        """Everything that exists now, with a progress line."""
        from worker.importers.progress import Progress

        files = self._discover()
        sizes = [f.stat().st_size for f in files]
        bar = Progress(self.progress, total_bytes=sum(sizes), total_files=len(files))
        done = 0
        for index, (path, size) in enumerate(zip(files, sizes, strict=True)):
            if stop.is_set():
                break
            tracked = await self._open(path)
            if tracked is None:
                continue
            while await self._pump(tracked, stop):
                p = self.publisher
                bar.show(files=index, events=p.published, duplicates=p.duplicates,
                         problems=self._problems(), done_bytes=done + tracked.offset)  # fmt: skip
            done += size
        p = self.publisher
        bar.show(files=len(files), events=p.published, duplicates=p.duplicates,
                 problems=self._problems(), done_bytes=done, final=True)  # fmt: skip

    def _problems(self) -> int:
        return sum(len(t.converter.tally.problems) for t in self.files.values())

    async def _poll(self, stop: asyncio.Event) -> None:
        for path in self._discover():
            if stop.is_set():
                return
            try:
                await self._follow(path, stop)
            except FileNotFoundError:
                self.files.pop(path, None)  # removed between the listing and the read

    async def _follow(self, path: Path, stop: asyncio.Event) -> None:
        tracked = self.files.get(path) or await self._open(path)
        if tracked is None:
            return
        grew = False
        while await self._pump(tracked, stop):
            grew = True
        # Quiet by the file's own clock: a transcript untouched for days ends at once.
        stat = await asyncio.to_thread(path.stat)
        if not grew and time.time() - stat.st_mtime >= self.settings.idle_s:
            await self._idle(tracked)

    def _discover(self) -> list[Path]:
        from worker.importers.detect import expand

        return list(expand(self.paths, self.settings.fmt))

    async def _open(self, path: Path) -> Tracked | None:
        """Start following ``path``: its stored position, and its converter brought there."""
        from worker.importers import make_converter
        from worker.importers.detect import detect

        fmt = detect(path) if self.settings.fmt == "auto" else self.settings.fmt
        if fmt is None:
            return None  # not (yet) recognisable: looked at again on the next poll
        converter = make_converter(fmt, path, max_event_bytes=self.limit,
                                   assume_tz=self.settings.assume_tz, links=self.links)  # fmt: skip
        tracked = Tracked(path, fmt, state_key(path), converter)
        stored = await self._load(tracked.key)
        if stored and stored.get("format") == fmt:
            await asyncio.to_thread(self._replay, tracked, int(stored.get("offset", 0)),
                                    list(stored.get("idle_marks", [])))  # fmt: skip
        self.files[path] = tracked
        return tracked

    async def _load(self, key: str) -> dict[str, Any] | None:
        import nats.js.errors

        try:
            entry = await self.kv.get(key)
        except nats.js.errors.KeyNotFoundError:
            return None
        value = orjson.loads(entry.value) if entry.value else None
        return value if isinstance(value, dict) else None

    def _replay(self, tracked: Tracked, offset: int, marks: list[int]) -> None:
        """Feed the lines already published, publishing nothing, to rebuild the state."""
        from worker.importers.pipeline import complete_lines

        if tracked.path.stat().st_size < offset:
            print(f"watch: {tracked.path} shrank; reading it again from the start",
                  file=self.errors)  # fmt: skip
            return
        pending = sorted(marks)
        with tracked.path.open("rb") as fh:
            for line in complete_lines(fh):
                if line.end > offset:
                    break
                while pending and pending[0] < line.end:
                    tracked.converter.idle()
                    pending.pop(0)
                tracked.converter.feed(line.number, line.data)
                tracked.offset, tracked.line = line.end, line.number
        for _ in pending:
            tracked.converter.idle()
        tracked.idle_marks = sorted(marks)
        tracked.reported = len(tracked.converter.tally.problems)

    async def _pump(self, tracked: Tracked, stop: asyncio.Event) -> bool:
        """Publish one chunk of new complete lines; True when there was one."""
        from worker.importers.pipeline import checked, complete_lines

        if stop.is_set():
            return False
        with tracked.path.open("rb") as fh:
            chunk = list(itertools.islice(
                complete_lines(fh, offset=tracked.offset, number=tracked.line),
                self.settings.chunk_lines,
            ))  # fmt: skip
        if not chunk:
            return False
        for line in chunk:
            outs = tracked.converter.feed(line.number, line.data)
            await self._send(tracked, checked(tracked.converter, outs, str(tracked.path),
                                              line.number, self.limit))  # fmt: skip
        tracked.offset, tracked.line = chunk[-1].end, chunk[-1].number
        await self._commit(tracked)
        return True

    async def _idle(self, tracked: Tracked) -> None:
        if tracked.idle_marks and tracked.idle_marks[-1] == tracked.offset:
            return  # already applied at this position
        from worker.importers.pipeline import checked

        outs = tracked.converter.idle()
        await self._send(tracked, checked(tracked.converter, outs, str(tracked.path),
                                          tracked.line, self.limit))  # fmt: skip
        tracked.idle_marks.append(tracked.offset)
        await self._commit(tracked)

    async def _send(self, tracked: Tracked, outs: list[Outgoing]) -> None:
        for out in outs:
            refused = await self.publisher.send(out)
            if refused is not None:  # said as it happens: a watch may run for days
                print(f"watch: {tracked.path}: the worker will dead-letter it: {refused}",
                      file=self.errors)  # fmt: skip
        problems = tracked.converter.tally.problems
        for problem in problems[tracked.reported :]:
            print(problem, file=self.errors)
        tracked.reported = len(problems)

    async def _commit(self, tracked: Tracked) -> None:
        """The chunk's events acknowledged first, then its position stored."""
        await self.publisher.settle()
        await self.kv.put(tracked.key, tracked.state())
