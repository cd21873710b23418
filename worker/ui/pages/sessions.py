"""The workspaces list and a workspace's sessions: sorted, filtered and paged by the worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from contracts.events import KNOWN_EVENT_TYPES
from worker.ui.pages._markup import (
    arg,
    esc,
    href,
    page,
    table,
    title_label,
    when,
    ws_label,
    ws_query,
)


def workspaces(found: Mapping[str, Any]) -> str:
    rows = [
        (
            f'<a href="{href("/sessions", **ws_query(w["cwd"]))}">'
            f"{esc(w['cwd']) if w['cwd'] is not None else '<i>(no cwd)</i>'}</a>",
            esc(w["sessions"]),
            esc(w["events"]),
            esc(when(w["updated_ms"])),
        )
        for w in found["workspaces"]
    ]
    body = table(("workspace", "sessions", "events", "updated"), rows) if rows else "<p>None.</p>"
    return page("Workspaces", body)


SORTS: Final = (("title", "session"), ("created", "created"), ("updated", "updated"),
                ("events", "events"))  # fmt: skip


SURFACES: Final = ("user", "assistant", "tool", "system")
# An event type the publishers may add (protocol.md: open types are namespaced words).
EVENT_TYPE_PATTERN: Final = r"[a-z0-9_.\-]+(/[a-z0-9_.\-]+)*"
MAX_QUERY: Final = 2_000  # the operator search's own bound


def search_form(
    workspace: str | None,
    query: str = "",
    session_id: str | None = None,
    filters: Mapping[str, str] | None = None,
) -> str:
    """The search box, with the tools' event filters: surface and event type."""
    filters = filters or {}
    hidden = "".join(
        f"<input type=hidden name={esc(k)} value='{esc(v)}'>"
        for k, v in {
            **ws_query(workspace),
            **({"session": session_id} if session_id else {}),
        }.items()
    )
    scope = "this session" if session_id else "this workspace"
    surfaces = _options(("", *SURFACES), filters.get("surface", ""), "any surface")
    kind = filters.get("type", "")
    known = kind in KNOWN_EVENT_TYPES
    types = _options(("", *KNOWN_EVENT_TYPES), kind if known else "", "any event type")
    return (
        f"<form class=search method=get action='/search'>{hidden}"
        f"<input name=q value='{esc(query)}' placeholder='search {scope}' aria-label=query"
        f" size=32 maxlength={MAX_QUERY}> <select name=surface aria-label=surface>{surfaces}"
        f"</select> <select name=type aria-label='event type'>{types}</select>"
        f" <input name=other_type value='{esc('' if known else kind)}'"
        " placeholder='or another type' aria-label='another event type' size=14"
        f" pattern='{EVENT_TYPE_PATTERN}'> <button>Search</button></form>"
    )


def _options(values: tuple[str, ...], chosen: str, blank: str) -> str:
    return "".join(
        f"<option value='{esc(v)}'{' selected' if chosen == v else ''}>{esc(v or blank)}</option>"
        for v in values
    )


def sessions(workspace: str | None, args: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    base = {
        **ws_query(workspace),
        **{k: v for k, v in args.items() if k not in ("sort", "desc", "offset")},
    }
    heads = []
    for key, label in SORTS:
        desc = 0 if args.get("sort") == key and args.get("desc") == 1 else 1
        mark = (" ▼" if args.get("desc") == 1 else " ▲") if args.get("sort") == key else ""
        heads.append(f'<a href="{href("/sessions", **base, sort=key, desc=desc)}">'
                     f"{label}{mark}</a>")  # fmt: skip
    heads += ["state", "source", "parent", "children"]
    rows = [_session_row(workspace, s) for s in found["sessions"]]
    offset, total, shown = int(found["offset"]), int(found["total"]), len(rows)
    keep = {**base, "sort": args.get("sort"), "desc": args.get("desc")}
    pager = [f"<span>{offset + 1 if shown else 0}–{offset + shown} of {total}</span>"]
    if offset > 0:
        back = max(0, offset - int(args["limit"]))
        pager.insert(0, f'<a href="{href("/sessions", **keep, offset=back)}">← previous</a>')
    if offset + shown < total:
        pager.append(f'<a href="{href("/sessions", **keep, offset=offset + shown)}">next →</a>')
    body = (
        search_form(workspace)
        + _filter_form(workspace, args)
        + table(heads, rows, cls="sessions")
        + f"<p class=pager>{' '.join(pager)}</p>"
    )
    return page(
        ws_label(workspace), body, crumbs=[("Workspaces", "/"), (ws_label(workspace), None)]
    )


def _session_row(workspace: str | None, s: Mapping[str, Any]) -> list[str]:
    link = href("/session", **ws_query(workspace), id=s["session_id"])
    parent = s["parent_session_id"]
    parent_cell = (
        f'<a href="{href("/session", **ws_query(workspace), id=parent)}">{esc(parent)}</a>'
        if parent
        else ""
    )
    return [
        f'<a href="{link}">{title_label(s)}</a><br><code class=sid>{esc(s["session_id"])}</code>',
        esc(when(s["created_ms"])),
        esc(when(s["updated_ms"])),
        esc(s["event_count"]),
        f"<span class='state {esc(s['availability'])}'>{esc(s['availability'])}</span>",
        esc(s["source"] or "events"),
        parent_cell,
        f'<a href="{href("/lineage", **ws_query(workspace), id=s["session_id"])}">'
        f"{esc(s['children'])}</a>",
    ]


def _filter_form(workspace: str | None, args: Mapping[str, Any]) -> str:
    hidden = "".join(
        f"<input type=hidden name={esc(k)} value='{esc(v)}'>"
        for k, v in {
            **ws_query(workspace),
            "sort": args.get("sort"),
            "desc": args.get("desc"),
        }.items()
    )
    avail = args.get("availability") or ""
    options = "".join(
        f"<option value='{v}'{' selected' if avail == v else ''}>{label}</option>"
        for v, label in (("", "any state"), ("live", "live"), ("persisted", "persisted"))
    )
    roots = " checked" if args.get("roots") else ""
    return (
        f"<form class=filters method=get action='/sessions'>{hidden}"
        f"<input name=title value='{esc(args.get('title') or '')}' placeholder='title contains'"
        " aria-label='title contains'>"
        f" <select name=availability aria-label=state>{options}</select>"
        f" <label><input type=checkbox name=roots value=1{roots}> roots only</label>"
        " · updated (UTC) from"
        f" <input type=date name=updated_from value='{arg(args, 'updated_from')}'>"
        f" to <input type=date name=updated_to value='{arg(args, 'updated_to')}'>"
        " <button>Filter</button></form>"
    )
