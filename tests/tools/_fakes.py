"""A scriptable in-memory ``SessionQueryService``, for tests that must inject a fault or
observe exactly what the tools pass to the provider. Integration tests use the real SQLite
provider instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.partitions import PartitionScope
from tests._events import event
from worker.signals import ExecutionSignal
from worker.store import (
    CompiledQuery,
    EventFilter,
    EventHit,
    EventRelations,
    EventSearchPage,
    EventSummary,
    EventWindow,
    Generation,
    Lineage,
    ServiceLimits,
    SessionFilter,
    SessionHeader,
    SessionHit,
    SessionSearchPage,
    StoredEvent,
    TitleObservation,
)

CWD = "/home/dev/payments"
OTHER_CWD = "/home/dev/website"
CALLER = "s-caller"
GEN = Generation(epoch=1, seq=100)


def header(
    session_id: str,
    cwd: str | None = CWD,
    *,
    parent: str | None = None,
    availability: str = "persisted",
    created_ms: int = 1_796_200_000_000,
    updated_ms: int = 1_796_200_600_000,
) -> SessionHeader:
    return SessionHeader(
        session_id=session_id,
        cwd=cwd,
        parent_session_id=parent,
        availability=availability,  # type: ignore[arg-type]
        created_ms=created_ms,
        updated_ms=updated_ms,
        last_seq=10,
        event_count=10,
    )


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    signal: ExecutionSignal


Override = Callable[..., Awaitable[Any]]


@dataclass
class FakeService:
    """Headers and titles in memory; everything else scripted per test via ``overrides``."""

    headers: dict[str, SessionHeader] = field(default_factory=dict)
    titles: dict[str, str | None] = field(default_factory=dict)
    limits_value: ServiceLimits = field(default_factory=ServiceLimits)
    overrides: dict[str, Override] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    @classmethod
    def with_caller(cls, *others: SessionHeader, caller_cwd: str | None = CWD) -> FakeService:
        service = cls()
        service.add(header(CALLER, caller_cwd, availability="live"), "The calling session")
        for other in others:
            service.add(other, f"Title of {other.session_id}")
        return service

    def add(self, value: SessionHeader, title: str | None = None) -> None:
        self.headers[value.session_id] = value
        self.titles[value.session_id] = title

    def calls_of(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    async def _dispatch(self, method: str, signal: ExecutionSignal, **kwargs: Any) -> Any:
        self.calls.append(Call(method, kwargs, signal))
        signal.raise_if_aborted()
        override = self.overrides.get(method)
        if override is not None:
            return await override(signal=signal, **kwargs)
        return await getattr(self, f"_default_{method}")(signal=signal, **kwargs)

    @property
    def limits(self) -> ServiceLimits:
        return self.limits_value

    async def generation(self, *, signal: ExecutionSignal) -> Generation:
        return await self._dispatch("generation", signal)

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
        return await self._dispatch(
            "search_sessions",
            signal,
            query=query.text,
            cwd=cwd,
            sessions=sessions,
            events=events,
            cursor=cursor,
            page_size=page_size,
        )

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
        return await self._dispatch(
            "search_events",
            signal,
            query=query.text,
            session_id=session_id,
            events=events,
            cursor=cursor,
            page_size=page_size,
            scope_to_seq=scope_to_seq,
        )

    async def latest_seq_of_type(
        self, session_id: str, event_type: str, *, signal: ExecutionSignal
    ) -> int | None:
        return await self._dispatch(
            "latest_seq_of_type", signal, session_id=session_id, event_type=event_type
        )

    async def lineage(self, session_id: str, *, signal: ExecutionSignal) -> Lineage | None:
        return await self._dispatch("lineage", signal, session_id=session_id)

    async def event_relations(
        self, session_id: str, seq: int, *, signal: ExecutionSignal
    ) -> EventRelations | None:
        return await self._dispatch("event_relations", signal, session_id=session_id, seq=seq)

    async def read_event(
        self, session_id: str, seq: int, *, before: int, after: int, signal: ExecutionSignal
    ) -> EventWindow | None:
        return await self._dispatch(
            "read_event", signal, session_id=session_id, seq=seq, before=before, after=after
        )

    async def read_titles(
        self, session_ids: Sequence[str], *, signal: ExecutionSignal
    ) -> Mapping[str, TitleObservation]:
        return await self._dispatch("read_titles", signal, session_ids=list(session_ids))

    async def wait_for_seq(
        self,
        session_id: str,
        seq: int,
        *,
        signal: ExecutionSignal,
        scope: PartitionScope | None = None,
    ) -> None:
        return await self._dispatch(
            "wait_for_seq", signal, session_id=session_id, seq=seq, scope=scope
        )

    # --- defaults ---

    async def _default_read_titles(
        self, *, session_ids: list[str], signal: ExecutionSignal
    ) -> Mapping[str, TitleObservation]:
        return {
            sid: TitleObservation(header=self.headers[sid], title=self.titles.get(sid))
            for sid in session_ids
            if sid in self.headers
        }

    async def _default_wait_for_seq(
        self,
        *,
        session_id: str,
        seq: int,
        signal: ExecutionSignal,
        scope: PartitionScope | None = None,
    ) -> None:
        return None

    async def _default_latest_seq_of_type(
        self, *, session_id: str, event_type: str, signal: ExecutionSignal
    ) -> int | None:
        return None

    async def _default_search_sessions(self, **_: Any) -> SessionSearchPage:
        return SessionSearchPage(hits=(), next_cursor=None, generation=GEN)

    async def _default_search_events(self, *, session_id: str, **_: Any) -> EventSearchPage | None:
        if session_id not in self.headers:
            return None
        return EventSearchPage(
            header=self.headers[session_id], hits=(), next_cursor=None, generation=GEN
        )

    async def _default_generation(self, **_: Any) -> Generation:
        return GEN

    async def _default_lineage(self, *, session_id: str, **_: Any) -> Lineage | None:
        value = self.headers.get(session_id)
        if value is None:
            return None
        return Lineage(target=value, ancestors=(), missing_ancestor_id=None, descendants=())

    async def _default_event_relations(
        self, *, session_id: str, seq: int, **_: Any
    ) -> EventRelations | None:
        value = self.headers.get(session_id)
        if value is None:
            return None
        return EventRelations(header=value, event=summary(session_id, seq))

    async def _default_read_event(
        self, *, session_id: str, seq: int, **_: Any
    ) -> EventWindow | None:
        value = self.headers.get(session_id)
        if value is None:
            return None
        return EventWindow(header=value, target=stored(session_id, seq))


async def settle() -> None:
    """Let every ready task run a few steps (no timing involved)."""
    for _ in range(20):
        await asyncio.sleep(0)


def summary(
    session_id: str,
    seq: int,
    *,
    type_: str = "tool/result",
    surface: str = "tool",
    preview: str = "preview text",
) -> EventSummary:
    return EventSummary(
        session_id=session_id,
        seq=seq,
        event_id=f"e-{session_id}-{seq}",
        type=type_,
        surface=surface,  # type: ignore[arg-type]
        time_ms=1_796_200_000_000 + seq * 1000,
        preview=preview,
    )


def session_hit(value: SessionHeader, seq: int = 3) -> SessionHit:
    return SessionHit(
        header=value,
        event=summary(value.session_id, seq),
        excerpt=f"the [flaky] test in {value.session_id}",
        score=-1.0,
        matching_events=2,
    )


def event_hit(session_id: str, seq: int) -> EventHit:
    return EventHit(event=summary(session_id, seq), excerpt=f"[match] at {seq}", score=-1.0)


def stored(session_id: str, seq: int) -> StoredEvent:
    raw = event(
        session_id,
        seq,
        "tool/result",
        surface="tool",
        time="2026-12-02T09:25:49.123Z",
        payload={"output": "ok"},
    )
    return StoredEvent(summary=summary(session_id, seq), raw_json=raw.decode())
