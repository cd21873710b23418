"""Normalization and filter construction: validated arguments -> the provider's filters.

Lists are deduplicated (the provider ORs them) and an empty list means no filter; times
become inclusive epoch-millisecond bounds. Parent ids are kept apart: authorization
decides which of them reach the provider (``parent_clause``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from worker.store import EventFilter, SessionFilter
from worker.store.protocol import SurfaceName

if TYPE_CHECKING:
    from worker.tools.input import SessionSearchArguments


def unique(values: Iterable[str]) -> tuple[str, ...]:
    """Duplicates removed, first occurrence kept (the provider ORs the rest)."""
    return tuple(dict.fromkeys(values))


def start_ms(value: datetime | None) -> int | None:
    """An inclusive lower bound in epoch ms: a sub-millisecond instant rounds up."""
    if value is None:
        return None
    return math.ceil(round(value.timestamp() * 1_000_000) / 1000)


def end_ms(value: datetime | None) -> int | None:
    """An inclusive upper bound in epoch ms: a sub-millisecond instant rounds down."""
    if value is None:
        return None
    return math.floor(round(value.timestamp() * 1_000_000) / 1000)


def _optional_unique(values: Sequence[str] | None) -> tuple[str, ...] | None:
    # An empty list means "no filter", like an omitted one: a model that writes [] did not
    # ask for nothing.
    if not values:
        return None
    return unique(values)


def event_filter(
    *,
    event_types: Sequence[str] | None,
    event_surfaces: Sequence[SurfaceName] | None,
    event_after: datetime | None,
    event_before: datetime | None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> EventFilter:
    surfaces = _optional_unique(event_surfaces)
    return EventFilter(
        types=_optional_unique(event_types),
        surfaces=surfaces,  # type: ignore[arg-type]  # a subset of SurfaceName values
        time_from_ms=start_ms(event_after),
        time_to_ms=end_ms(event_before),
        seq_from=from_seq,
        seq_to=to_seq,
    )


@dataclass(frozen=True, slots=True)
class SessionSearchRequest:
    """A validated session_search: the filters except the authority-dependent parents."""

    query: str
    sessions: SessionFilter
    events: EventFilter
    # Deduplicated; authorization decides which of them reach the provider.
    requested_parent_ids: tuple[str, ...] | None
    include_roots: bool


def session_search_request(args: SessionSearchArguments) -> SessionSearchRequest:
    availability = _optional_unique(args.availability)
    parents = _optional_unique(args.parent_session_ids)
    sessions = SessionFilter(
        session_ids=_optional_unique(args.session_ids),
        created_from_ms=start_ms(args.created_after),
        created_to_ms=end_ms(args.created_before),
        updated_from_ms=start_ms(args.updated_after),
        updated_to_ms=end_ms(args.updated_before),
        availability=availability,  # type: ignore[arg-type]  # a subset of Availability
    )
    events = event_filter(
        event_types=args.event_types,
        event_surfaces=args.event_surfaces,
        event_after=args.event_after,
        event_before=args.event_before,
    )
    return SessionSearchRequest(
        query=args.query,
        sessions=sessions,
        events=events,
        requested_parent_ids=parents,
        include_roots=args.include_root_sessions,
    )


def parent_clause(
    request: SessionSearchRequest, authorized_parent_ids: Sequence[str]
) -> tuple[tuple[str, ...] | None, bool]:
    """The provider's (parent_session_ids, include_roots) pair.

    ``()`` with include_roots False matches nothing: that is what a request whose parent
    guesses were all missing or foreign must mean.
    """
    if request.requested_parent_ids is None and not request.include_roots:
        return None, False
    return tuple(authorized_parent_ids), request.include_roots


def has_model_filters(events: EventFilter, sessions: SessionFilter | None = None) -> bool:
    """Whether the model asked for any filter (for the "filters removed every match" text)."""
    event_set = (
        events.types,
        events.surfaces,
        events.time_from_ms,
        events.time_to_ms,
        events.seq_from,
        events.seq_to,
    )
    if any(value is not None for value in event_set):
        return True
    if sessions is None:
        return False
    session_set = (
        sessions.session_ids,
        sessions.parent_session_ids,
        sessions.created_from_ms,
        sessions.created_to_ms,
        sessions.updated_from_ms,
        sessions.updated_to_ms,
        sessions.availability,
    )
    return sessions.include_roots or any(value is not None for value in session_set)
