"""One event read in parts: its readable text (matches highlighted when a search led
here) or its exact JSON, with the parts' navigation above and below; and its relations
(replacements, citations)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worker.ui.pages._markup import a, esc, href, marked, page, ws_label, ws_query


def event(
    workspace: str | None,
    sid: str,
    seq: int,
    chunk: Mapping[str, Any],
    relations: Mapping[str, Any] | None,
    *,
    view: str = "json",
    query: str | None = None,
    part_size: int,
) -> str:
    wsq = ws_query(workspace)
    offset, size, text = int(chunk["offset"]), int(chunk["size"]), chunk["text"]
    keep = {**wsq, "id": sid, "seq": seq, "view": view, "q": query}
    # Part k starts at k × part_size, or up to a few code points before it (a part never
    # starts inside a character): its number is that offset rounded up. Links carry the
    # parts' nominal offsets, which the worker answers with those very parts.
    part, parts = -(-offset // part_size), max(1, -(-size // part_size))
    pager = [
        f"<span>part {part + 1:,} of {parts:,}: characters"
        f" {offset + 1 if text else 0:,}–{offset + len(text):,} of {size:,}</span>"
    ]
    if part > 0:
        pager.insert(0, a(href("/event", **keep, offset=(part - 1) * part_size), "← previous part"))
    if offset + len(text) < size:
        pager.append(a(href("/event", **keep, offset=(part + 1) * part_size), "next part →"))
    nav = f"<p class=pager>{' '.join(pager)}</p>"
    if view == "json":
        other = a(href("/event", **wsq, id=sid, seq=seq, q=query), "readable text")
        heading = f"<h2>Exact JSON</h2><p class=views>or its {other}</p>"
        shown = f"<pre class=json>{esc(text)}</pre>"
    else:
        other = a(href("/event", **wsq, id=sid, seq=seq, view="json"), "exact JSON")
        tool = f" · {esc(chunk['tool'])}" if chunk.get("tool") else ""
        heading = (
            f"<h2>{esc(chunk.get('type') or 'event')}{tool}</h2><p class=views>or its {other}</p>"
        )
        first = chunk.get("first_match")
        anchor = None if first is None else int(first) - offset
        shown = (
            "<pre class='json readable'>"
            f"{marked(text, chunk.get('highlights') or (), land=True, anchor=anchor)}</pre>"
        )
    timeline = href("/session", **wsq, id=sid, at=seq, q=query)
    body = (
        f'<p><a href="{timeline}#e{seq}">in the timeline</a>'
        f' · <a href="{href("/lineage", **wsq, id=sid)}">lineage</a></p>'
        + (_relations(workspace, sid, relations) if relations else "")
        + heading
        + nav
        + shown
        + nav.replace("<p class=pager>", "<p class='pager bottom'>", 1)
    )
    crumbs = [
        ("Workspaces", "/"),
        (ws_label(workspace), href("/sessions", **wsq)),
        (sid, href("/session", **wsq, id=sid)),
        (f"seq {seq}", None),
    ]
    return page(f"{sid} · seq {seq}", body, crumbs=crumbs)


def _relations(workspace: str | None, sid: str, rel: Mapping[str, Any]) -> str:
    wsq = ws_query(workspace)

    def same(items: Sequence[Mapping[str, Any]]) -> str:
        return (
            ", ".join(
                f'<a href="{href("/event", **wsq, id=sid, seq=e["seq"])}">seq {esc(e["seq"])}</a>'
                for e in items
            )
            or "—"
        )

    def linked(items: Sequence[Mapping[str, Any]], hidden: int) -> str:
        shown = ", ".join(
            f'<a href="{href("/event", **wsq, id=i["session_id"], seq=i["seq"])}">'
            f"{esc(i['session_id'])} seq {esc(i['seq'])}</a>"
            for i in items
        )
        more = f" and {hidden} outside this workspace or not indexed" if hidden else ""
        return (shown or "—") + esc(more)

    rows = [
        ("replaces", same(rel["replaces"])),
        ("replaced by", same(rel["replaced_by"])),
        ("cites", linked(rel["cites"], rel["cites_hidden"])),
        ("cited by", linked(rel["cited_by"], rel["cited_by_hidden"])),
    ]
    return (
        "<h2>Relations</h2><dl class=facts>"
        + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
        + "</dl>"
    )
