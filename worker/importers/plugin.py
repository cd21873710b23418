"""The importer plug-in contract: what ``import``, ``watch`` and auto-detection ask a format.

An importer is a small class registered under the entry-point group
``sessionquery.importers`` (``registry.py`` finds them; the built-ins are registered the
same way in ``pyproject.toml``). It says where the agent keeps its sessions, whether a
file is one of its own, which files a folder holds, how a source reads as a sequence of
records, and gives a converter (``base.Converter``) that turns those records into events.

A record carries a ``position``: an integer that grows along the source and that
``watch`` stores after the record's events are acknowledged, so a restart reads again
only the records after it. For JSON Lines it is the byte offset just past the line (the
default ``records``); a source that is not line-fed (one JSON document per session, a
folder per session, a database) subclasses :class:`WholeSourceImporter` or picks its own
position (a message's index, a row id), as long as it grows.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts.limits import MAX_EVENT_BYTES
from worker.importers.base import Converter, SpawnLinks
from worker.importers.publish import ImportFailed

# Lines of a file read for ``detect``: the first records of a transcript may be snapshots
# or titles before anything that names the format.
SNIFF_LINES: Final = 20


@dataclass(frozen=True, slots=True)
class Record:
    """One complete record of a source: what the converter is fed."""

    number: int  # 1-based, for problems: ``file:number: reason``
    data: bytes  # the record, as the converter reads it (a JSON line, without its ending)
    position: int  # grows along the source: reading again after it gives the records after


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    max_event_bytes: int = MAX_EVENT_BYTES
    assume_tz: tzinfo | None = None  # the zone of times a format writes without one
    # One table per import or watch run: a transcript tells the files read after it which
    # tool call spawned each sub-agent (files are read in path order).
    links: SpawnLinks | None = None
    # ``watch``'s --idle-seconds: a whole source holding many sessions (a database) ends
    # each one quiet for that long as it reads, not only when the whole source is quiet.
    idle_s: float | None = None


class UnreadableSource(ImportFailed):
    """A source that cannot be read as a whole: ``import`` reports it with its path and
    goes on with the others."""


class Importer(ABC):
    """One agent's format. Subclass it, set the class attributes, write ``converter``."""

    name: ClassVar[str]  # the ``--format`` value; equal to the entry point's name
    help: ClassVar[str]  # one line for ``--help`` and the per-agent report
    # Environment variables that move ``default_locations``, for the docs and the report.
    env_vars: ClassVar[tuple[str, ...]] = ()
    # Auto-detection asks the importers in this order (lower first): a format whose
    # records another format's test would also accept goes first.
    detect_order: ClassVar[int] = 100
    # Which files of a folder are sources (``files``' default).
    pattern: ClassVar[str] = "*.jsonl"
    # What this format skips on purpose: a skip key (``tally.skip``'s, or a reading's
    # ``skipped``) or an fnmatch pattern of keys -> why. Any other kind it skips is
    # unknown: format drift, shown loud (``worker.importers.skips``; the built-ins'
    # tables are there).
    skipped_by_design: ClassVar[Mapping[str, str]] = {}

    def default_locations(self) -> list[Path]:
        """Where the agent keeps its sessions on this machine (they may not exist)."""
        return []

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """Whether ``path`` is in this format; ``head``: its first lines, read once."""
        return False

    def accepts(self, path: Path) -> bool:
        """Whether a file of this format is a source to import (some files an agent
        writes in its own format only repeat others)."""
        return True

    def files(self, root: Path) -> list[Path]:
        """The sources under the folder ``root``, in the order to read them: a transcript
        before its sub-agents', whose start cites the call that spawned them (default:
        by path)."""
        return sorted((path for path in root.rglob(self.pattern) if self.accepts(path)), key=str)

    def skip_reason(self, what: str) -> str | None:
        """Why a record counted as ``what`` is skipped by design; None: an unknown kind."""
        from worker.importers.skips import BUILT_IN, reason_for

        return reason_for(what, self.skipped_by_design) or reason_for(
            what, BUILT_IN.get(self.name, {})
        )

    def last_change(self, path: Path) -> float:
        """When the source last changed (Unix time): ``watch`` ends the sessions a source
        left open once that is ``--idle-seconds`` ago. A database also writes its WAL
        file, a folder the files inside it: their importers say so here."""
        return path.stat().st_mtime

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        """The records after ``position`` ``after`` (``number`` of them came before).

        ``complete``: the source is read as it is (``import``); else (``watch``) it may be
        being written, and only what is whole is given, the rest on a later call.
        The default reads JSON Lines: a partial last line waits for its newline.
        """
        with path.open("rb") as fh:
            fh.seek(after)
            for raw in fh:
                if not raw.endswith(b"\n") and not complete:
                    return
                after += len(raw)
                number += 1
                yield Record(number, raw.rstrip(b"\r\n"), after)

    @abstractmethod
    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        """A new converter for the source ``path`` (one per source and run)."""


class WholeSourceImporter(Importer):
    """A source read whole each time (a JSON document, a folder): its records are what
    ``split`` finds in it, and a record's position is its index (from 1). A source being
    rewritten (an agent saves the whole session file after each turn) keeps its earlier
    records in place and adds new ones at the end, so ``watch`` publishes those."""

    @abstractmethod
    def split(self, path: Path) -> list[bytes]:
        """The source's records; raises :class:`UnreadableSource` when it is not whole
        (half written, not this format)."""

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        try:
            parts = self.split(path)
        except UnreadableSource:
            if complete:
                raise
            return  # being written: read again on the next poll
        for index, data in enumerate(itertools.islice(parts, after, None), start=after + 1):
            yield Record(index, data, index)


def json_document(path: Path) -> object:
    """A JSON file's value, or :class:`UnreadableSource` saying why it is not one."""
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise UnreadableSource(f"not a whole JSON document: {exc}") from exc


def json_objects(head: Sequence[bytes]) -> Iterator[dict[str, Any]]:
    """The lines of ``head`` that are JSON objects (for ``detect`` of a JSON Lines format)."""
    for raw in head:
        line = raw.strip()
        if not line.startswith(b"{"):
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value
