"""Search results: the tools' search, the matched words highlighted at the offsets the
worker sent, each hit linked to its match in the timeline (``#match``: the event's first
highlighted word, scrolled into view), numbered across pages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.events import KNOWN_EVENT_TYPES
from worker.ui.pages._markup import (
    a,
    esc,
    href,
    marked,
    page,
    title_label,
    when,
    ws_label,
    ws_query,
)
from worker.ui.pages.sessions import search_form


def _crumbs(workspace: str | None) -> list[tuple[str, str | None]]:
    return [("Workspaces", "/"), (ws_label(workspace), href("/sessions", **ws_query(workspace)))]


def search_refused(
    workspace: str | None,
    query: str,
    session_id: str | None,
    filters: Mapping[str, str],
    message: str,
) -> str:
    """A search that could not run: the reason, under the search box as it was typed."""
    body = search_form(workspace, query, session_id, filters) + f"<p class=error>{esc(message)}</p>"
    return page("Search", body, crumbs=_crumbs(workspace))


def _hit(workspace: str | None, session_id: str | None, query: str, hit: Mapping[str, Any]) -> str:
    event = hit["event"]
    session = hit.get("session") or {"session_id": session_id}
    sid, seq = session["session_id"], int(event["seq"])
    link = href("/session", **ws_query(workspace), id=sid, at=seq, q=query)
    title = "" if session_id else f"{title_label(hit)} "
    matching = (
        f" · {esc(hit['matching_events'])} matching events" if "matching_events" in hit else ""
    )
    return (
        f'<li class=hit><a href="{link}#match">{title}<code class=sid>{esc(sid)}</code>'
        f" seq {seq}</a> <span class=type>{esc(event['type'])}</span>"
        f" <span class=time>{esc(when(event['time_ms']))}</span>{matching}"
        f"<p class=excerpt>{marked(hit['excerpt_text'], hit['highlights'])}</p></li>"
    )


def _summary(found: Mapping[str, Any], shown_before: int, filters: Mapping[str, str]) -> str:
    """One message about the results: none (and why), or which ones these are of how many."""
    count = len(found["hits"])
    kind = filters.get("type")
    unknown = (
        f" ({kind!r} is not one of the known event types: {', '.join(KNOWN_EVENT_TYPES)})"
        if kind and kind not in KNOWN_EVENT_TYPES
        else ""
    )
    if not count:
        if found.get("filtered_out"):
            return f"No results: the filters removed every match{esc(unknown)}."
        where = "this session" if found.get("session") else "this workspace"
        return f"No results: no event in {where} holds a word of the query{esc(unknown)}."
    first, last = shown_before + 1, shown_before + count
    total = f"more than {last}" if found.get("next_cursor") else f"{last}"
    line = f"Results {first}–{last} of {total}."
    if found.get("partial"):
        missing = ", ".join(found.get("unmatched") or [])
        line += " No event holds every word: these are the best partial matches" + (
            f" (no match for: {esc(missing)})." if missing else "."
        )
    return line


def search(
    workspace: str | None,
    query: str,
    session_id: str | None,
    found: Mapping[str, Any],
    filters: Mapping[str, str] | None = None,
    shown_before: int = 0,
) -> str:
    filters = filters or {}
    items = "".join(_hit(workspace, session_id, query, hit) for hit in found["hits"])
    more = ""
    if found.get("next_cursor"):
        args = {**ws_query(workspace), "q": query, "session": session_id, **filters}
        n = shown_before + len(found["hits"])
        more_link = a(href("/search", **args, cursor=found["next_cursor"], n=n), "more results →")
        more = f"<p class=pager>{more_link}</p>"
    body = (
        search_form(workspace, query, session_id, filters)
        + f"<p class=summary>{_summary(found, shown_before, filters)}</p>"
        + (f"<ol class=hits start={shown_before + 1}>{items}</ol>" if items else "")
        + more
    )
    return page(f"Search: {query}", body, crumbs=_crumbs(workspace))
