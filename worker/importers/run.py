"""One import run: the files of each job converted and published, the per-agent report,
and the summary's lines. ``sessionquery import`` (``worker.commands.importing``) and
``watch`` (``worker.importers.watch``) share it; neither command's flags live here.

Claude Code and Codex never write a session's end: a session whose last event is older
than ``idle_s`` (default 1800, as ``watch``) gets its ``session/end`` at that event's time,
with the next seq, so importing the file again publishes the same end (the stream and the
index keep it once). Aider's events carry their session's start time, so its last session
is ended only when the file, too, is older than that.

Each file read gets a :class:`FileReport` (sessions, events by type, skipped kinds by
design or unknown, what the publisher's order checks would refuse): ``--dry-run`` prints
them (a :class:`~worker.importers.publish.DryRun` stands in for the publisher), and each
format's sum (:class:`FormatFigures`) is kept in the imports bucket for ``status``.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, BinaryIO, Final, TextIO

import orjson

from contracts.limits import MAX_EVENT_BYTES, event_size_limit
from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from worker.importers.base import Converter, Outgoing, Problem, SpawnLinks, Tally, quiet_since
from worker.importers.detect import AUTO
from worker.importers.progress import Progress
from worker.importers.publish import DEFAULT_WINDOW, KEPT_REASONS, DryRun, Publisher
from worker.importers.skips import bounded, kinds_text, short, unknown_text
from worker.transport.connection import NatsOptions

# A session whose last event is older than this is over (import), as is a file that has
# not grown for this long (watch).
DEFAULT_IDLE_S: Final = 1800.0
# Where import and watch keep each format's last figures (key: the format), for status.
DEFAULT_IMPORTS_BUCKET: Final = "sessionquery-imports"


@dataclass
class FileReport:
    """What one source gave: ``--dry-run``'s per-file table, and the figures each format
    records for ``status``. Counts and kinds only: no message text."""

    path: Path
    fmt: str
    sessions: int = 0  # session/start events made from it
    events: Counter[str] = field(default_factory=Counter)  # by type
    tally: Tally = field(default_factory=Tally)
    refused: int = 0  # events the worker would refuse (dead-letter)
    reasons: list[str] = field(default_factory=list)  # why, for the first KEPT_REASONS
    looked_up: int = 0  # sessions whose start is not in the files read
    unrecognised: str | None = None  # the source is not of its format at all

    def lines(self) -> list[str]:
        """The file's block of the dry run's table: the same source always gives the
        same text (kinds sorted, no times, no rates)."""
        total = sum(self.events.values())
        lines = [f"{self.path} ({self.fmt})"]
        if self.unrecognised:
            lines.append(f"  {self.unrecognised}")
        lines.append(f"  sessions {self.sessions}, events {total}"
                     + (f": {kinds_text(self.events)}" if total else ""))  # fmt: skip
        for what, n in sorted(self.tally.by_design.items()):
            lines.append(f"  skipped by design: {short(what)} {n} ({self.tally.why[what]})")
        if self.tally.unknown:
            lines.append(f"  {unknown_text(self.tally.unknown)}")
        if self.tally.problems:
            lines.append(f"  invalid records: {len(self.tally.problems)} (said on stderr)")
        if self.refused:
            lines.append(f"  would be refused: {self.refused}")
            lines.extend(f"    {reason}" for reason in self.reasons)
        if self.looked_up:
            lines.append(f"  would be looked up in the stream: {self.looked_up} sessions"
                         " (their session/start is not in the files read)")  # fmt: skip
        return lines


@dataclass
class FormatFigures:
    """One format's figures over a run: what ``status`` shows per format."""

    files: int = 0
    sessions: int = 0
    events: int = 0
    unknown: Counter[str] = field(default_factory=Counter)
    by_design: Counter[str] = field(default_factory=Counter)
    unrecognised: int = 0

    def add(self, file: FileReport) -> None:
        self.files += 1
        self.sessions += file.sessions
        self.events += sum(file.events.values())
        self.unknown.update(file.tally.unknown)
        self.by_design.update(file.tally.by_design)
        self.unrecognised += file.unrecognised is not None

    def line(self, fmt: str) -> str:
        """The format's line of a summary over several formats."""
        text = f"{fmt}: {self.files} files, {self.sessions} sessions, {self.events} events"
        if self.unknown:
            text += "; " + unknown_text(self.unknown)
        return text

    def record(self, *, command: str) -> dict[str, Any]:
        """The value kept in the imports bucket under the format's name."""
        return {
            "last_import": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": command,
            "host": socket.gethostname(),
            "files": self.files,
            "sessions": self.sessions,
            "events": self.events,
            "unknown": bounded(self.unknown),
            "skipped": bounded(self.by_design),
            "unrecognised": self.unrecognised,
        }


