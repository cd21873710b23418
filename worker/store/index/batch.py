"""Checking a batch of stream messages one by one, before any database is touched.

CPU only, so it runs apart from the transaction: on the event loop while the writer's
thread or child process applies the batch before. Each rejection carries a one-line
reason for the dead-letter subject; ``reason_kind`` names its kind for the ``deadletters``
table. The event contract's own rules and their texts are ``contracts.events``'s
(``validate_event``); the checks that need the index (unknown session, gaps, after the
end) are ``writer_core``'s.

A checked batch crosses the pipe to the writer's child process as plain tuples whose
layout is derived from ``CheckedEvent``'s fields (``to_wire``/``from_wire``): adding a
field changes both ends at once, and a batch whose field names differ is refused.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

import orjson

from contracts.events import Refusal, validate_event_text
from worker.store.files import schema
from worker.store.protocol import IngestItem, Rejected
from worker.store.search.text import searchable_text

MAX_REASON_CHARS: Final = 1000


@dataclass(slots=True)  # not frozen: built once per event, and a frozen __init__ is slower
class CheckedEvent:
    """What the write needs of one checked event, flat: the pydantic model and its payload
    tree are dropped at once instead of surviving until the commit, where the cyclic GC
    would walk them (measured a large share of the preparation time)."""

    stream_seq: int
    session_id: str
    seq: int
    event_id: str
    type: str
    surface: str
    time_ms: int
    raw_json: str
    body: str | None  # searchable text; None: left to the writer (``BatchChecker(text=)``)
    replaces: tuple[int, ...]
    cites: tuple[tuple[str, int], ...]
    # Header fields carried by the payload (shapes checked by validate_event).
    cwd: str | None = None  # session/start
    parent_session_id: str | None = None  # session/start
    title: str | None = None  # session/title
    prompt: str | None = None  # message/user: the start of its text (schema.TITLE_PROMPT_CHARS)
    # The workspace key the subject names (``<prefix>[.<partition>].<key>.<session_id>``);
    # None when the item came without a subject. ``writer_fold`` checks it.
    key: str | None = None
    # The message as received, for a dead letter. Last: it never crosses the pipe (the
    # sender keeps the bytes), and the wire rows are the fields before it.
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch checked message by message, ready for ``WriterCore.apply``."""

    items: tuple[CheckedEvent | Rejected, ...]


# -- the wire: rows derived from the fields ------------------------------------------------

WIRE_FIELDS: Final = tuple(f.name for f in fields(CheckedEvent) if f.name != "data")
if tuple(f.name for f in fields(CheckedEvent))[-1] != "data" or len(WIRE_FIELDS) == 2:
    # ``from_wire`` builds events from the leading fields and tells a rejection by its two.
    raise AssertionError("CheckedEvent.data must stay its last field")
_wire_row: Final = operator.attrgetter(*WIRE_FIELDS)

WireBatch = tuple[tuple[str, ...], list[tuple[Any, ...]]]


def to_wire(batch: PreparedBatch) -> WireBatch:
    """The batch as plain tuples (``marshal`` takes them): the field names, then per item
    its ``WIRE_FIELDS`` values, or ``(stream_seq, reason)`` for a rejected message."""
    rows: list[tuple[Any, ...]] = []
    for p in batch.items:
        rows.append((p.stream_seq, p.reason) if isinstance(p, Rejected) else _wire_row(p))
    return WIRE_FIELDS, rows


def from_wire(wire: WireBatch) -> PreparedBatch:
    """``to_wire`` undone; the messages' bytes stay with the sender (empty here)."""
    names, rows = wire
    if tuple(names) != WIRE_FIELDS:
        raise ValueError(f"batch fields {list(names)} differ from this writer's")
    items: list[CheckedEvent | Rejected] = []
    for row in rows:
        items.append(Rejected(row[0], b"", row[1]) if len(row) == 2 else CheckedEvent(*row))
    return PreparedBatch(items=tuple(items))


# -- checking ------------------------------------------------------------------------------


