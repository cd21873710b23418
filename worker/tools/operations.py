"""The five workflows: validate, authorize, observe, re-check, fetch titles, render.

Searches run under a child of the execution signal carrying ``search_timeout_ms`` and
follow provider pages internally; the model never sees a cursor. The exact tools (trace,
event trace, read) pass the unchanged execution signal to every provider call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Generic, TypeVar

from pydantic_core import from_json

from contracts.envelope import Execution
from contracts.errors import ErrorCode
from worker.signals import ExecutionSignal
from worker.store import (
    EventHit,
    EventSearchPage,
    InvalidQuery,
    LinkedEvent,
    ServiceLimits,
    SessionHeader,
    SessionHit,
    SessionQueryService,
    SessionSearchPage,
    StoredEvent,
)
from worker.tools import input as args_input
from worker.tools.definitions import ToolConfig, ToolError
from worker.tools.presentation import (
    HIDDEN_PARENT,
    SearchOutcome,
    render_event_read,
    render_event_search,
    render_event_trace,
    render_session_search,
    render_trace,
)
from worker.tools.service_boundary import (
    GENERATION_CHANGED_MESSAGE,
    ServiceBoundary,
    tool_failed,
)
from worker.tools.workspace_access import (
    STEP_START,
    Caller,
    TitleInfo,
    TitleMismatch,
    authorized_subset,
    catch_up_caller,
    check_observation,
    event_not_found,
    fetch_titles,
    is_authorized,
    lineage_ids,
    not_found,
    preflight,
    project_lineage,
    redact_session_ids,
    resolve_caller,
    resolve_caller_and_target,
)

# A bound on provider round trips per search, beside the count cap and the deadline, so a
# provider that keeps returning empty pages with a cursor cannot hold the search lane.
MAX_PROVIDER_PAGES: Final = 1000

CHANGED_RESULT_MESSAGE: Final = (
    "A session in the result is no longer available in this workspace; retry the search."
)


PageT = TypeVar("PageT", SessionSearchPage, EventSearchPage)
HitT = TypeVar("HitT", SessionHit, EventHit)


@dataclass(frozen=True, slots=True)
class Collected(Generic[HitT]):
    hits: tuple[HitT, ...]
    capped: bool
    filtered_out: bool
    partial: bool = False  # best partial matches: no event held every word
    unmatched: tuple[str, ...] = ()  # query terms that match nothing in scope


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
    filtered_out = False
    capped = False
    partial = False
    unmatched: tuple[str, ...] = ()
    for number in range(MAX_PROVIDER_PAGES):
        page = await fetch(cursor)
        if epoch is None:
            epoch = page.generation.epoch
        elif page.generation.epoch != epoch:
            raise ToolError(ErrorCode.GENERATION_CHANGED, GENERATION_CHANGED_MESSAGE)
        page_hits = hits_of(page)
        if number == 0:
            partial, unmatched = page.partial, page.unmatched
            if not page_hits:
                filtered_out = page.filtered_out
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
    return Collected(
        hits=tuple(hits),
        capped=capped,
        filtered_out=filtered_out,
        partial=partial,
        unmatched=unmatched,
    )


def _validate_query(service: SessionQueryService, boundary: ServiceBoundary, query: str) -> None:
    """Check up front: an unsearchable query is an argument error, never "no results"."""
    try:
        service.check_query(query)
    except InvalidQuery as exc:
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else None
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS, message or "The query has nothing searchable."
        ) from None
    except Exception as exc:
        boundary.log_failure("check_query", exc)
        raise tool_failed() from None


@dataclass(frozen=True, slots=True)
class Operations:
    service: SessionQueryService
    boundary: ServiceBoundary
    config: ToolConfig

    # --- searches ---

    async def _caller_and_target(
        self, execution: Execution, signal: ExecutionSignal, requested_id: str | None
    ) -> tuple[Caller, str]:
        """The caller and the authorized direct target, in one provider call."""
        caller, target, _ = await resolve_caller_and_target(
            self.service,
            self.boundary,
            execution,
            signal,
            requested_id,
            catch_up_timeout_ms=self.config.catch_up_timeout_ms,
        )
        return caller, target

    async def _caller(self, execution: Execution, signal: ExecutionSignal) -> Caller:
        return await resolve_caller(
            self.service,
            self.boundary,
            execution,
            signal,
            catch_up_timeout_ms=self.config.catch_up_timeout_ms,
        )

    async def prepare_search(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        execution: Execution,
        signal: ExecutionSignal,
    ) -> None:
        """What a search needs before it may take the exclusive lane: its arguments checked
        (a bad one is answered at once) and its read-your-writes wait, under the search
        deadline. The run repeats both; by then they are quick."""
        if tool == "session_search":
            query = args_input.parse_arguments(
                tool, args_input.SessionSearchArguments, arguments
            ).query
        else:
            query = args_input.parse_arguments(
                tool, args_input.SessionEventSearchArguments, arguments
            ).query
        _validate_query(self.service, self.boundary, query)
        search_signal = self._search_signal(signal)
        try:
            await catch_up_caller(
                self.service,
                self.boundary,
                execution,
                search_signal,
                catch_up_timeout_ms=self.config.catch_up_timeout_ms,
            )
        finally:
            search_signal.close()

    def _search_signal(self, signal: ExecutionSignal) -> ExecutionSignal:
        return signal.child(timeout=self.config.search_timeout_ms / 1000)

    def _page_size(self, limits: ServiceLimits) -> int:
        return max(1, min(self.config.provider_page_size, limits.max_page_size))

    def _limits(self) -> ServiceLimits:
        try:
            limits = self.service.limits
        except Exception as exc:
            self.boundary.log_failure("limits", exc)
            raise tool_failed() from None
        if not isinstance(limits, ServiceLimits):
            raise tool_failed()
        return limits

    async def session_search(
        self, arguments: Mapping[str, Any], execution: Execution, signal: ExecutionSignal
    ) -> str:
        args = args_input.parse_arguments(
            "session_search", args_input.SessionSearchArguments, arguments
        )
        request = args_input.session_search_request(args)
        _validate_query(self.service, self.boundary, request.query)
        search_signal = self._search_signal(signal)
        try:
            return await self._session_search(request, execution, search_signal)
        finally:
            search_signal.close()

    async def _session_search(
        self,
        request: args_input.SessionSearchRequest,
        execution: Execution,
        signal: ExecutionSignal,
    ) -> str:
        service, boundary = self.service, self.boundary
        caller = await self._caller(execution, signal)
        if caller.cwd is None:
            return (
                "This session has no recorded workspace (cwd), so no other session is "
                "available to it. session_event_search can still search this session."
            )
        cwd = caller.cwd
        authorized_parents: tuple[str, ...] = ()
        if request.requested_parent_ids:
            authorized_parents = await authorized_subset(
                service, boundary, caller, request.requested_parent_ids, signal
            )
        parent_ids, include_roots = args_input.parent_clause(request, authorized_parents)
        sessions = replace(
            request.sessions,
            parent_session_ids=parent_ids,
            include_roots=include_roots,
            exclude_session_ids=(caller.session_id,),
        )
        page_size = self._page_size(self._limits())

        def fetch(cursor: str | None) -> Awaitable[SessionSearchPage]:
            return boundary.call(
                "search_sessions",
                signal,
                lambda: service.search_sessions(
                    request.query,
                    cwd=cwd,
                    sessions=sessions,
                    events=request.events,
                    cursor=cursor,
                    page_size=page_size,
                    signal=signal,
                ),
            )

        def visible_hits(page: SessionSearchPage) -> Sequence[SessionHit]:
            # Defence in depth: the provider confines by cwd in SQL; a hit that is not in
            # the workspace (or is the caller) is never rendered.
            return [
                hit
                for hit in page.hits
                if hit.header.session_id != caller.session_id
                and hit.event.session_id == hit.header.session_id
                and is_authorized(caller, hit.header)
            ]

        collected = await collect_pages(
            fetch,
            visible_hits,
            lambda hit: hit.header.session_id,
            limit=self.config.max_search_results,
        )
        hit_ids = [hit.header.session_id for hit in collected.hits]
        parent_ids_shown = [
            hit.header.parent_session_id
            for hit in collected.hits
            if hit.header.parent_session_id is not None
        ]
        try:
            titles = await fetch_titles(
                service,
                boundary,
                caller,
                [*hit_ids, *parent_ids_shown],
                signal,
                concurrency=self.config.persisted_inspect_concurrency,
                expect_visible=frozenset(hit_ids),
            )
        except TitleMismatch:
            raise ToolError(ErrorCode.NOT_FOUND, CHANGED_RESULT_MESSAGE) from None
        outcome = SearchOutcome(
            capped=collected.capped,
            filtered_out=collected.filtered_out,
            model_filters=args_input.has_model_filters(request.events, request.sessions),
            partial=collected.partial,
            unmatched=collected.unmatched,
        )
        return render_session_search(
            request.query,
            collected.hits,
            titles,
            outcome,
            limit=self.config.max_search_results,
        )

    async def session_event_search(
        self, arguments: Mapping[str, Any], execution: Execution, signal: ExecutionSignal
    ) -> str:
        args = args_input.parse_arguments(
            "session_event_search", args_input.SessionEventSearchArguments, arguments
        )
        _validate_query(self.service, self.boundary, args.query)
        search_signal = self._search_signal(signal)
        try:
            return await self._session_event_search(args, execution, search_signal)
        finally:
            search_signal.close()

    async def _session_event_search(
        self,
        args: args_input.SessionEventSearchArguments,
        execution: Execution,
        signal: ExecutionSignal,
    ) -> str:
        service, boundary = self.service, self.boundary
        caller, target = await self._caller_and_target(execution, signal, args.session_id)
        own = target == caller.session_id
        events = args_input.event_filter(
            event_types=args.event_types,
            event_surfaces=args.event_surfaces,
            event_after=args.event_after,
            event_before=args.event_before,
            from_seq=args.from_seq,
            to_seq=args.to_seq,
        )
        model_filters = args_input.has_model_filters(events)
        limit = self.config.max_search_results
        # The current step is out of scope, not filtered: a match there must not turn an
        # empty result into "the filters removed every match".
        scope_to_seq: int | None = None
        if own:
            scope_to_seq = await self._last_prior_seq(caller, execution, signal)
            if scope_to_seq is not None:
                seq_to = scope_to_seq if events.seq_to is None else min(events.seq_to, scope_to_seq)
                if seq_to < 1 or (events.seq_from is not None and events.seq_from > seq_to):
                    header = await preflight(service, boundary, caller, target, signal)
                    titles = await self._titles(caller, [target], target, signal)
                    nothing = SearchOutcome(capped=False, filtered_out=False, model_filters=False)
                    return render_event_search(
                        args.query, header, (), titles, nothing, limit=limit, own_session=True
                    )
        page_size = self._page_size(self._limits())
        headers: list[SessionHeader] = []

        async def fetch(cursor: str | None) -> EventSearchPage:
            page = await boundary.call(
                "search_events",
                signal,
                lambda: service.search_events(
                    args.query,
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

        collected = await collect_pages(fetch, own_hits, lambda hit: hit.event.seq, limit=limit)
        titles = await self._titles(caller, [target], target, signal)
        outcome = SearchOutcome(
            capped=collected.capped,
            filtered_out=collected.filtered_out,
            model_filters=model_filters,
            partial=collected.partial,
            unmatched=collected.unmatched,
        )
        return render_event_search(
            args.query, headers[-1], collected.hits, titles, outcome, limit=limit, own_session=own
        )

    async def _last_prior_seq(
        self, caller: Caller, execution: Execution, signal: ExecutionSignal
    ) -> int | None:
        """The last seq before the current step, or None when there is no step to exclude."""
        if execution.step_start_seq is not None:
            return execution.step_start_seq - 1
        latest = await self.boundary.call(
            "latest_seq_of_type",
            signal,
            lambda: self.service.latest_seq_of_type(caller.session_id, STEP_START, signal=signal),
        )
        return None if latest is None else latest - 1

    # --- exact observations ---

    async def session_trace(
        self, arguments: Mapping[str, Any], execution: Execution, signal: ExecutionSignal
    ) -> str:
        args = args_input.parse_arguments(
            "session_trace", args_input.SessionTraceArguments, arguments
        )
        service, boundary = self.service, self.boundary
        caller, target = await self._caller_and_target(execution, signal, args.session_id)
        lineage = await boundary.call(
            "lineage", signal, lambda: service.lineage(target, signal=signal)
        )
        if lineage is None:
            raise not_found(target)
        visible = project_lineage(caller, target, lineage)
        titles = await self._titles(caller, lineage_ids(visible), target, signal)
        return render_trace(visible, titles)

    async def session_event_trace(
        self, arguments: Mapping[str, Any], execution: Execution, signal: ExecutionSignal
    ) -> str:
        args = args_input.parse_arguments(
            "session_event_trace", args_input.SessionEventTraceArguments, arguments
        )
        service, boundary = self.service, self.boundary
        caller, target = await self._caller_and_target(execution, signal, args.session_id)
        relations = await boundary.call(
            "event_relations",
            signal,
            lambda: service.event_relations(target, args.seq, signal=signal),
        )
        check_observation(caller, target, relations.header if relations is not None else None)
        assert relations is not None
        event = relations.event
        if event is None or event.session_id != target or event.seq != args.seq:
            raise event_not_found(target, args.seq)

        def visible(links: Sequence[LinkedEvent]) -> list[LinkedEvent]:
            # Missing and foreign sessions are omitted alike, without their ids.
            return [
                link
                for link in links
                if link.header is not None
                and link.header.session_id == link.ref.session_id
                and is_authorized(caller, link.header)
                and (link.event is None or link.event.session_id == link.ref.session_id)
            ]

        same_session = [
            e for e in (*relations.replaces, *relations.replaced_by) if e.session_id != target
        ]
        if same_session:
            raise not_found(target)  # a replacement from another session: a broken observation
        cites, cited_by = visible(relations.cites), visible(relations.cited_by)
        ids = [target, *(link.ref.session_id for link in (*cites, *cited_by))]
        titles = await self._titles(caller, ids, target, signal)
        return render_event_trace(relations, event, cites, cited_by, titles)

    async def session_event_read(
        self, arguments: Mapping[str, Any], execution: Execution, signal: ExecutionSignal
    ) -> str:
        args = args_input.parse_arguments(
            "session_event_read", args_input.SessionEventReadArguments, arguments
        )
        window_limit = self._limits().max_event_window
        before, after = args.before or 0, args.after or 0
        for name, value in (("before", before), ("after", after)):
            if value > window_limit:
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"Invalid arguments for session_event_read: '{name}' must be at most "
                    f"{window_limit} (the event window limit).",
                )
        service, boundary = self.service, self.boundary
        caller, target = await self._caller_and_target(execution, signal, args.session_id)
        window = await boundary.call(
            "read_event",
            signal,
            lambda: service.read_event(target, args.seq, before=before, after=after, signal=signal),
        )
        check_observation(caller, target, window.header if window is not None else None)
        assert window is not None
        stored = window.target
        if stored is None:
            raise event_not_found(target, args.seq)
        if stored.summary.seq != args.seq or any(
            e.summary.session_id != target for e in (stored, *window.before, *window.after)
        ):
            raise not_found(target)  # events of another session: a broken observation
        titles = await self._titles(caller, [target], target, signal)
        # The exact JSON may name other sessions (its parent, cited sources); those outside
        # the workspace (or missing, alike) are never printed.
        referenced = _referenced_sessions(stored, window.header.parent_session_id)
        if referenced:
            visible = await authorized_subset(service, boundary, caller, referenced, signal)
            hidden = frozenset(referenced).difference(visible)
            raw = redact_session_ids(stored.raw_json, hidden, HIDDEN_PARENT)
            stored = replace(stored, raw_json=raw)
        return render_event_read(window, stored, titles, before=before, after=after)

    async def _titles(
        self,
        caller: Caller,
        session_ids: Sequence[str],
        target: str,
        signal: ExecutionSignal,
    ) -> dict[str, TitleInfo]:
        """Titles of sessions already authorized; a header that no longer is fails closed."""
        try:
            return await fetch_titles(
                self.service,
                self.boundary,
                caller,
                session_ids,
                signal,
                concurrency=self.config.persisted_inspect_concurrency,
                expect_visible=frozenset(session_ids),
            )
        except TitleMismatch:
            raise not_found(target) from None


def _referenced_sessions(stored: StoredEvent, parent_session_id: str | None) -> tuple[str, ...]:
    """Other sessions the event's exact JSON names: a session/start's parent, cited sources."""
    own = stored.summary.session_id
    ids: list[str] = []
    if stored.summary.type == "session/start" and parent_session_id:
        ids.append(parent_session_id)
    try:
        raw = from_json(stored.raw_json)
    except ValueError:
        raw = None
    cites = raw.get("cites") if isinstance(raw, dict) else None
    for cite in cites if isinstance(cites, list) else ():
        if isinstance(cite, dict) and isinstance(cite.get("session_id"), str):
            ids.append(cite["session_id"])
    return tuple(sid for sid in dict.fromkeys(ids) if sid != own)
