"""The two search workflows: validate, authorize, page through the provider, title, render.

Both run under the search deadline (a child of the execution signal) and follow provider
pages up to ``max_search_results``; the hits are re-checked against the caller's workspace
before anything of them is rendered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import Any, Final

from contracts.envelope import Execution
from worker.signals import ExecutionSignal
from worker.store import (
    CompiledQuery,
    EventFilter,
    EventHit,
    EventSearchPage,
    SessionHeader,
    SessionHit,
    SessionSearchPage,
)
from worker.tools import filters
from worker.tools import input as args_input
from worker.tools.context import Collected, ToolContext, collect_pages
from worker.tools.definitions import Admitted
from worker.tools.presentation import SearchOutcome, render_event_search, render_session_search
from worker.tools.workspace_access import (
    STEP_START,
    Caller,
    authorized_subset,
    check_observation,
    is_authorized,
    preflight,
)

NO_WORKSPACE_MESSAGE: Final = (
    "This session has no recorded workspace (cwd), so no other session is "
    "available to it. session_event_search can still search this session."
)


def _outcome(collected: Collected[Any], model_filters: bool) -> SearchOutcome:
    return SearchOutcome(
        capped=collected.capped,
        filtered_out=collected.filtered_out,
        model_filters=model_filters,
        partial=collected.partial,
        unmatched=collected.unmatched,
        time_readings=collected.time_readings,
    )


# --- session_search ---


async def session_search(
    ctx: ToolContext, admitted: Admitted[filters.SessionSearchRequest], signal: ExecutionSignal
) -> str:
    request = admitted.checked()
    return await ctx.under_search_deadline(
        signal, lambda search_signal: _session_search(ctx, admitted, request, search_signal)
    )


async def _session_search(
    ctx: ToolContext,
    admitted: Admitted[filters.SessionSearchRequest],
    request: filters.SessionSearchRequest,
    signal: ExecutionSignal,
) -> str:
    caller = await ctx.caller(admitted, signal)
    if caller.cwd is None:
        return NO_WORKSPACE_MESSAGE
    scoped = await _authorized_request(ctx, caller, request, signal)
    query = _compiled(admitted)
    collected = await _collect_sessions(ctx, caller, caller.cwd, query, scoped, signal)
    hit_ids = [hit.header.session_id for hit in collected.hits]
    parent_ids = [
        hit.header.parent_session_id
        for hit in collected.hits
        if hit.header.parent_session_id is not None
    ]
    # Only the hits must still be visible (a hidden parent is shown as hidden); a hit that
    # no longer is fails the search as changed (TitleMismatch).
    titles = await ctx.titles(caller, [*hit_ids, *parent_ids], signal, expect_visible=hit_ids)
    model_filters = filters.has_model_filters(request.events, request.sessions)
    return render_session_search(
        request.query,
        collected.hits,
        titles,
        _outcome(collected, model_filters),
        limit=ctx.config.max_search_results,
    )


async def _authorized_request(
    ctx: ToolContext,
    caller: Caller,
    request: filters.SessionSearchRequest,
    signal: ExecutionSignal,
) -> filters.SessionSearchRequest:
    """The request as the provider may see it: parents narrowed to the authorized ones,
    the caller's own session excluded (``has_model_filters`` is asked of the original)."""
    authorized_parents: tuple[str, ...] = ()
    if request.requested_parent_ids:
        authorized_parents = await authorized_subset(
            ctx.service, ctx.boundary, caller, request.requested_parent_ids, signal
        )
    parent_ids, include_roots = filters.parent_clause(request, authorized_parents)
    sessions = replace(
        request.sessions,
        parent_session_ids=parent_ids,
        include_roots=include_roots,
        exclude_session_ids=(caller.session_id,),
    )
    return replace(request, sessions=sessions)


async def _collect_sessions(
    ctx: ToolContext,
    caller: Caller,
    cwd: str,
    query: CompiledQuery,
    request: filters.SessionSearchRequest,
    signal: ExecutionSignal,
) -> Collected[SessionHit]:
    service, page_size = ctx.service, ctx.page_size()

    def fetch(cursor: str | None) -> Awaitable[SessionSearchPage]:
        return ctx.boundary.call(
            "search_sessions",
            signal,
            lambda: service.search_sessions(
                query,
                cwd=cwd,
                sessions=request.sessions,
                events=request.events,
                cursor=cursor,
                page_size=page_size,
                signal=signal,
            ),
        )

    def visible_hits(page: SessionSearchPage) -> Sequence[SessionHit]:
        # Defence in depth: the provider confines by cwd in SQL; a hit that is not in the
        # workspace (or is the caller) is never rendered.
        return [
            hit
            for hit in page.hits
            if hit.header.session_id != caller.session_id
            and hit.event.session_id == hit.header.session_id
            and is_authorized(caller, hit.header)
        ]

    return await collect_pages(
        fetch,
        visible_hits,
        lambda hit: hit.header.session_id,
        limit=ctx.config.max_search_results,
    )


