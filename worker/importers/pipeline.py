"""Reading a source file line by line and running its converter: no NATS here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import BinaryIO

from contracts.limits import MAX_EVENT_BYTES
from worker.importers import make_converter
from worker.importers.base import Converter, Outgoing, Problem, SpawnLinks, Tally


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    data: bytes  # without its line ending
    end: int  # byte offset just past the line ending


def complete_lines(fh: BinaryIO, *, offset: int = 0, number: int = 0) -> Iterator[Line]:
    """Lines that end with a newline, from ``offset``; a partial last line is left unread
    (a writer may be in the middle of it)."""
    fh.seek(offset)
    for raw in fh:
        if not raw.endswith(b"\n"):
            return
        offset += len(raw)
        number += 1
        yield Line(number, raw.rstrip(b"\r\n"), offset)


def all_lines(fh: BinaryIO) -> Iterator[Line]:
    """Every line, the last one too even without its newline (the file is complete)."""
    offset = 0
    for number, raw in enumerate(fh, start=1):
        offset += len(raw)
        yield Line(number, raw.rstrip(b"\r\n"), offset)


def checked(
    converter: Converter, outs: list[Outgoing], path: str, line_no: int, max_event_bytes: int
) -> list[Outgoing]:
    """Events a converter made, minus any that the index would refuse (each reported):
    a converter bug or an odd source record must not put a bad event on the stream."""
    if getattr(converter, "validated", False):
        return outs
    from worker.store.index.writer import parse_event

    good = []
    for out in outs:
        if out.dropped:
            converter.tally.skip("event after its session ended (idle)")
            continue
        outcome = parse_event(out.body, max_event_bytes=max_event_bytes)
        if isinstance(outcome, str):
            converter.tally.problems.append(
                Problem(path, line_no, f"event not imported: {outcome}")
            )
        else:
            good.append(out)
    return good


def convert_lines(
    fmt: str,
    path: Path,
    lines: Iterable[bytes],
    *,
    max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None,
    links: SpawnLinks | None = None,
) -> tuple[list[Outgoing], Tally]:
    """Source lines (without their line endings) in, checked events out: no I/O. ``path``
    names the source in problems and, for Aider, gives the cwd and the session ids."""
    converter = make_converter(
        fmt, path, max_event_bytes=max_event_bytes, assume_tz=assume_tz, links=links
    )
    events: list[Outgoing] = []
    number = 0
    for number, line in enumerate(lines, start=1):
        outs = converter.feed(number, line)
        events.extend(checked(converter, outs, str(path), number, max_event_bytes))
    events.extend(checked(converter, converter.finish(), str(path), number, max_event_bytes))
    return events, converter.tally


def convert_file(
    fmt: str,
    path: Path,
    *,
    max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None,
    links: SpawnLinks | None = None,
) -> tuple[list[Outgoing], Tally]:
    """The whole file at once: what ``import`` publishes, for tests and tools (pass one
    ``links`` table to files read in order, as ``import`` does)."""
    with path.open("rb") as fh:
        lines = [line.data for line in all_lines(fh)]
    return convert_lines(fmt, path, lines, max_event_bytes=max_event_bytes, assume_tz=assume_tz,
                         links=links)  # fmt: skip
