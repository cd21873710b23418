"""The ``SessionQueryService`` protocol and its result types (the writer's contract is
``worker.store.writer_protocol``).

This is the record's ``ctx.sessionQuery`` interface. The tools import this module, never the
SQLite provider. Every method takes the execution signal: a provider checks it before
starting, interrupts running backend work when it fires, waits for that work to settle, and
then raises the signal's error unchanged.

Times are epoch milliseconds (UTC). Ranges are inclusive at both ends; ``None`` means open.
Every read that returns a payload also returns the header of its session *from the same
read transaction*, so callers can re-check authorization on the same observation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from contracts.partitions import PartitionScope
from worker.signals import ExecutionSignal

# Re-exported: what a search takes (compiled by the pure ``worker.store.compile_query``,
# never by the store).
from worker.store.search.query import CompiledQuery as CompiledQuery

Availability = Literal["live", "persisted"]
SurfaceName = Literal["user", "assistant", "tool", "system"]


@dataclass(frozen=True, slots=True)
class Generation:
    """``seq``: last applied SESSIONS stream sequence. ``epoch``: bumped by purge/reindex."""

    epoch: int
    seq: int


@dataclass(frozen=True, slots=True)
class SessionHeader:
    session_id: str
    cwd: str | None
    parent_session_id: str | None
    availability: Availability
    created_ms: int | None  # time of the first event (normally session/start)
    updated_ms: int | None  # time of the latest event
    last_seq: int  # highest contiguous seq held in the index
    event_count: int


@dataclass(frozen=True, slots=True)
class TitleObservation:
    """A session's header and latest folded title, read together.

    ``prompts``: when the session has no title, the text of its first few ``message/user``
    events (``schema.TITLE_PROMPTS``, each cut to ``schema.TITLE_PROMPT_CHARS``), from which
    the tools derive one; empty otherwise."""

    header: SessionHeader
    title: str | None
    prompts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventRef:
    session_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class EventSummary:
    session_id: str
    seq: int
    event_id: str
    type: str
    surface: SurfaceName
    time_ms: int
    # The start of the event's searchable text, whitespace collapsed, bounded (~240 chars).
    preview: str


@dataclass(frozen=True, slots=True)
class StoredEvent:
    summary: EventSummary
    # The event exactly as it was received on the stream (UTF-8 JSON text).
    raw_json: str

    def payload(self) -> dict[str, Any]:
        import orjson

        value = orjson.loads(self.raw_json)
        payload = value.get("payload", {}) if isinstance(value, dict) else {}
        return payload if isinstance(payload, dict) else {}


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Session-level filters for cross-session search. Lists are ORed, fields ANDed."""

    session_ids: tuple[str, ...] | None = None
    # None: no parent clause. Otherwise a session matches when its parent is one of these,
    # or (with include_roots) when it has no parent.
    parent_session_ids: tuple[str, ...] | None = None
    include_roots: bool = False
    created_from_ms: int | None = None
    created_to_ms: int | None = None
    updated_from_ms: int | None = None
    updated_to_ms: int | None = None
    availability: tuple[Availability, ...] | None = None
    # Scope, not a filter: sessions that are never returned (the caller's own).
    exclude_session_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventFilter:
    types: tuple[str, ...] | None = None
    surfaces: tuple[SurfaceName, ...] | None = None
    time_from_ms: int | None = None
    time_to_ms: int | None = None
    # Only meaningful for single-session search.
    seq_from: int | None = None
    seq_to: int | None = None


@dataclass(frozen=True, slots=True)
class SessionHit:
    header: SessionHeader
    # The session's strongest matching event; the session's score is this event's score.
    event: EventSummary
    excerpt: str  # the matched text, [ and ] around matched words
    score: float  # lower is better
    matching_events: int  # matching events in this session after filters
    # When another hit on the page shows the same excerpt (a resumed or forked session that
    # copied events), this session's first message the others lack: "seq N: text".
    own_line: str | None = None
    # Found by meaning alone (issue 21): no word of the query is in the session.
    semantic_only: bool = False


@dataclass(frozen=True, slots=True)
class SessionSearchPage:
    hits: tuple[SessionHit, ...]
    # Opaque; bound to ``generation``. None when there are no more pages.
    next_cursor: str | None
    generation: Generation
    # True when the query matched events in scope but the filters removed every one.
    # Only computed for an empty first page.
    filtered_out: bool = False
    # No event held every content word: these are the best partial matches, ranked by how
    # many of the query's words an event holds. ``unmatched`` names the query terms that
    # match nothing in scope (first page only).
    partial: bool = False
    unmatched: tuple[str, ...] = ()
    # How the query's times were read ("read 'January 2024' as 2024-01-01..2024-01-31
    # (UTC)"), first page only: events of that time are favoured unless a time filter is
    # given.
    time_readings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventHit:
    event: EventSummary
    excerpt: str
    score: float
    semantic_only: bool = False  # found by meaning alone: no word of the query in it


@dataclass(frozen=True, slots=True)
class EventSearchPage:
    header: SessionHeader  # from the same read transaction as ``hits``
    hits: tuple[EventHit, ...]
    next_cursor: str | None
    generation: Generation
    filtered_out: bool = False
    partial: bool = False
    unmatched: tuple[str, ...] = ()
    time_readings: tuple[str, ...] = ()  # as SessionSearchPage's


@dataclass(frozen=True, slots=True)
class LineageNode:
    header: SessionHeader
    children: tuple[LineageNode, ...] = ()