class BatchChecker:
    """Checks messages one by one (no database)."""

    def __init__(self, *, text_cap_bytes: int, max_event_bytes: int, text: bool = True) -> None:
        self._text_cap_bytes = text_cap_bytes
        self._max_event_bytes = max_event_bytes
        # False: the searchable text is left for the writer to derive from the raw JSON
        # (the writer process does, so the two sides of its pipe share the work evenly).
        self._text = text

    def prepare(self, items: Sequence[IngestItem]) -> PreparedBatch:
        return PreparedBatch(items=tuple(self._parse(item) for item in items))

    def _parse(self, item: IngestItem) -> CheckedEvent | Rejected:
        outcome = validate_event_text(item.data, max_event_bytes=self._max_event_bytes)
        if isinstance(outcome, Refusal):
            return reject(item.stream_seq, item.data, outcome.reason)
        event, text = outcome
        key = None
        if item.subject is not None:
            tokens = item.subject.rsplit(".", 2)
            if len(tokens) < 3 or tokens[2] != event.session_id:
                return reject(
                    item.stream_seq,
                    item.data,
                    f"subject {item.subject} does not match session_id {event.session_id}",
                )
            key = tokens[1]
        payload = event.payload
        kind = event.type
        parsed = CheckedEvent(
            stream_seq=item.stream_seq,
            session_id=event.session_id,
            seq=event.seq,
            event_id=event.event_id,
            type=kind,
            surface=event.surface.value,
            time_ms=event.time_ms,
            raw_json=text,
            body=searchable_text(indexed_payload(kind, payload), self._text_cap_bytes)
            if self._text
            else None,
            replaces=tuple(dict.fromkeys(event.replaces)) if event.replaces else (),
            cites=tuple((c.session_id, c.seq) for c in event.cites) if event.cites else (),
            key=key,
            data=item.data,
        )
        if kind == "session/start":
            parsed.cwd = payload.get("cwd")
            parsed.parent_session_id = payload.get("parent_session_id")
        elif kind == "session/title":
            parsed.title = payload.get("title")
        elif kind == "message/user":
            prompt = payload.get("text")
            if isinstance(prompt, str):
                parsed.prompt = prompt[: schema.TITLE_PROMPT_CHARS]
        return parsed


def text_of(event: CheckedEvent, cap_bytes: int) -> str:
    """The searchable text of an event checked without it (``BatchChecker(text=False)``)."""
    return searchable_text(indexed_payload(event.type, _payload_of(event.raw_json)), cap_bytes)


def indexed_payload(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload whose strings are searchable. A session/start's parent id is lineage (the
    sessions table holds it), not text: indexed, it would show in excerpts and previews even
    when the parent belongs to another workspace, whose ids are never printed."""
    if kind == "session/start" and "parent_session_id" in payload:
        return {k: v for k, v in payload.items() if k != "parent_session_id"}
    return payload


def _payload_of(raw_json: str) -> dict[str, Any]:
    """The payload of an event that passed ``validate_event``, parsed again. orjson refuses a
    few inputs pydantic accepts (integers past 64 bits, floats out of range: never text);
    the standard library reads those. Strings come out the same from all three."""
    try:
        value = orjson.loads(raw_json)
    except orjson.JSONDecodeError:
        value = json.loads(raw_json)
    payload: dict[str, Any] = value.get("payload", {})
    return payload


# -- rejections ----------------------------------------------------------------------------

# A dead letter's kind: its reason up to the first detail (an id, a number, a field).
_REASON_KINDS: Final = (
    ("oversized", "oversized"),
    ("invalid JSON", "invalid JSON"),
    ("contract violation", "contract violation"),
    ("unknown session", "unknown session"),
    ("gap in session", "gap in session"),
    ("session/start at seq", "session/start not at seq 1"),
    ("subject ", "subject mismatch"),
    ("workspace key mismatch", "workspace key mismatch"),
)


def reason_kind(reason: str) -> str:
    for prefix, kind in _REASON_KINDS:
        if reason.startswith(prefix):
            return kind
    if reason.startswith("session ") and "after its session/end" in reason:
        return "after session/end"
    return "other"


def reject(stream_seq: int, data: bytes, reason: str) -> Rejected:
    reason = " ".join(reason.split())  # one line: it travels in a NATS header
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 3] + "..."
    return Rejected(stream_seq=stream_seq, data=data, reason=reason)
