"""What an operator (a person, through ``sessionquery ui``) reads beside the model's tools.

The model's ``SessionQueryService`` answers one caller about its own workspace, in text.
An operator browses: the workspaces, a workspace's sessions as a sorted, filtered page, a
session's events in order with long bodies cut (their exact JSON read a chunk at a time),
and the refused events. These are reads by key or by one workspace, each one read
transaction returning the header it read with the rows, like the tools' reads: whoever
scopes them (``worker.tools.operator``) re-checks the workspace on the same observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from worker.signals import ExecutionSignal
from worker.store.protocol import Availability, SessionHeader, SurfaceName

SessionSort = Literal["updated", "created", "events", "title"]


@dataclass(frozen=True, slots=True)
class WorkspaceSummary:
    cwd: str | None  # None: sessions that recorded no cwd
    sessions: int
    events: int
    updated_ms: int | None


@dataclass(frozen=True, slots=True)
class SessionListFilter:
    availability: tuple[Availability, ...] | None = None
    created_from_ms: int | None = None
    created_to_ms: int | None = None
    updated_from_ms: int | None = None
    updated_to_ms: int | None = None
    # None: no parent clause; () with roots_only: root sessions only.
    parent_session_ids: tuple[str, ...] | None = None
    roots_only: bool = False
    title_contains: str | None = None


@dataclass(frozen=True, slots=True)
class SessionRow:
    header: SessionHeader
    title: str | None
    # Untitled: the first prompt the user wrote (``contracts.harness.first_prompt``).
    first_prompt: str | None
    source: str | None  # the importer's source format (session/start payload), if any
    children: int  # sub-sessions recorded in the same workspace


@dataclass(frozen=True, slots=True)
class SessionListPage:
    rows: tuple[SessionRow, ...]
    total: int  # sessions matching the filter
    offset: int


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    session_id: str
    seq: int
    event_id: str
    type: str
    surface: SurfaceName
    time_ms: int
    size: int  # characters of the raw JSON
    # The raw JSON whole when ``size`` fits the page's cut, else its first characters.
    head: str
    replaced_by: tuple[int, ...] = ()  # seqs that took this event's place
    # The event as a person reads it (``readable``): its first ``cut`` characters, the
    # whole text's length, and the tool a call or result names.
    text: str = ""
    text_size: int = 0
    tool: str | None = None

    @property
    def cut(self) -> bool:
        return len(self.head) < self.size


@dataclass(frozen=True, slots=True)
class TimelinePage:
    header: SessionHeader  # from the same read transaction as ``events``
    events: tuple[TimelineEvent, ...]
    next_seq: int | None  # the first seq of the next page; None at the end


@dataclass(frozen=True, slots=True)
class EventChunk:
    header: SessionHeader
    seq: int
    size: int  # characters of the whole raw JSON (0: no such event)
    offset: int
    text: str
    found: bool


@dataclass(frozen=True, slots=True)
class EventText:
    """A part of one event's readable text (``readable``), with the query's matches in it."""

    header: SessionHeader
    seq: int
    found: bool
    type: str = ""
    tool: str | None = None
    # Every offset and size in code points (``worker.store.search.readable``).
    size: int = 0  # of the whole readable text
    offset: int = 0  # where the part starts in it: a part boundary
    text: str = ""
    # The query's matches in the part: (start, end) offsets into ``text``.
    matches: tuple[tuple[int, int], ...] = ()
    # Where the match a search hit shows starts in the whole text (the excerpt's window).
    first_match: int | None = None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    stream_seq: int
    kind: str
    reason: str


@runtime_checkable
class OperatorReads(Protocol):
    """Reads for operators. Each is one read transaction; none takes the search lane."""

    async def workspaces(self, *, signal: ExecutionSignal) -> tuple[WorkspaceSummary, ...]: ...

    async def list_sessions(
        self,
        cwd: str | None,
        *,
        filters: SessionListFilter,
        sort: SessionSort,
        descending: bool,
        offset: int,
        limit: int,
        signal: ExecutionSignal,
    ) -> SessionListPage: ...

    async def timeline(
        self, session_id: str, *, from_seq: int, limit: int, cut: int, signal: ExecutionSignal
    ) -> TimelinePage | None:
        """Events from ``from_seq`` in order; None when the session is not indexed."""
        ...

    async def event_chunk(
        self, session_id: str, seq: int, *, offset: int, size: int, signal: ExecutionSignal
    ) -> EventChunk | None:
        """``size`` characters of one event's raw JSON from ``offset``; None: no session."""
        ...

    async def event_text(
        self,
        session_id: str,
        seq: int,
        *,
        query: str | None,
        offset: int | None,
        size: int,
        signal: ExecutionSignal,
    ) -> EventText | None:
        """The part (parts of ``size`` code points, cut as ``worker.store.search.readable``
        says) of one event's readable text holding ``offset`` (None: the match a search hit
        shows, else the start) and the query's matches in it; None: no session.
        ``InvalidQuery`` for a query with nothing searchable."""
        ...

    async def dead_letters(self, *, limit: int, signal: ExecutionSignal) -> tuple[DeadLetter, ...]:
        """The latest refused events with their reasons, newest first."""
        ...
