"""Reading a source file line by line and running its converter: no NATS here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import BinaryIO

from worker.importers import make_converter
from worker.importers.base import Converter, Outgoing, Problem, Tally


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
    from worker.store.writer import parse_event

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


def convert_file(
    fmt: str, path: Path, *, max_event_bytes: int = 1024 * 1024, assume_tz: tzinfo | None = None
) -> tuple[list[Outgoing], Tally]:
    """The whole file at once: what ``import`` publishes, for tests and tools."""
    converter = make_converter(fmt, path, max_event_bytes=max_event_bytes, assume_tz=assume_tz)
    events: list[Outgoing] = []
    last = 0
    with path.open("rb") as fh:
        for line in all_lines(fh):
            last = line.number
            outs = converter.feed(line.number, line.data)
            events.extend(checked(converter, outs, str(path), line.number, max_event_bytes))
    events.extend(checked(converter, converter.finish(), str(path), last, max_event_bytes))
    return events, converter.tally
