"""Search results: the tools' search, matched words highlighted, each hit linked to its event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.ui.pages._markup import a, esc, highlight, href, page, when, ws_label, ws_query
from worker.ui.pages.sessions import search_form


def search(
    workspace: str | None,
    query: str,
    session_id: str | None,
    found: Mapping[str, Any],
    filters: Mapping[str, str] | None = None,
) -> str:
    notes = []
    if found.get("partial"):
        missing = ", ".join(found.get("unmatched") or [])
        notes.append("No event holds every word: these are the best partial matches"
                     + (f" (no match for: {esc(missing)})" if missing else "") + ".")  # fmt: skip
    if found.get("filtered_out"):
        notes.append("The filters removed every match.")
    items = []
    for hit in found["hits"]:
        event = hit["event"]
        session = hit.get("session") or {"session_id": session_id}
        sid = session["session_id"]
        link = href("/session", **ws_query(workspace), id=sid, at=event["seq"])
        title = hit.get("title")
        items.append(
            f'<li class=hit><a href="{link}#e{int(event["seq"])}"><code>{esc(sid)}</code>'
            f" seq {esc(event['seq'])}</a> <span class=type>{esc(event['type'])}</span>"
            + (f" <span class=title>{esc(title)}</span>" if title else "")
            + f" <span class=time>{esc(when(event['time_ms']))}</span>"
            + (f" · {esc(hit['matching_events'])} matching" if "matching_events" in hit else "")
            + f"<p class=excerpt>{highlight(hit['excerpt'])}</p></li>"
        )
    more = ""
    if found.get("next_cursor"):
        args = {**ws_query(workspace), "q": query, "session": session_id, **(filters or {})}
        more_link = a(href("/search", **args, cursor=found["next_cursor"]), "more results →")
        more = f"<p class=pager>{more_link}</p>"
    body = (
        search_form(workspace, query, session_id, filters)
        + "".join(f"<p class=note>{n}</p>" for n in notes)
        + (f"<ol class=hits>{''.join(items)}</ol>" if items else "<p>No results.</p>")
        + more
    )
    crumbs = [("Workspaces", "/"), (ws_label(workspace), href("/sessions", **ws_query(workspace)))]
    return page(f"Search: {query}", body, crumbs=crumbs)
