"""A session as a readable timeline: messages as text, tool calls as their tool and
command, tool results as their output, replacements marked, the exact JSON one click away,
paged. A search hit's event is marked, unfolded and shows the part that holds the match."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

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

_FOLDED = frozenset({"tool/call", "tool/result", "command/output", "message/context"})


def timeline(
    workspace: str | None,
    found: Mapping[str, Any],
    from_seq: int,
    limit: int,
    focus: Mapping[str, Any] | None = None,
) -> str:
    session = found["session"]
    sid = session["session_id"]
    wsq = ws_query(workspace)
    facts = [
        ("session", f"<code>{esc(sid)}</code>"),
        ("state", esc(session["availability"])),
        ("created", esc(when(session["created_ms"]))),
        ("updated", esc(when(session["updated_ms"]))),
        ("events", esc(session["event_count"])),
    ]
    if session["parent_session_id"]:
        parent = session["parent_session_id"]
        facts.append(
            ("parent", f'<a href="{href("/session", **wsq, id=parent)}">{esc(parent)}</a>')
        )
    facts.append(("lineage", f'<a href="{href("/lineage", **wsq, id=sid)}">graph</a>'))
    header = "<dl class=facts>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    events = "".join(_event(workspace, sid, e, focus) for e in found["events"])
    pager = []
    if from_seq > 1:
        back = max(1, from_seq - limit)
        pager.append(f'<a href="{href("/session", **wsq, id=sid, **{"from": back})}">← earlier</a>')
    if found.get("next_seq"):
        pager.append(a(href("/session", **wsq, id=sid, **{"from": found["next_seq"]}), "later →"))
    body = (
        header
        + search_form(workspace, session_id=sid)
        + f"<ol class=timeline>{events}</ol><p class=pager>{' '.join(pager)}</p>"
    )
    crumbs = [("Workspaces", "/"), (ws_label(workspace), href("/sessions", **wsq)), (sid, None)]
    title = found.get("title") or sid
    return page(title, body, crumbs=crumbs, heading=title_label(found, untitled=sid))


def _event(
    workspace: str | None, sid: str, event: Mapping[str, Any], focus: Mapping[str, Any] | None
) -> str:
    seq, kind = int(event["seq"]), event["type"]
    target = focus is not None and int(focus["seq"]) == seq
    classes = ["event", f"surface-{event['surface']}", "kind-" + re.sub(r"[^a-z]", "-", kind)]
    if target:
        classes.append("target")
    marks = []
    if event["replaced_by"]:
        classes.append("replaced")
        by = ", ".join(str(s) for s in event["replaced_by"])
        marks.append(f"<span class=mark>replaced by seq {esc(by)}</span>")
    parsed = None if event["cut"] else _parse(event["head"])
    replaces = parsed.get("replaces") if parsed else None
    if replaces:
        marks.append(f"<span class='mark replaces'>replaces seq {esc(_ranges(replaces))}</span>")
    query = focus.get("query") if focus is not None and target else None
    wsq = ws_query(workspace)
    json_link = href("/event", **wsq, id=sid, seq=seq, view="json")
    # With a query, the event page opens on the part holding the match, scrolled to it.
    text_link = href("/event", **wsq, id=sid, seq=seq, q=query) + ("#match" if query else "")
    badge = "search hit" if query else "linked"
    # A search hit's link ends ``#match``: its first highlighted word, else (nothing in the
    # text matched) the event itself, so the link always lands on the hit.
    landing = target and focus is not None and not focus.get("highlights")
    head = (
        f"<div class=meta{' id=match' if landing else ''}>"
        f"<a href='#e{seq}'>#{seq}</a> <b>{esc(kind)}</b>"
        f" <span class=time>{esc(when(event['time_ms']))}</span> {' '.join(marks)}"
        + (f" <span class='mark found'>{badge}</span>" if target else "")
        + f' <a class=json href="{json_link}">exact JSON</a></div>'
    )
    body = _focus(focus, text_link) if target and focus is not None else _text(event, text_link)
    if kind in _FOLDED:
        open_ = " open" if target else ""
        tool = event.get("tool")
        label = f"{esc(tool)} · {esc(kind)}" if tool else esc(kind)
        body = f"<details class=tool{open_}><summary>{label}</summary>{body}</details>"
    return f"<li id=e{seq} class='{esc(' '.join(classes))}'>{head}{body}</li>"


def _text(event: Mapping[str, Any], link: str) -> str:
    text, size = event["text"], int(event["text_size"])
    shown = f"<div class=text>{esc(text)}</div>" if text else ""
    if len(text) < size:
        shown += (
            f"<p class=cut>The first {len(text):,} of {size:,} characters;"
            f' <a href="{link}">read it all, in parts</a>.</p>'
        )
    return shown


def _focus(focus: Mapping[str, Any], link: str) -> str:
    """The part of the hit's event that holds the match, the matches highlighted."""
    text, offset, size = focus["text"], int(focus["offset"]), int(focus["size"])
    first = focus.get("first_match")
    anchor = None if first is None else int(first) - offset
    shown = f"<div class=text>{marked(text, focus['highlights'], land=True, anchor=anchor)}</div>"
    if offset > 0 or offset + len(text) < size:
        shown = (
            f"<p class=cut>Characters {offset + 1:,}–{offset + len(text):,} of {size:,}, where"
            f' the search matched; <a href="{link}">read it all, in parts</a>.</p>' + shown
        )
    return shown


def _parse(text: str) -> dict[str, Any] | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _ranges(seqs: Sequence[int]) -> str:
    values = sorted(int(s) for s in seqs if isinstance(s, int))
    if len(values) > 2 and values[-1] - values[0] == len(values) - 1:
        return f"{values[0]}–{values[-1]}"
    return ", ".join(str(v) for v in values)