@dataclass(frozen=True, slots=True)
class Lineage:
    """Complete, cycle-safe lineage of one session, read in one transaction."""

    target: SessionHeader
    # Nearest parent first, up to the root. Stops before a session already seen (cycle).
    ancestors: tuple[SessionHeader, ...]
    # The parent id the chain ends on when that session is not in the index.
    missing_ancestor_id: str | None
    # Recursive descendant trees; a session already placed in the result is not repeated.
    descendants: tuple[LineageNode, ...]
    # Each session's title observed with its header (the same read), by session id, so the
    # tools need not read them again; empty when the provider does not give them.
    titles: Mapping[str, TitleObservation] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LinkedEvent:
    """An event at the other end of a relation, with its session's header (same observation).

    ``header`` is None when that session is not in the index; ``event`` is None when the
    session is known but that seq is not.
    """

    ref: EventRef
    header: SessionHeader | None
    event: EventSummary | None


@dataclass(frozen=True, slots=True)
class EventRelations:
    header: SessionHeader
    # None when the session exists but holds no event at that seq.
    event: EventSummary | None
    # Positional replacements in the same session, transitively, nearest first.
    replaces: tuple[EventSummary, ...] = ()  # what this event took the place of
    replaced_by: tuple[EventSummary, ...] = ()  # what took this event's place
    # Direct citations only.
    cites: tuple[LinkedEvent, ...] = ()  # sources this event was derived from
    cited_by: tuple[LinkedEvent, ...] = ()  # events derived from this one
    # The session's title observed with ``header`` (as ``EventWindow.title``).
    title: TitleObservation | None = None


@dataclass(frozen=True, slots=True)
class EventWindow:
    header: SessionHeader
    # None when the session exists but holds no event at that seq.
    target: StoredEvent | None
    before: tuple[StoredEvent, ...] = ()  # ascending seq
    after: tuple[StoredEvent, ...] = ()  # ascending seq
    # The session's title observed with ``header`` (one consistent read), so the tools need not
    # read it again; None when the provider does not give it.
    title: TitleObservation | None = None


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    max_event_window: int = 50  # per side, for read_event's before/after
    max_page_size: int = 100
    # Title reads of one execution that can usefully run at once (None: as many as the
    # tools are configured to run). A provider that answers read_titles without waiting
    # (on the caller's thread) says 1: its reads cannot overlap, so one observation
    # reads every id, where chunks would only multiply statements.
    title_read_workers: int | None = None


@runtime_checkable
class SessionQueryService(Protocol):
    """Read-only queries over the session index. All methods are safe to call concurrently."""

    @property
    def limits(self) -> ServiceLimits: ...

    async def generation(self, *, signal: ExecutionSignal) -> Generation: ...

    async def search_sessions(
        self,
        query: CompiledQuery,
        *,
        cwd: str,
        sessions: SessionFilter,
        events: EventFilter,
        cursor: str | None,
        page_size: int,
        signal: ExecutionSignal,
    ) -> SessionSearchPage:
        """Full-text search across the sessions whose cwd equals ``cwd``, grouped by session.

        The cwd filter is applied inside SQL before any LIMIT. ``query`` was compiled by the
        caller (``CompiledQuery(text, compile_query(text))``: a pure function, no store, no
        I/O; ``InvalidQuery`` when nothing is searchable), once per request. A cursor from
        another epoch raises ``GenerationChanged``.
        """
        ...

    async def search_events(
        self,
        query: CompiledQuery,
        *,
        session_id: str,
        events: EventFilter,
        cursor: str | None,
        page_size: int,
        signal: ExecutionSignal,
        scope_to_seq: int | None = None,
    ) -> EventSearchPage | None:
        """Full-text search inside one session; None when the session is not indexed.

        ``scope_to_seq`` bounds what the search can see at all (the caller's current step
        is not part of its own history), unlike ``events.seq_to``, a filter: ``filtered_out``
        only reports matches that the filters removed inside the scope.
        """
        ...

    async def latest_seq_of_type(
        self, session_id: str, event_type: str, *, signal: ExecutionSignal
    ) -> int | None:
        """Seq of the session's latest event of ``event_type`` (e.g. ``step/start``)."""
        ...

    async def lineage(self, session_id: str, *, signal: ExecutionSignal) -> Lineage | None: ...

    async def event_relations(
        self, session_id: str, seq: int, *, signal: ExecutionSignal
    ) -> EventRelations | None:
        """None when the session is not indexed."""
        ...

    async def read_event(
        self,
        session_id: str,
        seq: int,
        *,
        before: int,
        after: int,
        signal: ExecutionSignal,
    ) -> EventWindow | None:
        """The target event and up to ``before``/``after`` neighbours (bounded by limits).

        None when the session is not indexed.
        """
        ...

    async def read_titles(
        self, session_ids: Sequence[str], *, signal: ExecutionSignal
    ) -> Mapping[str, TitleObservation]:
        """Headers and latest titles for many sessions in one read transaction.

        Ids not in the index are absent from the result.
        """
        ...

    async def wait_for_seq(
        self,
        session_id: str,
        seq: int,
        *,
        signal: ExecutionSignal,
        scope: PartitionScope | None = None,
    ) -> None:
        """Return once the index holds ``session_id`` through ``seq``; the signal bounds it.

        With ``scope`` (the partition a request was addressed to), a session whose
        workspace is outside it is never held: the wait runs out its bound exactly as for
        a session the index lacks, since a worker holding only that partition would never
        see it. So how long a wrong route waits tells nothing (docs/protocol.md §10.4)."""
        ...
