"""What each source gave and each format's sum: ``--dry-run``'s per-file table, and the
figures ``import`` and ``watch`` keep per format in the imports bucket for ``status``
(last import, files, sessions, events, unknown kinds). Counts and kinds only: no message
text ever goes into a report or the bucket."""

from __future__ import annotations

import re
import socket
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TextIO

import orjson

from worker.importers.base import Tally
from worker.importers.skips import bounded, kinds_text, short, unknown_text

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


def unrecognised_source(tally: Tally, fmt: str) -> str | None:
    """Why a source read whole is not of its format at all, or None: nothing came of it
    but records of kinds the importer does not know (or cannot read), none it knows."""
    if tally.events or tally.by_design or not (tally.unknown or tally.problems):
        return None
    seen = max(tally.lines, sum(tally.unknown.values()) + len(tally.problems))
    return f"not a recognised {fmt} source (no record of a known kind in {seen} records)"


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
