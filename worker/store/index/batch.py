"""Checking a batch of stream messages one by one, before any database is touched.

CPU only, so it runs apart from the transaction: in the writer's child process (or on the
event loop while the writer's thread applies the batch before). Each rejection carries a one-line
reason for the dead-letter subject; ``reason_kind`` names its kind for the ``deadletters``
table. The event contract's own rules and their texts are ``contracts.events``'s
(``validate_event``); the checks that need the index (unknown session, gaps, after the
end) are ``writer_core``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from contracts.events import Refusal, validate_event_text
from contracts.redaction import Redactor
from worker.store.event_codec import indexed_payload as indexed_payload
from worker.store.files import schema
from worker.store.writer_protocol import IngestItem, Rejected

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
    # The event's JSON as stored (redacted); its searchable text is derived from it where
    # it is read (``event_codec``), never stored beside it.
    raw_json: str
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
    # The message as received, for a dead letter.
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch checked message by message, ready for ``WriterCore.apply``."""

    items: tuple[CheckedEvent | Rejected, ...]


# -- checking ------------------------------------------------------------------------------


class BatchChecker:
    """Checks messages one by one (no database)."""

    def __init__(
        self, *, text_cap_bytes: int, max_event_bytes: int, redactor: Redactor | None = None
    ) -> None:
        self._text_cap_bytes = text_cap_bytes
        self._max_event_bytes = max_event_bytes
        self._redactor = redactor

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
        if self._redactor is not None:
            # The one place credentials leave an event: everything below (the stored JSON,
            # the searchable text, the title, the first prompt) derives from these.
            payload, text = redacted(self._redactor, event.type, payload, text)
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


def redacted(
    redactor: Redactor, kind: str, payload: dict[str, Any], text: str
) -> tuple[dict[str, Any], str]:
    """The payload with every string (keys too) redacted, but its identity fields, and the
    event's JSON to store with it; both unchanged (not copied) when nothing was found."""
    if not redactor.payload_might_hold(payload, text):
        return payload, text  # most events: one gate over the payload's JSON, no walk
    new, changed = redactor.redact_payload(kind, payload)
    if not changed:
        return payload, text
    doc = orjson.loads(text)
    doc["payload"] = new
    return new, orjson.dumps(doc).decode()


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


# Reasons are redacted whatever the setting: they travel in headers and the deadletters
# table, and are built from ids and subjects, which could carry anything id-shaped.
_REASONS: Final = Redactor()


def reject(stream_seq: int, data: bytes, reason: str) -> Rejected:
    reason = _REASONS.redact(" ".join(reason.split()))  # one line: it travels in a header
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 3] + "..."
    return Rejected(stream_seq=stream_seq, data=data, reason=reason)
