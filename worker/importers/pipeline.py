"""Running a converter over a source and checking what it made: no NATS here."""

from __future__ import annotations

import dataclasses
from datetime import tzinfo
from pathlib import Path
from typing import Final

import orjson

from contracts.events import Refusal, validate_event
from contracts.limits import MAX_EVENT_BYTES
from contracts.redaction import Redactor
from worker.importers import make_converter
from worker.importers.base import Converter, Outgoing, Problem, SpawnLinks, Tally

# What ``checked`` applies unless told otherwise: the worker's rules, redaction on.
DEFAULT_REDACTOR: Final = Redactor()


def checked(
    converter: Converter,
    outs: list[Outgoing],
    path: str,
    line_no: int,
    max_event_bytes: int,
    redactor: Redactor | None = DEFAULT_REDACTOR,
) -> list[Outgoing]:
    """Events a converter made, minus any that the index would refuse (each reported):
    a converter bug or an odd source record must not put a bad event on the stream. With
    ``redactor`` (``import`` and ``watch`` unless ``--no-redact``) every payload string is
    redacted here, the one place every importer's events pass before they are published
    or written out."""
    if getattr(converter, "validated", False):
        return [redact_outgoing(out, redactor) for out in outs]
    good = []
    for out in outs:
        if out.dropped:
            converter.tally.skip(
                "event after its session ended (idle)",
                why="the session was ended as idle; the index accepts nothing after its end",
            )
            continue
        outcome = validate_event(out.body, max_event_bytes=max_event_bytes)
        if isinstance(outcome, Refusal):
            converter.tally.problems.append(
                Problem(path, line_no, f"event not imported: {outcome.reason}")
            )
        else:
            good.append(redact_outgoing(out, redactor))
    return good


def redact_outgoing(out: Outgoing, redactor: Redactor | None) -> Outgoing:
    """``out`` with its payload's credentials replaced by markers (the same rules as the
    worker's writer); itself when there were none."""
    if redactor is None or out.dropped:
        return out
    if not redactor.might_hold(out.body.decode("utf-8", "replace")):
        return out
    try:
        doc = orjson.loads(out.body)
    except orjson.JSONDecodeError:
        return out  # not an event: validation reports it
    payload = doc.get("payload") if isinstance(doc, dict) else None
    if not isinstance(payload, dict):
        return out
    new, changed = redactor.redact_payload(str(doc.get("type", "")), payload)
    if not changed:
        return out
    doc["payload"] = new
    return dataclasses.replace(out, body=orjson.dumps(doc))


def convert_file(
    fmt: str,
    path: Path,
    *,
    max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None,
    links: SpawnLinks | None = None,
) -> tuple[list[Outgoing], Tally]:
    """The whole source at once, checked: what ``import`` publishes, for tests and tools
    (pass one ``links`` table to files read in order, as ``import`` does)."""
    from worker.importers import registry

    importer = registry.get(fmt)
    converter = make_converter(
        fmt, path, max_event_bytes=max_event_bytes, assume_tz=assume_tz, links=links
    )
    events: list[Outgoing] = []
    number = 0
    for record in importer.records(path, complete=True):
        number = record.number
        outs = converter.feed(number, record.data)
        events.extend(checked(converter, outs, str(path), number, max_event_bytes))
    events.extend(checked(converter, converter.finish(), str(path), number, max_event_bytes))
    return events, converter.tally