@dataclass
class ImportReport:
    published: int = 0
    duplicates: int = 0
    files: int = 0
    tally: Tally = field(default_factory=Tally)
    read: list[FileReport] = field(default_factory=list)  # per source, in reading order
    formats: dict[str, FormatFigures] = field(default_factory=dict)
    unrecognised: list[str] = field(default_factory=list)  # "<path>: not a recognised ..."
    dry_run: bool = False
    # Published, but the worker will dead-letter them (a session's order broken: no
    # session/start before it, a gap, an event after session/end), with the first reasons.
    will_dead_letter: int = 0
    dead_letter_reasons: tuple[str, ...] = ()
    agents: list[AgentReport] = field(default_factory=list)  # auto-detection's, per agent
    no_cwd_sessions: int = 0  # sessions whose source says no cwd (or none found)

    @property
    def invalid(self) -> int:
        return len(self.tally.problems)


@dataclass(frozen=True)
class Job:
    """Paths read with one format (``auto``: detected per file); ``agent``: the importer
    whose own folders they are, when auto-detection found them."""

    fmt: str
    paths: list[Path]
    agent: str | None = None


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
    if report.no_cwd_sessions:
        print(f"sessions without a cwd: {report.no_cwd_sessions} (the no-cwd workspace,"
              " where each session sees only itself)", file=out)  # fmt: skip
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


def unrecognised_source(tally: Tally, fmt: str) -> str | None:
    """Why a source read whole is not of its format at all, or None: nothing came of it
    but records of kinds the importer does not know (or cannot read), none it knows."""
    if tally.events or tally.by_design or not (tally.unknown or tally.problems):
        return None
    seen = max(tally.lines, sum(tally.unknown.values()) + len(tally.problems))
    return f"not a recognised {fmt} source (no record of a known kind in {seen} records)"


def dead_letter_line(count: int, reasons: tuple[str, ...] | list[str]) -> str:
    return (
        f"of those, the worker will dead-letter {count}"
        f" (see sessionquery deadletters): {'; '.join(reasons[:5])}"
    )


async def import_jobs(
    jobs: list[Job], *, options: NatsOptions, subjects: Subjects,
    window: int = DEFAULT_WINDOW, max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None, progress: TextIO | None = None, errors: TextIO | None = None,
    idle_s: float = DEFAULT_IDLE_S, dry_run: bool = False, output: BinaryIO | None = None,
    imports_bucket: str | None = DEFAULT_IMPORTS_BUCKET,
) -> ImportReport:  # fmt: skip
    """Convert and publish ``jobs``; ``dry_run``: convert and check only, without
    connecting; ``output``: also write each event's bytes, one per line (the ``events``
    format); ``imports_bucket``: where each format's figures are kept for ``status``."""
    from worker.importers.detect import expand
    from worker.importers.publish import DryRun, connect_publisher

    found = [(job, list(expand([p for p in job.paths if p.exists()], job.fmt))) for job in jobs]
    files = [file for _, job_files in found for file in job_files]
    sizes = await asyncio.to_thread(lambda: {f: f.stat().st_size for f in files})
    nc = None if dry_run else await connect_publisher(options, name="sessionquery-import")
    bar = Progress(progress, total_bytes=sum(sizes.values()), total_files=len(files))
    try:
        publisher: Publisher | DryRun
        if nc is None:
            publisher = DryRun(subjects)
            limit = max_event_bytes  # no server to ask its max_payload
        else:
            publisher = Publisher(nc, subjects, window=window)
            await publisher.prepare()
            limit = event_size_limit(publisher.max_payload, max_event_bytes)
        run = _ImportRun(publisher, bar, errors or sys.stderr, limit, assume_tz,
                         quiet_before=quiet_since(idle_s), output=output)  # fmt: skip
        run.report.dry_run = dry_run
        for job, job_files in found:
            before = AgentReport.snapshot(job, run)
            for file in job_files:
                await run.file(file, job.fmt, sizes[file], named=file in job.paths)
                run.done_bytes += sizes[file]
            await publisher.settle()
            if job.agent is not None:
                run.report.agents.append(before.since(run, files=len(job_files)))
        await publisher.settle()
        run.report.published, run.report.duplicates = publisher.published, publisher.duplicates
        run.report.will_dead_letter = publisher.order.refused
        run.report.dead_letter_reasons = tuple(publisher.order.reasons)
        run.show(0, final=True)
        if nc is not None and imports_bucket and run.report.formats:
            await record_formats(nc, imports_bucket, run.report.formats, command="import",
                                 errors=run.errors)  # fmt: skip
    finally:
        bar.clear()
        if nc is not None:
            await nc.close()
    return run.report


