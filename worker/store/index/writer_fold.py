"""A checked batch folded into the rows one transaction writes (pure: no database).

The session rules live here: each event is checked against its session's header as the
batch left it (``fold_event``), and what passes becomes an ``events`` row, its relations,
and the session's new header. ``writer_core`` loads the headers and writes the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import orjson

from contracts.partitions import workspace_key
from worker.store.files import schema
from worker.store.index.batch import CheckedEvent, reason_kind, reject
from worker.store.protocol import Availability
from worker.store.writer_protocol import Rejected

# The ``sessions`` columns, in ``HeaderFold``'s field order.
SESSION_NAMES: Final = (
    "session_id",
    "cwd",
    "ws",
    "parent_session_id",
    "title",
    "availability",
    "created_ms",
    "updated_ms",
    "last_seq",
    "event_count",
    "prompts",
)
SESSION_COLUMNS: Final = ", ".join(SESSION_NAMES)

# An ``events`` row in ``writer_core._INSERT_EVENT``'s column order, the JSON still text
# (the writer packs it: ``event_codec``).
EventRow = tuple[int, str, int, str, str, str, int, int, str]


@dataclass(slots=True)
class HeaderFold:
    """A session's header while a batch folds into it (mutable on purpose, batch-local).
    The fields are ``SESSION_NAMES`` in order."""

    session_id: str
    cwd: str | None
    ws: str
    parent_session_id: str | None
    title: str | None
    availability: Availability
    created_ms: int | None
    updated_ms: int | None
    last_seq: int
    event_count: int
    # The first message/user texts (schema.TITLE_PROMPTS), as stored: a JSON array or NULL.
    prompts: str | None = None

    def add_prompt(self, text: str) -> None:
        held: list[str] = orjson.loads(self.prompts) if self.prompts else []
        if len(held) < schema.TITLE_PROMPTS:
            self.prompts = orjson.dumps([*held, text]).decode()

    def row(self) -> tuple[object, ...]:
        return (
            self.session_id,
            self.cwd,
            self.ws,
            self.parent_session_id,
            self.title,
            self.availability,
            self.created_ms,
            self.updated_ms,
            self.last_seq,
            self.event_count,
            self.prompts,
        )


@dataclass(slots=True)
class BatchRows:
    """What one transaction writes for a batch."""

    events: list[EventRow] = field(default_factory=list)
    replacements: list[tuple[str, int, int]] = field(default_factory=list)
    citations: list[tuple[str, int, str, int]] = field(default_factory=list)
    sessions: list[HeaderFold] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    duplicates: int = 0

    def deadletters(self) -> list[tuple[int, str, str]]:
        return [(r.stream_seq, r.reason, reason_kind(r.reason)) for r in self.rejected]


def fold_batch(
    fresh: Sequence[CheckedEvent | Rejected],
    sessions: dict[str, HeaderFold],
    *,
    next_id: int,
) -> BatchRows:
    """The rows for the items past the stored stream sequence, in order. ``sessions``
    holds the stored headers of the batch's sessions and is updated in place; ``next_id``
    is the first free event id."""
    rows = BatchRows()
    touched: dict[str, HeaderFold] = {}
    for p in fresh:
        if isinstance(p, Rejected):
            rows.rejected.append(p)
            continue
        sid = p.session_id
        session = sessions.get(sid)
        if session is not None and p.seq <= session.last_seq:
            rows.duplicates += 1
            continue
        outcome = fold_event(session, p)
        if isinstance(outcome, str):
            rows.rejected.append(reject(p.stream_seq, p.data, outcome))
            continue
        sessions[sid] = touched[sid] = outcome
        rows.events.append(
            (next_id, sid, p.seq, p.event_id, p.type, p.surface, p.time_ms, p.stream_seq,
             p.raw_json)
        )  # fmt: skip
        next_id += 1
        if p.replaces:
            rows.replacements.extend((sid, p.seq, pos) for pos in p.replaces)
        if p.cites:
            rows.citations.extend((sid, p.seq, c_sid, c_seq) for c_sid, c_seq in p.cites)
    rows.sessions = list(touched.values())
    return rows


def fold_event(session: HeaderFold | None, ev: CheckedEvent) -> HeaderFold | str:
    """The session's header with ``ev`` folded in, or why ``ev`` is refused."""
    sid = ev.session_id
    if ev.key is not None:
        # The partition came from the subject's key: a key that is not the session's own
        # would put the session's events in two partitions (or another's workspace).
        expected = workspace_key(ev.cwd if session is None else session.cwd)
        if ev.key != expected and (session is not None or ev.type == "session/start"):
            return (
                f"workspace key mismatch: subject key {ev.key} in session {sid} seq {ev.seq},"
                f" the session's cwd has key {expected}"
            )
    if session is None:
        if ev.type != "session/start":
            return f"unknown session {sid}: seq {ev.seq} ({ev.type}) before its session/start"
        if ev.seq != 1:
            return f"session/start at seq {ev.seq} in session {sid}: it must be seq 1"
        return HeaderFold(
            session_id=sid,
            cwd=ev.cwd,
            ws=schema.workspace_token(ev.cwd),
            parent_session_id=ev.parent_session_id,
            title=None,
            availability="live",
            created_ms=ev.time_ms,
            updated_ms=ev.time_ms,
            last_seq=1,
            event_count=1,
        )
    if session.availability == "persisted":
        return (
            f"session {sid} ended at seq {session.last_seq}:"
            f" seq {ev.seq} arrived after its session/end"
        )
    if ev.seq != session.last_seq + 1:
        return f"gap in session {sid}: expected seq {session.last_seq + 1}, got {ev.seq}"
    if ev.type == "session/start":
        return f"session/start at seq {ev.seq} in session {sid}: it must be seq 1"
    # Every check passed: fold in place (the object is batch-local).
    if ev.type == "session/title":
        session.title = ev.title
    elif ev.type == "message/user" and ev.prompt is not None:
        # Kept as they came (harness text too): which one is the user's is the tools' rule.
        session.add_prompt(ev.prompt)
    elif ev.type == "session/end":
        session.availability = "persisted"
    if session.updated_ms is None or ev.time_ms > session.updated_ms:
        session.updated_ms = ev.time_ms
    session.last_seq = ev.seq
    session.event_count += 1
    return session
