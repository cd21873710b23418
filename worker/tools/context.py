"""The five workflows' shared steps: identity, limits, titles, the search deadline, paging.

Searches (``searches``) run under a child of the execution signal carrying
``search_timeout_ms`` and follow provider pages internally (``collect_pages``); the model
never sees a cursor. The exact tools (``exact_tools``: trace, event trace, read) pass the
unchanged execution signal to every provider call. Every provider call goes through the
service boundary, which alone turns a provider's error into a model-facing one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from contracts.partitions import PartitionScope
from worker.config import ToolConfig
from worker.signals import ExecutionSignal
from worker.store import (
    CompiledQuery,
    EventHit,
    EventSearchPage,
    GenerationChanged,
    ServiceLimits,
    SessionHit,
    SessionQueryService,
    SessionSearchPage,
    TitleObservation,
    compile_query,
)
from worker.tools.definitions import Admitted, Caller
from worker.tools.errors import ERROR_TABLE, tool_failed
from worker.tools.service_boundary import ServiceBoundary
from worker.tools.titles import TitleInfo, TitleMismatch, fetch_titles
from worker.tools.workspace_access import (
    catch_up_caller,
    not_found,
    resolve_caller,
    resolve_caller_and_target,
)

# A bound on provider round trips per search, beside the count cap and the deadline, so a
# provider that keeps returning empty pages with a cursor cannot hold the search lane.
MAX_PROVIDER_PAGES: Final = 1000


T = TypeVar("T")
PageT = TypeVar("PageT", SessionSearchPage, EventSearchPage)
HitT = TypeVar("HitT", SessionHit, EventHit)


@dataclass(frozen=True, slots=True)
class Collected(Generic[HitT]):
    hits: tuple[HitT, ...]
    capped: bool
    filtered_out: bool
    partial: bool = False  # best partial matches: no event held every word
    unmatched: tuple[str, ...] = ()  # query terms that match nothing in scope
    time_readings: tuple[str, ...] = ()  # how the query's dates were read


async def collect_pages(
    fetch: Callable[[str | None], Awaitable[PageT]],
    hits_of: Callable[[PageT], Sequence[HitT]],
    key: Callable[[HitT], Hashable],
    *,
    limit: int,
) -> Collected[HitT]:
    """Follow provider cursors while the epoch holds, deduplicated, up to ``limit`` hits."""
    cursor: str | None = None
    epoch: int | None = None
    seen: set[Hashable] = set()
    hits: list[HitT] = []
    filtered_out = capped = partial = False
    unmatched: tuple[str, ...] = ()
    time_readings: tuple[str, ...] = ()
    for number in range(MAX_PROVIDER_PAGES):
        page = await fetch(cursor)
        if epoch is None:
            epoch = page.generation.epoch
        elif page.generation.epoch != epoch:
            raise ERROR_TABLE[GenerationChanged].error()
        page_hits = hits_of(page)
        if number == 0:
            partial, unmatched = page.partial, page.unmatched
            time_readings = page.time_readings
            filtered_out = not page_hits and page.filtered_out
        for hit in page_hits:
            identity = key(hit)
            if identity in seen:
                continue  # a later page may repeat a hit whose rank moved
            if len(hits) >= limit:
                capped = True
                break
            seen.add(identity)
            hits.append(hit)
        cursor = page.next_cursor
        if capped or cursor is None:
            break
        if len(hits) >= limit:
            capped = True  # more pages exist beyond the cap
            break
    else:
        capped = True
    return Collected(tuple(hits), capped, filtered_out, partial, unmatched, time_readings)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """The provider, its boundary and the tools' configuration, with the steps every
    workflow shares. The five workflows take it as their first argument."""

    service: SessionQueryService
    boundary: ServiceBoundary
    config: ToolConfig
    # The partition the tools' endpoint serves (None: unpartitioned subjects).
    partition: PartitionScope | None = None

    async def caller_and_target(
        self, admitted: Admitted[Any], signal: ExecutionSignal, requested_id: str | None
    ) -> tuple[Caller, str]:
        """The caller and the authorized direct target, in one provider call."""
        caller, target, _ = await resolve_caller_and_target(
            self.service,
            self.boundary,
            admitted,
            signal,
            requested_id,
            catch_up_timeout_ms=self.config.catch_up_timeout_ms,
            partition=self.partition,
        )
        admitted.memo.caller = caller
        return caller, target

    async def caller(self, admitted: Admitted[Any], signal: ExecutionSignal) -> Caller:
        """The request's caller, resolved on first use and kept for the request."""
        memo = admitted.memo
        if memo.caller is None:
            memo.caller = await resolve_caller(
                self.service,
                self.boundary,
                admitted,
                signal,
                catch_up_timeout_ms=self.config.catch_up_timeout_ms,
                partition=self.partition,
            )
        return memo.caller

    def compile_query(self, query: str) -> CompiledQuery:
        """Compiled once, at admission, by the pure function (the store is asked only with
        the compiled query): an unsearchable query is an argument error, never "no
        results"."""
        return self.boundary.check(
            "compile_query", lambda: CompiledQuery(query, compile_query(query))
        )

    async def prepare_search(self, admitted: Admitted[Any], signal: ExecutionSignal) -> None:
        """What a search needs before it may take the exclusive lane: its admission's
        refusal answered at once, and its read-your-writes wait, under the search deadline.
        The run does not wait again (``CallerMemo.caught_up``)."""
        admitted.checked()
        await self.under_search_deadline(
            signal,
            lambda search_signal: catch_up_caller(
                self.service,
                self.boundary,
                admitted,
                search_signal,
                catch_up_timeout_ms=self.config.catch_up_timeout_ms,
                partition=self.partition,
            ),
        )
        admitted.memo.caught_up = True

    async def under_search_deadline(
        self, signal: ExecutionSignal, work: Callable[[ExecutionSignal], Awaitable[T]]
    ) -> T:
        """``work`` under the search deadline (a child of ``signal``)."""
        search_signal = signal.child(timeout=self.config.search_timeout_ms / 1000)
        try:
            return await work(search_signal)
        finally:
            search_signal.close()

    def page_size(self) -> int:
        limits = self.limits()
        return max(1, min(self.config.provider_page_size, limits.max_page_size))

    def limits(self) -> ServiceLimits:
        limits = self.boundary.check("limits", lambda: self.service.limits)
        if not isinstance(limits, ServiceLimits):
            raise tool_failed()
        return limits

    async def titles(
        self,
        caller: Caller,
        session_ids: Sequence[str],
        signal: ExecutionSignal,
        *,
        fail_as: str | None = None,
        expect_visible: Sequence[str] | None = None,
        held: Mapping[str, TitleObservation] | None = None,
    ) -> dict[str, TitleInfo]:
        """Titles of sessions already authorized (``expect_visible``, default all of them);
        one that no longer is fails closed: not found for ``fail_as`` when given, else
        ``TitleMismatch`` (a NOT_FOUND ``ToolError`` of its own). ``held``: titles the
        payload's own observation carried (``fetch_titles``)."""
        visible = session_ids if expect_visible is None else expect_visible
        concurrency = self.config.persisted_inspect_concurrency
        workers = self.limits().title_read_workers
        try:
            return await fetch_titles(
                self.service,
                self.boundary,
                caller,
                session_ids,
                signal,
                concurrency=min(concurrency, workers) if workers else concurrency,
                expect_visible=frozenset(visible),
                held=held,
            )
        except TitleMismatch:
            if fail_as is None:
                raise
            raise not_found(fail_as) from None