async def record_formats(
    nc: Any, bucket: str, formats: dict[str, FormatFigures], *, command: str, errors: TextIO
) -> None:
    """Each format's figures into the imports bucket (created on first use), for
    ``status``. A publisher that may not write it still imported: one line says so."""
    import nats.errors
    import nats.js.errors

    js = nc.jetstream()
    try:
        try:
            kv = await js.key_value(bucket)
        except nats.js.errors.BucketNotFoundError:
            kv = await js.create_key_value(bucket=bucket, history=1)
        for fmt, figures in sorted(formats.items()):
            await kv.put(
                imports_key(fmt), orjson.dumps({"format": fmt, **figures.record(command=command)})
            )
    except (nats.errors.Error, TimeoutError) as exc:
        print(f"{command}: the figures for status were not recorded in {bucket}: {exc!r}",
              file=errors)  # fmt: skip


def imports_key(fmt: str) -> str:
    """A format's key in the imports bucket (a plug-in's name may hold what a key may not)."""
    return re.sub(r"[^-_=.a-zA-Z0-9]", "_", fmt) or "_"


async def read_formats(js: Any, bucket: str) -> dict[str, dict[str, Any]]:
    """Every format's last figures in the imports bucket (none: it does not exist yet)."""
    import nats.js.errors

    try:
        kv = await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        return {}
    try:
        keys = await kv.keys()
    except nats.js.errors.NoKeysError:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for key in sorted(keys):
        try:
            entry = await kv.get(key)
            value = orjson.loads(entry.value or b"")
        except (nats.js.errors.KeyNotFoundError, orjson.JSONDecodeError):
            continue
        if isinstance(value, dict):
            found[str(value.get("format") or key)] = value
    return found


