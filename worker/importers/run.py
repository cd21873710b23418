"""One import run: the files of each job converted and published, and the per-agent
report. ``sessionquery import`` (``worker.commands.importing``) and
``watch`` (``worker.importers.watch``) share it; neither command's flags live here.

Claude Code and Codex never write a session's end: a session whose last event is older
than ``idle_s`` (default 1800, as ``watch``) gets its ``session/end`` at that event's time,
with the next seq, so importing the file again publishes the same end (the stream and the
index keep it once). Aider's events carry their session's start time, so its last session
is ended only when the file, too, is older than that.

Each file read gets a ``figures.FileReport`` (sessions, events by type, skipped kinds by
design or unknown, what the publisher's order checks would refuse): ``--dry-run`` prints
them (a :class:`~worker.importers.publish.DryRun` stands in for the publisher), and each
format's sum (``figures.FormatFigures``) is kept in the imports bucket for ``status``.
The summary's lines are ``summary.py``'s.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import BinaryIO, Final, TextIO

from contracts.limits import MAX_EVENT_BYTES, event_size_limit
from contracts.partitions import NO_CWD_KEY
from contracts.redaction import REDACTION_ON, RedactionSpec, Redactor
from contracts.subjects import Subjects
from worker.importers.base import Converter, Outgoing, Problem, SpawnLinks, Tally, quiet_since
from worker.importers.detect import AUTO
from worker.importers.figures import (
    DEFAULT_IMPORTS_BUCKET,
    FileReport,
    FormatFigures,
    record_formats,
    unrecognised_source,
)
from worker.importers.progress import ProgressLine
from worker.importers.publish import DEFAULT_WINDOW, KEPT_REASONS, DryRun, Publisher
from worker.importers.skips import kinds_text, unknown_text
from worker.transport.connection import NatsOptions

# A session whose last event is older than this is over (import), as is a file that has
# not grown for this long (watch).
DEFAULT_IDLE_S: Final = 1800.0
# A published event's cites, as its bytes spell the key (a string's quotes are escaped).
_CITES: Final = b'"cites":'


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
    # Tool results citing no call: the call is in no source read (a transcript not among
    # those read, or one the agent never wrote). Published as they are, never refused.
    uncited_results: int = 0
    redacted: Counter[str] = field(default_factory=Counter)  # credentials replaced, by kind
    # Sessions published without their end: active by their last event's time (or, where
    # the source records no times, by the file's: a fresh ``cp -r`` looks active too).
    sessions_seen: set[str] = field(default_factory=set)
    sessions_ended: set[str] = field(default_factory=set)
    idle_s: float = DEFAULT_IDLE_S

    @property
    def left_open(self) -> int:
        return len(self.sessions_seen - self.sessions_ended)

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


async def import_jobs(
    jobs: list[Job], *, options: NatsOptions, subjects: Subjects,
    window: int = DEFAULT_WINDOW, max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None, progress: TextIO | None = None, errors: TextIO | None = None,
    idle_s: float = DEFAULT_IDLE_S, dry_run: bool = False, output: BinaryIO | None = None,
    imports_bucket: str | None = DEFAULT_IMPORTS_BUCKET,
    redaction: RedactionSpec | None = REDACTION_ON,
) -> ImportReport:  # fmt: skip
    """Convert and publish ``jobs``; ``dry_run``: convert and check only, without
    connecting; ``output``: also write each event's bytes, one per line (the ``events``
    format); ``imports_bucket``: where each format's figures are kept for ``status``;
    ``redaction``: the rules credentials are replaced by markers with before publishing
    (and in ``output``); None: not at all (``--no-redact``)."""
    from worker.importers.detect import expand
    from worker.importers.publish import DryRun, connect_publisher

    found = [(job, list(expand([p for p in job.paths if p.exists()], job.fmt))) for job in jobs]
    files = [file for _, job_files in found for file in job_files]
    sizes = await asyncio.to_thread(lambda: {f: f.stat().st_size for f in files})
    nc = None if dry_run else await connect_publisher(options, name="sessionquery-import")
    bar = ProgressLine(progress, total_bytes=sum(sizes.values()), total_files=len(files))
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
                         quiet_before=quiet_since(idle_s), output=output,
                         redactor=redaction.redactor() if redaction else None)  # fmt: skip
        run.report.dry_run, run.report.idle_s = dry_run, idle_s
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
        if run.redactor is not None:
            run.report.redacted = Counter(run.redactor.found)
        run.show(0, final=True)
        if nc is not None and imports_bucket and run.report.formats:
            await record_formats(nc, imports_bucket, run.report.formats, command="import",
                                 errors=run.errors)  # fmt: skip
    finally:
        bar.clear()
        if nc is not None:
            await nc.close()
    return run.report


@dataclass
class _ImportRun:
    publisher: Publisher | DryRun
    bar: ProgressLine
    errors: TextIO
    limit: int
    assume_tz: tzinfo | None
    quiet_before: datetime
    output: BinaryIO | None = None
    redactor: Redactor | None = None
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

        for out in checked(converter, outs, str(path), line_no, self.limit, self.redactor):
            self.report.sessions_seen.add(out.session_id)
            if out.kind == "session/end":
                self.report.sessions_ended.add(out.session_id)
            if out.kind == "session/start" and out.key == NO_CWD_KEY:
                self.report.no_cwd_sessions += 1
            elif out.kind == "tool/result" and _CITES not in out.body:
                self.report.uncited_results += 1
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
