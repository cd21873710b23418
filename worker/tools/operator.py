"""Operator queries: what ``sessionquery ui`` shows a person, scoped to one workspace.

An operator names the workspace (a cwd) it looks at; every read is then authorized exactly
as a model caller of that workspace would be (``workspace_access``: the session's recorded
cwd equal byte for byte, checked on the header read with the payload), and the searches
are the tools' own store calls with that cwd, so the SQL authorization and the search
semantics (partial matches, CJK, identifier parts) are the same ones. What differs from the
model's path: the identity is the named workspace, not a caller session; results are JSON
(the page renders them), cursors and offsets are visible, and nothing is rendered as text.

Each verb is declared once (``OperatorVerb``: admitted once, then run), and served by the
runtime like a tool: the same executor applies the deadline, the one error table and the
logging. Arguments are validated strictly (unknown fields refused). Failures are
``ToolError``s with the tools' codes and fixed messages; a missing session and another
workspace's answer the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from contracts.errors import ErrorCode
from worker.signals import ExecutionSignal
from worker.store import (
    CompiledQuery,
    EventFilter,
    EventSummary,
    LineageNode,
    LinkedEvent,
    SessionFilter,
    SessionHeader,
    SessionQueryService,
    TitleObservation,
    compile_query,
    split_excerpt,
)
from worker.store.operator import OperatorReads, SessionListFilter
from worker.tools.definitions import ToolError
from worker.tools.formatting import title_text
from worker.tools.operator_args import (
    TIMELINE_CUT,
    Args,
    DeadLettersArgs,
    EventArgs,
    LineageArgs,
    SearchArgs,
    SessionsArgs,
    TextArgs,
    TimelineArgs,
)
from worker.tools.titles import TitleInfo, title_info
from worker.tools.workspace_access import Caller, is_authorized, not_found, project_lineage


class OperatorService(SessionQueryService, OperatorReads, Protocol):
    """What the operator queries need of the store: both protocols (the SQLite store)."""


def _header(header: SessionHeader) -> dict[str, Any]:
    return asdict(header)


def _summary(event: EventSummary | None) -> dict[str, Any] | None:
    return None if event is None else asdict(event)


def _title(info: TitleInfo) -> dict[str, Any]:
    """The title the tools show (its own, else the first prompt: ``title_derived``)."""
    return {"title": title_text(info), "title_derived": info.derived}


def _row_title(title: str | None, first_prompt: str | None) -> TitleInfo:
    if title is not None and title.strip():
        return TitleInfo(title, True)
    return TitleInfo(first_prompt, True, derived=first_prompt is not None)


def _observed_title(observation: TitleObservation | None) -> dict[str, Any]:
    if observation is None:
        return {"title": None, "title_derived": False}
    return _title(title_info(observation, visible=True))


def _excerpt(excerpt: str) -> dict[str, Any]:
    """The excerpt as the tools write it, and as plain text with its matches' offsets: the
    exact inverse of the store's escaping, so a page highlights offsets and never has to
    tell a mark from a bracket of the text."""
    text, spans = split_excerpt(excerpt)
    return {"excerpt": excerpt, "excerpt_text": text, "highlights": [list(s) for s in spans]}


def _events(args: SearchArgs) -> EventFilter:
    return EventFilter(
        types=tuple(args.types) if args.types else None,
        surfaces=tuple(args.surfaces) if args.surfaces else None,
        time_from_ms=args.time_from_ms,
        time_to_ms=args.time_to_ms,
    )


def _tree(
    root: SessionHeader, descendants: tuple[LineageNode, ...]
) -> tuple[list[SessionHeader], list[tuple[str, str]]]:
    """The headers of a tree (root first) and its (parent, child) edges, without recursion."""
    nodes, edges = [root], []
    stack = [(root.session_id, n) for n in reversed(descendants)]
    while stack:
        parent, node = stack.pop()
        nodes.append(node.header)
        edges.append((parent, node.header.session_id))
        stack.extend((node.header.session_id, child) for child in reversed(node.children))
    return nodes, edges


@dataclass(frozen=True, slots=True)
class OperatorRequest:
    """One operator request, admitted once: its arguments validated into the verb's model
    (None when refused: ``refusal`` says why, answered where the run would start)."""

    arguments: Args | None
    refusal: ToolError | None = None


@dataclass(frozen=True, slots=True)
class OperatorVerb:
    """One operator verb, declared: ``admit`` validates its arguments once, ``run`` answers
    with its JSON result or a ``ToolError`` (known code, fixed text). ``searches``: it runs a
    search, so it takes the search lane's turn like every other search."""

    name: str
    model: type[Args]
    query: Callable[[Any, ExecutionSignal], Awaitable[dict[str, Any]]]
    searches: bool = False

    def admit(self, arguments: Mapping[str, Any]) -> OperatorRequest:
        """Never raises: a refusal rides in the value."""
        try:
            return OperatorRequest(self.model.model_validate(dict(arguments)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            return OperatorRequest(
                None, ToolError(ErrorCode.INVALID_ARGUMENTS, f"{where}: {first['msg']}")
            )

    async def run(self, request: OperatorRequest, signal: ExecutionSignal) -> dict[str, Any]:
        if request.refusal is not None:
            raise request.refusal
        return await self.query(request.arguments, signal)


class OperatorQueries:
    """The operator verbs over one store, each declared once (``verbs``)."""

    def __init__(self, store: OperatorService) -> None:
        self._store = store
        self.verbs: Mapping[str, OperatorVerb] = {
            verb.name: verb
            for verb in (
                OperatorVerb("workspaces", Args, self.workspaces),
                OperatorVerb("sessions", SessionsArgs, self.sessions),
                OperatorVerb("search", SearchArgs, self.search, searches=True),
                OperatorVerb("timeline", TimelineArgs, self.timeline),
                OperatorVerb("event", EventArgs, self.event),
                OperatorVerb("lineage", LineageArgs, self.lineage),
                OperatorVerb("relations", EventArgs, self.relations),
                OperatorVerb("text", TextArgs, self.text),
                OperatorVerb("deadletters", DeadLettersArgs, self.deadletters),
            )
        }

    async def workspaces(self, args: Args, signal: ExecutionSignal) -> dict[str, Any]:
        found = await self._store.workspaces(signal=signal)
        return {"workspaces": [asdict(w) for w in found]}

    async def sessions(self, args: SessionsArgs, signal: ExecutionSignal) -> dict[str, Any]:
        filters = SessionListFilter(
            availability=tuple(args.availability) if args.availability else None,
            created_from_ms=args.created_from_ms,
            created_to_ms=args.created_to_ms,
            updated_from_ms=args.updated_from_ms,
            updated_to_ms=args.updated_to_ms,
            parent_session_ids=tuple(args.parent_session_ids) if args.parent_session_ids else None,
            roots_only=args.roots_only,
            title_contains=args.title_contains or None,
        )
        page = await self._store.list_sessions(
            args.workspace,
            filters=filters,
            sort=args.sort,
            descending=args.descending,
            offset=args.offset,
            limit=args.limit,
            signal=signal,
        )
        caller = Caller("", args.workspace)
        rows = [
            {
                **_header(r.header),
                **_title(_row_title(r.title, r.first_prompt)),
                "source": r.source,
                "children": r.children,
            }
            for r in page.rows
            if is_authorized(caller, r.header)  # the SQL scoped it; the header says so too
        ]
        return {"sessions": rows, "total": page.total, "offset": page.offset}

    async def search(self, args: SearchArgs, signal: ExecutionSignal) -> dict[str, Any]:
        if args.workspace is None:
            # The tools never search across sessions without a cwd; neither does this.
            raise ToolError(ErrorCode.INVALID_ARGUMENTS, "Search needs a workspace with a cwd.")
        query = CompiledQuery(args.query, compile_query(args.query))  # refused here, once
        if args.session_id is not None:
            return await self._search_session(args, query, args.session_id, signal)
        sessions = SessionFilter(
            availability=tuple(args.availability) if args.availability else None
        )
        page = await self._store.search_sessions(
            query,
            cwd=args.workspace,
            sessions=sessions,
            events=_events(args),
            cursor=args.cursor,
            page_size=args.limit,
            signal=signal,
        )
        caller = Caller("", args.workspace)
        hits = [h for h in page.hits if is_authorized(caller, h.header)]
        titles = await self._store.read_titles([h.header.session_id for h in hits], signal=signal)
        return {
            "hits": [
                {
                    "session": _header(h.header),
                    **_observed_title(titles.get(h.header.session_id)),
                    "event": _summary(h.event),
                    **_excerpt(h.excerpt),
                    "matching_events": h.matching_events,
                }
                for h in hits
            ],
            "next_cursor": page.next_cursor,
            "partial": page.partial,
            "unmatched": list(page.unmatched),
            "filtered_out": page.filtered_out,
        }

    async def _search_session(
        self, args: SearchArgs, query: CompiledQuery, session_id: str, signal: ExecutionSignal
    ) -> dict[str, Any]:
        await self._authorized(args.workspace, session_id, signal)  # before any search runs
        page = await self._store.search_events(
            query,
            session_id=session_id,
            events=_events(args),
            cursor=args.cursor,
            page_size=args.limit,
            signal=signal,
        )
        if page is None or not is_authorized(Caller("", args.workspace), page.header):
            raise not_found(session_id)
        return {
            "session": _header(page.header),
            "hits": [{"event": _summary(h.event), **_excerpt(h.excerpt)} for h in page.hits],
            "next_cursor": page.next_cursor,
            "partial": page.partial,
            "unmatched": list(page.unmatched),
            "filtered_out": page.filtered_out,
        }

    async def _authorized(
        self, workspace: str | None, session_id: str, signal: ExecutionSignal
    ) -> SessionHeader:
        titles = await self._store.read_titles([session_id], signal=signal)
        observed = titles.get(session_id)
        if observed is None or not is_authorized(Caller("", workspace), observed.header):
            raise not_found(session_id)
        return observed.header

    async def timeline(self, args: TimelineArgs, signal: ExecutionSignal) -> dict[str, Any]:
        page = await self._store.timeline(
            args.session_id,
            from_seq=args.from_seq,
            limit=args.limit,
            cut=TIMELINE_CUT,
            signal=signal,
        )
        if page is None or not is_authorized(Caller("", args.workspace), page.header):
            raise not_found(args.session_id)
        titles = await self._store.read_titles([args.session_id], signal=signal)
        observed = titles.get(args.session_id)
        return {
            "session": _header(page.header),
            **_observed_title(observed),
            "events": [{**asdict(e), "cut": e.cut} for e in page.events],
            "next_seq": page.next_seq,
        }

    async def event(self, args: EventArgs, signal: ExecutionSignal) -> dict[str, Any]:
        chunk = await self._store.event_chunk(
            args.session_id, args.seq, offset=args.offset, size=args.size, signal=signal
        )
        if chunk is None or not is_authorized(Caller("", args.workspace), chunk.header):
            raise not_found(args.session_id)
        if not chunk.found:
            raise ToolError(
                ErrorCode.NOT_FOUND, f"Session {args.session_id} has no event at seq {args.seq}."
            )
        return {"seq": chunk.seq, "size": chunk.size, "offset": chunk.offset, "text": chunk.text}

    async def text(self, args: TextArgs, signal: ExecutionSignal) -> dict[str, Any]:
        """A part of one event's readable text, the query's matches in it as offsets."""
        found = await self._store.event_text(
            args.session_id,
            args.seq,
            query=args.query,
            offset=args.offset,
            size=args.size,
            signal=signal,
        )
        if found is None or not is_authorized(Caller("", args.workspace), found.header):
            raise not_found(args.session_id)
        if not found.found:
            raise ToolError(
                ErrorCode.NOT_FOUND, f"Session {args.session_id} has no event at seq {args.seq}."
            )
        return {
            "seq": found.seq,
            "type": found.type,
            "tool": found.tool,
            "size": found.size,
            "offset": found.offset,
            "text": found.text,
            "highlights": [list(m) for m in found.matches],
            "first_match": found.first_match,
        }

    async def lineage(self, args: LineageArgs, signal: ExecutionSignal) -> dict[str, Any]:
        """The whole visible tree the session belongs to: from its topmost ancestor in the
        workspace down (so forks and siblings show), the session marked as the target."""
        caller = Caller("", args.workspace)
        lineage = await self._store.lineage(args.session_id, signal=signal)
        if lineage is None:
            raise not_found(args.session_id)
        visible = project_lineage(caller, args.session_id, lineage)
        top = visible.ancestors[-1] if visible.ancestors else visible.target
        tree = visible
        if top is not visible.target:
            whole = await self._store.lineage(top.session_id, signal=signal)
            if whole is not None and is_authorized(caller, whole.target):
                tree = project_lineage(caller, top.session_id, whole)
        nodes, edges = _tree(tree.target, tree.descendants)
        if not any(n.session_id == args.session_id for n in nodes):  # changed between reads
            nodes, edges = _tree(visible.target, visible.descendants)
            chain = [visible.target, *visible.ancestors]
            nodes += chain[1:]
            # Nearest parent first: each header's parent is the next one.
            edges += [(chain[i + 1].session_id, chain[i].session_id) for i in range(len(chain) - 1)]
        titles = await self._store.read_titles([n.session_id for n in nodes], signal=signal)
        return {
            "target": args.session_id,
            "continues_hidden": visible.continues_hidden,
            "nodes": [{**_header(n), **_observed_title(titles.get(n.session_id))} for n in nodes],
            "edges": [{"parent": p, "child": c} for p, c in edges],
        }

    async def relations(self, args: EventArgs, signal: ExecutionSignal) -> dict[str, Any]:
        found = await self._store.event_relations(args.session_id, args.seq, signal=signal)
        caller = Caller("", args.workspace)
        if found is None or not is_authorized(caller, found.header):
            raise not_found(args.session_id)

        def linked(items: tuple[LinkedEvent, ...]) -> tuple[list[dict[str, Any]], int]:
            # Another workspace's end of a relation is counted, never named.
            shown = [
                {"session_id": i.ref.session_id, "seq": i.ref.seq, "event": _summary(i.event)}
                for i in items
                if i.header is not None and is_authorized(caller, i.header)
            ]
            return shown, len(items) - len(shown)

        cites, cites_hidden = linked(found.cites)
        cited_by, cited_by_hidden = linked(found.cited_by)
        return {
            "event": _summary(found.event),
            "replaces": [asdict(e) for e in found.replaces],
            "replaced_by": [asdict(e) for e in found.replaced_by],
            "cites": cites,
            "cites_hidden": cites_hidden,
            "cited_by": cited_by,
            "cited_by_hidden": cited_by_hidden,
        }

    async def deadletters(self, args: DeadLettersArgs, signal: ExecutionSignal) -> dict[str, Any]:
        found = await self._store.dead_letters(limit=args.limit, signal=signal)
        return {"dead_letters": [asdict(d) for d in found]}