@dataclass
class _ImportRun:
    publisher: Publisher | DryRun
    bar: Progress
    errors: TextIO
    limit: int
    assume_tz: tzinfo | None
    quiet_before: datetime
    output: BinaryIO | None = None
    done_bytes: int = 0
    pending_problems: int = 0  # problems of the file being read, not yet in the report
    links: SpawnLinks = field(default_factory=dict)
    report: ImportReport = field(default_factory=ImportReport)
    current: FileReport | None = None

    async def file(self, path: Path, fmt: str, size: int, *, named: bool = False) -> None:
        """Read one source; ``named``: the user gave this very file (not a folder)."""
        from worker.importers import registry
        from worker.importers.detect import detect
        from worker.importers.plugin import ConvertOptions, UnreadableSource

        chosen = detect(path) if fmt == AUTO else fmt
        if chosen is None:
            self.problem(Problem(str(path), 0, "cannot tell its format; not imported"))
            return
        importer = registry.get(chosen)
        if not importer.accepts(path):
            if named and fmt != AUTO:  # asked for by name: say so, never a silent nothing
                self.report.unrecognised.append(
                    f"{path}: not a recognised {chosen} source (not where or how {chosen}"
                    " names its session files)"
                )
                self.report.formats.setdefault(chosen, FormatFigures()).unrecognised += 1
                return
            why = "a file the agent writes that repeats a session"
            self.report.tally.skip(f"file:{chosen}:not a source", why=why)
            return
        options = ConvertOptions(self.limit, self.assume_tz, self.links)
        converter = importer.converter(path, options)
        self.current = read = FileReport(path, chosen, tally=converter.tally)
        looked_up = len(self.publisher.order.looked_up)
        last = 0
        try:
            for record in importer.records(path, complete=True):
                last = record.number
                outs = converter.feed(record.number, record.data)
                await self.send(converter, outs, path, last)
                self.show(min(record.position, size))
        except OSError as exc:  # unreadable, or gone since the listing: the rest goes on
            converter.tally.problems.append(Problem(str(path), last, f"cannot read: {exc}"))
        except UnreadableSource as exc:
            converter.tally.problems.append(Problem(str(path), last, str(exc)))
        await self.send(converter, converter.finish(), path, last)
        await self.send(converter, converter.end_quiet(self.quiet_before), path, last)
        converter.tally.explain(importer.skip_reason)
        read.tally = converter.tally
        read.looked_up = len(self.publisher.order.looked_up) - looked_up
        read.unrecognised = unrecognised_source(converter.tally, chosen)
        if read.unrecognised is not None:  # said in the summary, with the path
            self.report.unrecognised.append(f"{path}: {read.unrecognised}")
        self.report.tally.merge(converter.tally)
        self.report.files += 1
        self.report.read.append(read)
        self.report.formats.setdefault(chosen, FormatFigures()).add(read)
        self.current = None
        self.pending_problems = 0

    def problem(self, problem: Problem) -> None:
        self.report.tally.problems.append(problem)
        self.bar.clear()
        print(problem, file=self.errors)

    async def send(
        self, converter: Converter, outs: list[Outgoing], path: Path, line_no: int
    ) -> None:
        from worker.importers.pipeline import checked

        for out in checked(converter, outs, str(path), line_no, self.limit):
            if out.kind == "session/start" and out.key == NO_CWD_KEY:
                self.report.no_cwd_sessions += 1
            refused = await self.publisher.send(out)
            if self.output is not None:
                self.output.write(out.body + b"\n")
            if self.current is not None:
                self.current.events[out.kind] += 1
                self.current.sessions += out.kind == "session/start"
                if refused is not None:
                    self.current.refused += 1
                    if len(self.current.reasons) < KEPT_REASONS:
                        self.current.reasons.append(refused)
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


@dataclass(frozen=True)
class AgentReport:
    """What auto-detection did for one agent: where it looked, what it found there, what
    it published, and what it skipped (counts taken from the run before and after)."""

    agent: str
    looked: tuple[Path, ...]
    files: int = 0
    published: int = 0
    duplicates: int = 0
    invalid: int = 0
    skipped: tuple[tuple[str, int], ...] = ()
    first_file: int = 0  # the agent's first file in the run's ``read``
    unknown: tuple[tuple[str, int], ...] = ()

    @classmethod
    def snapshot(cls, job: Job, run: _ImportRun) -> AgentReport:
        tally = run.report.tally
        return cls(job.agent or job.fmt, tuple(job.paths), 0, run.publisher.published,
                   run.publisher.duplicates, len(tally.problems),
                   tuple(tally.skipped.items()), len(run.report.read))  # fmt: skip

    def since(self, run: _ImportRun, *, files: int) -> AgentReport:
        tally, before = run.report.tally, dict(self.skipped)
        skipped = tuple((what, n - before.get(what, 0)) for what, n in tally.skipped.items()
                        if n > before.get(what, 0))  # fmt: skip
        # The agent's own files' unknown kinds (the run's total may know a kind another
        # format skips by design).
        unknown: Counter[str] = Counter()
        for read in run.report.read[self.first_file :]:
            unknown.update(read.tally.unknown)
        return AgentReport(
            self.agent, self.looked, files, run.publisher.published - self.published,
            run.publisher.duplicates - self.duplicates, len(tally.problems) - self.invalid,
            skipped, self.first_file, tuple(sorted(unknown.items())),
        )  # fmt: skip

    def line(self) -> str:
        where = ", ".join(str(path) for path in self.looked)
        if not self.files:
            return f"{self.agent}: nothing found in {where}"
        text = (
            f"{self.agent}: {self.files} files in {where}: published {self.published} events"
            f" ({self.duplicates} already in the stream), {self.invalid} invalid lines skipped"
        )
        if self.skipped:
            text += "; skipped records: " + kinds_text(dict(self.skipped))
        if self.unknown:
            text += "; " + unknown_text(dict(self.unknown))
        return text
