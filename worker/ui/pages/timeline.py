"""A session as a readable timeline: messages, tool calls folded, replacements marked, paged."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from worker.ui.pages._markup import a, esc, href, page, when, ws_label, ws_query
from worker.ui.pages.sessions import search_form

_TEXT_KEYS: Final = ("text", "output", "summary", "title", "content", "message")


def timeline(workspace: str | None, found: Mapping[str, Any], from_seq: int, limit: int) -> str:
    session = found["session"]
    sid = session["session_id"]
    wsq = ws_query(workspace)
    facts = [
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
    events = "".join(_event(workspace, sid, e) for e in found["events"])
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
    return page(found.get("title") or sid, body, crumbs=crumbs)


def _event(workspace: str | None, sid: str, event: Mapping[str, Any]) -> str:
    seq, kind = int(event["seq"]), event["type"]
    classes = ["event", f"surface-{event['surface']}", "kind-" + re.sub(r"[^a-z]", "-", kind)]
    marks = []
    if event["replaced_by"]:
        classes.append("replaced")
        by = ", ".join(str(s) for s in event["replaced_by"])
        marks.append(f"<span class=mark>replaced by seq {esc(by)}</span>")
    parsed = None if event["cut"] else _parse(event["head"])
    replaces = parsed.get("replaces") if parsed else None
    if replaces:
        marks.append(f"<span class='mark replaces'>replaces seq {esc(_ranges(replaces))}</span>")
    link = href("/event", **ws_query(workspace), id=sid, seq=seq)
    head = (
        f"<div class=meta><a href='#e{seq}'>#{esc(seq)}</a> <b>{esc(kind)}</b>"
        f" <span class=time>{esc(when(event['time_ms']))}</span> {' '.join(marks)}"
        f' <a class=json href="{link}">JSON &amp; relations</a></div>'
    )
    return (
        f"<li id=e{seq} class='{esc(' '.join(classes))}'>{head}"
        f"{_event_body(event, parsed, link)}</li>"
    )


def _event_body(event: Mapping[str, Any], parsed: dict[str, Any] | None, link: str) -> str:
    if parsed is None:  # cut (its start only; the rest is paged on the event's page) or not JSON
        return (
            f"<p class=cut>A long event ({esc(event['size'])} characters): the first"
            f' {len(event["head"])} shown; <a href="{link}">read it all, paged</a>.</p>'
            f"<pre class=head>{esc(event['head'])}…</pre>"
        )
    value = parsed.get("payload")
    payload: dict[str, Any] = value if isinstance(value, dict) else {}
    raw = (
        f"<details class=raw><summary>exact JSON</summary><pre>{esc(event['head'])}</pre></details>"
    )
    kind = event["type"]
    if kind in ("tool/call", "tool/result"):
        label = "call" if kind == "tool/call" else "result"
        inner = payload.get("output") if kind == "tool/result" else payload.get("arguments")
        shown = (
            inner
            if isinstance(inner, str)
            else orjson.dumps(inner, option=orjson.OPT_INDENT_2).decode()
        )
        return (
            f"<details class=tool><summary>{esc(payload.get('tool', 'tool'))} {label}</summary>"
            f"<pre>{esc(shown)}</pre></details>{raw}"
        )
    text = next((payload[k] for k in _TEXT_KEYS if isinstance(payload.get(k), str)), None)
    if text is None:
        return raw
    return f"<div class=text>{esc(text)}</div>{raw}"


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
