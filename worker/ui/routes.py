"""The UI's pages as routes: a request's query string read and checked, the operator
verbs asked, the page rendered (``pages``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, Final

from worker.ui import pages
from worker.ui.client import OperatorClient, OperatorError

SESSIONS_PAGE: Final = 50
TIMELINE_PAGE: Final = 50
# Parts, in code points (docs/ui.md, "Parts"): part k of a text starts at k × its size.
CHUNK_CHARS: Final = 65_536  # a part of an event's exact JSON
TEXT_PART_CHARS: Final = 16_384  # a part of an event's readable text on its page
# The part of a search hit's event the timeline shows: a divisor of TEXT_PART_CHARS, so its
# parts' boundaries are the event page's and more.
FOCUS_CHARS: Final = 4_096
SORT_KEYS: Final = frozenset({"updated", "created", "events", "title"})

Route = Callable[[OperatorClient, Mapping[str, str]], str]


def _workspace(q: Mapping[str, str]) -> str | None:
    if q.get("nocwd") == "1":
        return None
    if "ws" not in q:
        raise OperatorError(HTTPStatus.BAD_REQUEST, "Which workspace? (ws= is missing)")
    return q["ws"]


def _int(q: Mapping[str, str], key: str, default: int, low: int = 0) -> int:
    try:
        return max(low, int(q.get(key, default)))
    except ValueError:
        raise OperatorError(HTTPStatus.BAD_REQUEST, f"{key} must be a number") from None


def _day_ms(value: str | None, *, end: bool) -> int | None:
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise OperatorError(HTTPStatus.BAD_REQUEST, "dates are YYYY-MM-DD") from None
    return int(day.timestamp() * 1000) + (86_399_999 if end else 0)


def _required(q: Mapping[str, str], key: str) -> str:
    if not q.get(key):
        raise OperatorError(HTTPStatus.BAD_REQUEST, f"{key}= is missing")
    return q[key]


def workspaces_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    return pages.workspaces(client.ask("workspaces"))


def sessions_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace = _workspace(q)
    sort = q.get("sort", "updated") if q.get("sort") in SORT_KEYS else "updated"
    args: dict[str, Any] = {
        "sort": sort,
        "desc": 0 if q.get("desc") == "0" else 1,
        "limit": SESSIONS_PAGE,
        "availability": q.get("availability") or None,
        "title": q.get("title") or None,
        "roots": 1 if q.get("roots") == "1" else None,
        "updated_from": q.get("updated_from") or None,
        "updated_to": q.get("updated_to") or None,
    }
    found = client.ask(
        "sessions",
        workspace=workspace,
        sort=sort,
        descending=args["desc"] == 1,
        offset=_int(q, "offset", 0),
        limit=SESSIONS_PAGE,
        availability=[args["availability"]] if args["availability"] else None,
        title_contains=args["title"],
        roots_only=bool(args["roots"]),
        updated_from_ms=_day_ms(args["updated_from"], end=False),
        updated_to_ms=_day_ms(args["updated_to"], end=True),
    )
    return pages.sessions(workspace, {k: v for k, v in args.items() if v is not None}, found)


def _search_filters(q: Mapping[str, str]) -> dict[str, str]:
    """The surface and event type asked for (another type typed in wins over the list)."""
    filters = {"surface": q.get("surface", ""), "type": q.get("other_type") or q.get("type", "")}
    return {k: v.strip() for k, v in filters.items() if v.strip()}


def _search_refusal(filters: Mapping[str, str], query: str) -> str | None:
    if not query:
        return "Type something to search for."
    if len(query) > pages.MAX_QUERY:
        return f"The query is {len(query):,} characters long; the most is {pages.MAX_QUERY:,}."
    if filters.get("surface", "") not in ("", *pages.SURFACES):
        return "Choose a surface from the list."
    kind = filters.get("type", "")
    if kind and not re.fullmatch(pages.EVENT_TYPE_PATTERN, kind):
        return (f"{kind[:60]!r} is not an event type: lower-case words, digits and . _ -,"
                " parts separated by / (for example tool/result).")  # fmt: skip
    return None


def search_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, query = _workspace(q), q.get("q", "").strip()
    session_id = q.get("session") or None
    filters = _search_filters(q)
    shown_before = _int(q, "n", 0)
    refusal = _search_refusal(filters, query)
    try:
        if refusal is not None:
            raise OperatorError(HTTPStatus.BAD_REQUEST, refusal)
        found = client.ask(
            "search",
            workspace=workspace,
            query=query,
            session_id=session_id,
            cursor=q.get("cursor"),
            surfaces=[filters["surface"]] if "surface" in filters else None,
            types=[filters["type"]] if "type" in filters else None,
        )
    except OperatorError as exc:
        if exc.status != HTTPStatus.BAD_REQUEST:
            raise
        # The search box stays, with what was typed, above the reason.
        shown = pages.search_refused(workspace, query, session_id, filters, exc.message)
        raise OperatorError(exc.status, exc.message, shown=shown) from None
    return pages.search(workspace, query, session_id, found, filters, shown_before)


def session_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, sid = _workspace(q), _required(q, "id")
    # ``at``: an event to show (a search hit): its page starts a few events before it,
    # and with ``q`` it shows the part of the event that holds the match, highlighted.
    at = _int(q, "at", 0) or None
    start = _int(q, "from", max(1, (at or 1) - 5), 1)
    found = client.ask(
        "timeline", workspace=workspace, session_id=sid, from_seq=start, limit=TIMELINE_PAGE
    )
    focus = None
    if at is not None and any(e["seq"] == at for e in found["events"]):
        focus = _focus(client, workspace, sid, at, q.get("q") or None)
    return pages.timeline(workspace, found, start, TIMELINE_PAGE, focus)


def _focus(
    client: OperatorClient, workspace: str | None, sid: str, seq: int, query: str | None
) -> dict[str, Any]:
    """The part of event ``seq`` that holds the match the hit showed; a query the search
    cannot use (only punctuation, say) marks and unfolds the event all the same."""
    ask = {"workspace": workspace, "session_id": sid, "seq": seq, "size": FOCUS_CHARS}
    try:
        focus = client.ask("text", **ask, query=query)
    except OperatorError as exc:
        if exc.status != HTTPStatus.BAD_REQUEST or query is None:
            raise
        focus, query = client.ask("text", **ask), None
    focus["query"] = query
    return focus


def event_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    """One event read in parts: its readable text (``view=text``, the default; with ``q``
    its matches highlighted) or its exact JSON (``view=json``)."""
    workspace, sid = _workspace(q), _required(q, "id")
    seq = _int(q, "seq", 1, 1)
    view = "json" if q.get("view") == "json" else "text"
    query = q.get("q") or None
    if view == "json":
        # Any offset asked for shows the part holding it, from that part's boundary.
        offset = _int(q, "offset", 0) // CHUNK_CHARS * CHUNK_CHARS
        chunk = client.ask(
            "event", workspace=workspace, session_id=sid, seq=seq, offset=offset,
            size=CHUNK_CHARS,
        )  # fmt: skip
        part_size = CHUNK_CHARS
    else:
        # The worker answers with the part holding the offset (or the match), from its start.
        at = _int(q, "offset", 0) if "offset" in q or not query else None
        chunk = client.ask(
            "text", workspace=workspace, session_id=sid, seq=seq, query=query, offset=at,
            size=TEXT_PART_CHARS,
        )  # fmt: skip
        part_size = TEXT_PART_CHARS
    relations = client.ask("relations", workspace=workspace, session_id=sid, seq=seq)
    return pages.event(
        workspace, sid, seq, chunk, relations, view=view, query=query, part_size=part_size
    )


def lineage_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, sid = _workspace(q), _required(q, "id")
    return pages.lineage(workspace, client.ask("lineage", workspace=workspace, session_id=sid))


def operations_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    return pages.operations(client.ask("operations"))


ROUTES: Final[dict[str, Route]] = {
    "/": workspaces_page,
    "/sessions": sessions_page,
    "/search": search_page,
    "/session": session_page,
    "/event": event_page,
    "/lineage": lineage_page,
    "/ops": operations_page,
}
