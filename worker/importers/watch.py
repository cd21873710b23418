"""Following session files as they grow, for ``sessionquery watch`` (``worker.commands.watching``).

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
stores each (session_id, seq) once. A whole source (a database, a session's folder) is
not replayed: its converter's resume token (``base.Resumable``) is stored with the
position and restored.

A file that stops growing for ``--idle-seconds`` gets a ``session/end`` for each of its
sessions the format left open (Claude Code and Codex never write an end; Aider ends a
session when the next starts). SIGTERM or SIGINT stops after the chunk in flight is
acknowledged and its offset stored.

Record kinds an importer does not know (``worker.importers.skips``) are said per file as
they appear, and each format's figures go to the imports bucket that ``status`` reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any, Final, TextIO

import orjson

from contracts.limits import MAX_EVENT_BYTES, event_size_limit
from contracts.redaction import REDACTION_ON, RedactionSpec
from contracts.subjects import Subjects
from worker.importers.base import Converter, Outgoing, Resumable, SpawnLinks, Tally
from worker.importers.figures import (
    DEFAULT_IMPORTS_BUCKET,
    FormatFigures,
    record_formats,
    unrecognised_source,
)
from worker.importers.plugin import ConvertOptions, Importer
from worker.importers.publish import ImportFailed, Publisher
from worker.importers.run import DEFAULT_IDLE_S, Job
from worker.importers.skips import unknown_text

DEFAULT_BUCKET: Final = "sessionquery-watch"
DEFAULT_POLL_S: Final = 1.0
DEFAULT_CHUNK_LINES: Final = 500
# The figures kept for ``status`` are written at most this often while they change.
FIGURES_EVERY_S: Final = 10.0


@dataclass(frozen=True)
class WatchSettings:
    idle_s: float = DEFAULT_IDLE_S
    poll_s: float = DEFAULT_POLL_S
    bucket: str = DEFAULT_BUCKET
    chunk_lines: int = DEFAULT_CHUNK_LINES
    window: int = 512
    max_event_bytes: int = MAX_EVENT_BYTES
    assume_tz: tzinfo | None = None
    imports_bucket: str | None = DEFAULT_IMPORTS_BUCKET  # each format's figures, for status
    # Credentials replaced before publishing with these rules; None: not (--no-redact).
    redaction: RedactionSpec | None = REDACTION_ON


@dataclass
class Tracked:
    """One followed file: its converter and how far it has been published."""

    path: Path
    fmt: str
    importer: Importer
    key: str
    converter: Converter
    offset: int = 0
    line: int = 0
    idle_marks: list[int] = field(default_factory=list)  # offsets where idle() was applied
    reported: int = 0  # problems already printed
    unknown_said: Counter[str] = field(default_factory=Counter)  # unknown kinds printed
    sessions: int = 0  # session/start events sent by this run
    events: int = 0  # events sent by this run

    def state(self) -> bytes:
        token = self.converter.token() if isinstance(self.converter, Resumable) else None
        return orjson.dumps(
            {"path": str(self.path), "format": self.fmt, "offset": self.offset,
             "line": self.line, "idle_marks": self.idle_marks, "token": token}
        )  # fmt: skip


def state_key(path: Path) -> str:
    return "f-" + hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:40]


class Watcher:
    def __init__(
        self, nc: Any, subjects: Subjects, jobs: list[Job], settings: WatchSettings, *,
        progress: TextIO | None = None, errors: TextIO | None = None,
    ) -> None:  # fmt: skip
        self.nc = nc
        self.jobs = jobs
        self.settings = settings
        self.publisher = Publisher(nc, subjects, window=settings.window)
        self.redactor = settings.redaction.redactor() if settings.redaction else None
        self.files: dict[Path, Tracked] = {}
        self.progress = progress
        self.errors = errors or sys.stderr
        self.tally = Tally()
        self.limit = settings.max_event_bytes
        self.kv: Any = None
        self.links: SpawnLinks = {}
        self.figures_at = 0.0  # monotonic time the figures were last recorded
        self.figures_dirty = False

    async def run(self, stop: asyncio.Event) -> None:
        import nats.errors

        try:
            await self.publisher.prepare()
            self.limit = event_size_limit(self.publisher.max_payload, self.settings.max_event_bytes)
            self.kv = await self._bucket()
            await self._catch_up(stop)
            await self._record_figures(force=True)
            while not stop.is_set():
                await self._poll(stop)
                await self._record_figures()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.poll_s)
            await self._record_figures(force=True)
        except nats.errors.Error as exc:
            raise ImportFailed(f"NATS failed: {exc!r}") from exc
        finally:
            for tracked in self.files.values():
                self.tally.merge(tracked.converter.tally)

    def formats(self) -> dict[str, FormatFigures]:
        """Each format's figures over the files this run follows."""
        figures: dict[str, FormatFigures] = {}
        for tracked in self.files.values():
            tally = tracked.converter.tally
            one = figures.setdefault(tracked.fmt, FormatFigures())
            one.files += 1
            one.sessions += tracked.sessions
            one.events += tracked.events
            one.unknown.update(tally.unknown)
            one.by_design.update(tally.by_design)
        return figures

    async def _record_figures(self, *, force: bool = False) -> None:
        """The figures into the imports bucket: after the catch-up, at most every
        ``FIGURES_EVERY_S`` while they change, and when the watch stops."""
        bucket = self.settings.imports_bucket
        if not bucket or not (force or self.figures_dirty):
            return
        if not force and time.monotonic() - self.figures_at < FIGURES_EVERY_S:
            return
        self.figures_at, self.figures_dirty = time.monotonic(), False
        await record_formats(self.nc, bucket, self.formats(), command="watch", errors=self.errors)

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
        from worker.importers.progress import ProgressLine

        files = self._discover()
        for job in self.jobs:  # auto-detection: say what was found where, per agent
            if job.agent is not None:
                count = sum(1 for _, owner in files if owner is job)
                where = ", ".join(map(str, job.paths))
                print(f"{job.agent}: {count or 'no'} files in {where}", file=self.errors)
        sizes = [f.stat().st_size for f, _ in files]
        bar = ProgressLine(self.progress, total_bytes=sum(sizes), total_files=len(files))
        done = 0
        for index, ((path, job), size) in enumerate(zip(files, sizes, strict=True)):
            if stop.is_set():
                break
            tracked = await self._open(path, job.fmt)
            if tracked is None:
                continue
            while await self._pump(tracked, stop):
                p = self.publisher
                bar.show(files=index, events=p.published, duplicates=p.duplicates,
                         problems=self._problems(),
                         done_bytes=done + min(tracked.offset, size))  # fmt: skip
            done += size
        p = self.publisher
        bar.show(files=len(files), events=p.published, duplicates=p.duplicates,
                 problems=self._problems(), done_bytes=done, final=True)  # fmt: skip
        # What exists now was read whole: a source with nothing of its format is said so.
        for tracked in self.files.values():
            why = unrecognised_source(tracked.converter.tally, tracked.fmt)
            if why is not None:
                print(f"watch: {tracked.path}: {why}", file=self.errors)

    def _problems(self) -> int:
        return sum(len(t.converter.tally.problems) for t in self.files.values())

    async def _poll(self, stop: asyncio.Event) -> None:
        for path, job in self._discover():
            if stop.is_set():
                return
            try:
                await self._follow(path, job.fmt, stop)
            except FileNotFoundError:
                self.files.pop(path, None)  # removed between the listing and the read

    async def _follow(self, path: Path, fmt: str, stop: asyncio.Event) -> None:
        tracked = self.files.get(path) or await self._open(path, fmt)
        if tracked is None:
            return
        grew = False
        while await self._pump(tracked, stop):
            grew = True
        # Quiet by the file's own clock: a transcript untouched for days ends at once.
        changed = await asyncio.to_thread(tracked.importer.last_change, path)
        if not grew and time.time() - changed >= self.settings.idle_s:
            await self._idle(tracked)

    def _discover(self) -> list[tuple[Path, Job]]:
        """Every source of every job (the first job to list a file reads it)."""
        from worker.importers.detect import expand

        found: dict[Path, Job] = {}
        for job in self.jobs:
            for path in expand([p for p in job.paths if p.exists()], job.fmt):
                found.setdefault(path, job)
        return list(found.items())

    async def _open(self, path: Path, job_fmt: str) -> Tracked | None:
        """Start following ``path``: its stored position, and its converter brought there."""
        from worker.importers import registry
        from worker.importers.detect import AUTO, detect

        fmt = detect(path) if job_fmt == AUTO else job_fmt
        if fmt is None:
            return None  # not (yet) recognisable: looked at again on the next poll
        importer = registry.get(fmt)
        if not importer.accepts(path):
            return None
        tracked = Tracked(path, fmt, importer, state_key(path), self._converter(importer, path))
        stored = await self._load(tracked.key)
        if stored and stored.get("format") == fmt:
            if isinstance(tracked.converter, Resumable) and stored.get("token"):
                tracked.converter.restore(stored["token"])  # a whole source: no replay
                tracked.offset, tracked.line = int(stored["offset"]), int(stored["line"])
                tracked.idle_marks = list(stored.get("idle_marks", []))
            else:
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

    def _converter(self, importer: Importer, path: Path) -> Converter:
        options = ConvertOptions(self.limit, self.settings.assume_tz, self.links,
                                 idle_s=self.settings.idle_s)  # fmt: skip
        return importer.converter(path, options)

    def _replay(self, tracked: Tracked, offset: int, marks: list[int]) -> None:
        """Feed the records already published, publishing nothing, to rebuild the state."""
        pending = sorted(marks)
        for record in tracked.importer.records(tracked.path, complete=False):
            if record.position > offset:
                break
            while pending and pending[0] < record.position:
                tracked.converter.idle()
                pending.pop(0)
            tracked.converter.feed(record.number, record.data)
            tracked.offset, tracked.line = record.position, record.number
        if tracked.offset != offset:  # the stored position is gone: a new or rewritten file
            print(f"watch: {tracked.path} shrank; reading it again from the start",
                  file=self.errors)  # fmt: skip
            tracked.converter = self._converter(tracked.importer, tracked.path)
            tracked.offset, tracked.line = 0, 0
            return
        for _ in pending:
            tracked.converter.idle()
        tracked.idle_marks = sorted(marks)
        tracked.reported = len(tracked.converter.tally.problems)

    async def _pump(self, tracked: Tracked, stop: asyncio.Event) -> bool:
        """Publish one chunk of new complete lines; True when there was one."""
        from worker.importers.pipeline import checked

        if stop.is_set():
            return False
        records = tracked.importer.records(
            tracked.path, after=tracked.offset, number=tracked.line, complete=False
        )
        chunk = list(itertools.islice(records, self.settings.chunk_lines))
        if not chunk:
            return False
        for record in chunk:
            outs = tracked.converter.feed(record.number, record.data)
            await self._send(tracked, checked(tracked.converter, outs, str(tracked.path),
                                              record.number, self.limit,
                                              self.redactor))  # fmt: skip
        tracked.offset, tracked.line = chunk[-1].position, chunk[-1].number
        await self._commit(tracked)
        return True

    async def _idle(self, tracked: Tracked) -> None:
        if tracked.idle_marks and tracked.idle_marks[-1] == tracked.offset:
            return  # already applied at this position
        from worker.importers.pipeline import checked

        outs = tracked.converter.idle()
        await self._send(tracked, checked(tracked.converter, outs, str(tracked.path),
                                          tracked.line, self.limit, self.redactor))  # fmt: skip
        tracked.idle_marks.append(tracked.offset)
        await self._commit(tracked)

    async def _send(self, tracked: Tracked, outs: list[Outgoing]) -> None:
        for out in outs:
            refused = await self.publisher.send(out)
            tracked.events += 1
            tracked.sessions += out.kind == "session/start"
            if refused is not None:  # said as it happens: a watch may run for days
                print(f"watch: {tracked.path}: the worker will dead-letter it: {refused}",
                      file=self.errors)  # fmt: skip
        self.figures_dirty = self.figures_dirty or bool(outs)
        tally = tracked.converter.tally
        for problem in tally.problems[tracked.reported :]:
            print(problem, file=self.errors)
        tracked.reported = len(tally.problems)
        # Kinds the importer does not know, said as they appear (only the new counts).
        tally.explain(tracked.importer.skip_reason)
        new = tally.unknown - tracked.unknown_said
        if new:
            print(f"watch: {tracked.path}: {unknown_text(new)}", file=self.errors)
            tracked.unknown_said |= tally.unknown
            self.figures_dirty = True

    async def _commit(self, tracked: Tracked) -> None:
        """The chunk's events acknowledged first, then its position stored."""
        await self.publisher.settle()
        await self.kv.put(tracked.key, tracked.state())