# --- session_event_search ---


async def session_event_search(
    ctx: ToolContext,
    admitted: Admitted[args_input.SessionEventSearchArguments],
    signal: ExecutionSignal,
) -> str:
    args = admitted.checked()
    return await ctx.under_search_deadline(
        signal, lambda search_signal: _session_event_search(ctx, admitted, args, search_signal)
    )


async def _session_event_search(
    ctx: ToolContext,
    admitted: Admitted[args_input.SessionEventSearchArguments],
    args: args_input.SessionEventSearchArguments,
    signal: ExecutionSignal,
) -> str:
    caller, target = await ctx.caller_and_target(admitted, signal, args.session_id)
    execution = admitted.execution
    own = target == caller.session_id
    events = filters.event_filter(
        event_types=args.event_types,
        event_surfaces=args.event_surfaces,
        event_after=args.event_after,
        event_before=args.event_before,
        from_seq=args.from_seq,
        to_seq=args.to_seq,
    )
    limit = ctx.config.max_search_results
    # The current step is out of scope, not filtered: a match there must not turn an
    # empty result into "the filters removed every match".
    scope_to_seq = await _last_prior_seq(ctx, caller, execution, signal) if own else None
    if scope_to_seq is not None and _nothing_before(events, scope_to_seq):
        header = await preflight(ctx.service, ctx.boundary, caller, target, signal)
        titles = await ctx.titles(caller, [target], signal, fail_as=target)
        nothing = SearchOutcome(capped=False, filtered_out=False, model_filters=False)
        return render_event_search(
            args.query, header, (), titles, nothing, limit=limit, own_session=True
        )
    headers: list[SessionHeader] = []
    collected = await _collect_events(
        ctx, caller, target, _compiled(admitted), events, scope_to_seq, headers, signal
    )
    titles = await ctx.titles(caller, [target], signal, fail_as=target)
    outcome = _outcome(collected, filters.has_model_filters(events))
    return render_event_search(
        args.query, headers[-1], collected.hits, titles, outcome, limit=limit, own_session=own
    )


def _compiled(admitted: Admitted[Any]) -> CompiledQuery:
    """The query compiled at admission (a search is never admitted without one)."""
    assert admitted.query is not None
    return admitted.query


def _nothing_before(events: EventFilter, scope_to_seq: int) -> bool:
    """Whether the seq range left before the current step is empty."""
    seq_to = scope_to_seq if events.seq_to is None else min(events.seq_to, scope_to_seq)
    return seq_to < 1 or (events.seq_from is not None and events.seq_from > seq_to)


async def _collect_events(
    ctx: ToolContext,
    caller: Caller,
    target: str,
    query: CompiledQuery,
    events: EventFilter,
    scope_to_seq: int | None,
    headers: list[SessionHeader],
    signal: ExecutionSignal,
) -> Collected[EventHit]:
    """The target's hits; each page's header is re-checked and appended to ``headers``."""
    service, page_size = ctx.service, ctx.page_size()

    async def fetch(cursor: str | None) -> EventSearchPage:
        page = await ctx.boundary.call(
            "search_events",
            signal,
            lambda: service.search_events(
                query,
                session_id=target,
                events=events,
                cursor=cursor,
                page_size=page_size,
                signal=signal,
                scope_to_seq=scope_to_seq,
            ),
        )
        # Re-check the header observed with *this* page before anything from it is used.
        check_observation(caller, target, page.header if page is not None else None)
        assert page is not None
        headers.append(page.header)
        return page

    def own_hits(page: EventSearchPage) -> Sequence[EventHit]:
        return [hit for hit in page.hits if hit.event.session_id == target]

    return await collect_pages(
        fetch, own_hits, lambda hit: hit.event.seq, limit=ctx.config.max_search_results
    )


async def _last_prior_seq(
    ctx: ToolContext, caller: Caller, execution: Execution, signal: ExecutionSignal
) -> int | None:
    """The last seq before the current step, or None when there is no step to exclude."""
    if execution.step_start_seq is not None:
        return execution.step_start_seq - 1
    latest = await ctx.boundary.call(
        "latest_seq_of_type",
        signal,
        lambda: ctx.service.latest_seq_of_type(caller.session_id, STEP_START, signal=signal),
    )
    return None if latest is None else latest - 1
