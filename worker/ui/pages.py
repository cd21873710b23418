"""The UI's HTML, rendered on the server from the operator replies.

Everything shown comes from agents' sessions (untrusted text): every value goes through
``esc`` (``html.escape`` with quotes) or ``attr``/``href`` before it reaches the markup, and
the server's Content-Security-Policy allows no script at all, so a ``<script>`` that slipped
through would still not run. Pages are plain HTML with one stylesheet; folding is
``<details>``; the lineage graph is inline SVG.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlencode

import orjson

# The excerpt marks matched words as [word]; shown as <mark>.
_MATCH: Final = re.compile(r"\[([^\[\]\n]{1,200})\]")
_TEXT_KEYS: Final = ("text", "output", "summary", "title", "content", "message")


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def href(path: str, **query: object) -> str:
    """A link's escaped href; None values are left out."""
    kept = {k: v for k, v in query.items() if v is not None}
    return esc(f"{path}?{urlencode(kept)}" if kept else path)


def ws_query(workspace: str | None) -> dict[str, object]:
    """How a page names its workspace in a link (a session without cwd: ``nocwd=1``)."""
    return {"nocwd": 1} if workspace is None else {"ws": workspace}


def page(title: str, body: str, *, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    trail = " / ".join(
        f'<a href="{link}">{esc(label)}</a>' if link else esc(label) for label, link in crumbs
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{esc(title)} · sessionquery</title>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        '<link rel=stylesheet href="/static/ui.css"></head><body>'
        '<nav><a class=brand href="/">sessionquery</a> <a href="/">Workspaces</a>'
        ' <a href="/ops">Operations</a></nav>'
        f"<main><p class=crumbs>{trail}</p><h1>{esc(title)}</h1>{body}</main></body></html>"
    )


def error_page(message: str) -> str:
    return page("Not available", f"<p class=error>{esc(message)}</p>")


def login_page() -> str:
    return page(
        "Token needed",
        "<p>Open the address <code>sessionquery ui</code> printed (it carries the token),"
        " or paste the token:</p><form method=get action='/'>"
        "<input name=token type=password autocomplete=off aria-label=token>"
        " <button>Open</button></form>",
    )


def highlight(excerpt: str) -> str:
    """The excerpt escaped, its [matched] words as <mark>."""
    out, at = [], 0
    for match in _MATCH.finditer(excerpt):
        out.append(esc(excerpt[at : match.start()]))
        out.append(f"<mark>{esc(match.group(1))}</mark>")
        at = match.end()
    out.append(esc(excerpt[at:]))
    return "".join(out)


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], *, cls: str = "") -> str:
    """A table of cells that are already markup (escape them before)."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- workspaces and sessions ----------------------------------------------------------------


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


SORTS: Final = (("title", "title"), ("created", "created"), ("updated", "updated"),
                ("events", "events"))  # fmt: skip


SURFACES: Final = ("user", "assistant", "tool", "system")


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
    chosen = filters.get("surface", "")
    options = "".join(
        f"<option value='{v}'{' selected' if chosen == v else ''}>{v or 'any surface'}</option>"
        for v in ("", *SURFACES)
    )
    return (
        f"<form class=search method=get action='/search'>{hidden}"
        f"<input name=q value='{esc(query)}' placeholder='search {scope}' aria-label=query"
        f" size=40> <select name=surface aria-label=surface>{options}</select>"
        f" <input name=type value='{esc(filters.get('type', ''))}' placeholder='event type'"
        " aria-label='event type' size=14> <button>Search</button></form>"
    )


def sessions(workspace: str | None, args: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    base = {
        **ws_query(workspace),
        **{k: v for k, v in args.items() if k not in ("sort", "desc", "offset")},
    }
    heads = ["session"]
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
        _ws_label(workspace), body, crumbs=[("Workspaces", "/"), (_ws_label(workspace), None)]
    )


def _ws_label(workspace: str | None) -> str:
    return "(no cwd)" if workspace is None else workspace


def _session_row(workspace: str | None, s: Mapping[str, Any]) -> list[str]:
    link = href("/session", **ws_query(workspace), id=s["session_id"])
    parent = s["parent_session_id"]
    parent_cell = (
        f'<a href="{href("/session", **ws_query(workspace), id=parent)}">{esc(parent)}</a>'
        if parent
        else ""
    )
    return [
        f'<a href="{link}"><code>{esc(s["session_id"])}</code></a>',
        esc(s["title"] or ""),
        esc(when(s["created_ms"])),
        esc(when(s["updated_ms"])),
        esc(s["event_count"]),
        f"<span class='state {esc(s['availability'])}'>{esc(s['availability'])}</span>",
        esc(s["source"] or "events"),
        parent_cell,
        f'<a href="{href("/lineage", **ws_query(workspace), id=s["session_id"])}">'
        f"{esc(s['children'])}</a>",
    ]


def _arg(args: Mapping[str, Any], key: str) -> str:
    return esc(args.get(key) or "")


def a(url: str, label: str) -> str:
    """A link; ``url`` escaped already (``href``), ``label`` markup."""
    return f'<a href="{url}">{label}</a>'


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
        f" · updated from <input type=date name=updated_from value='{_arg(args, 'updated_from')}'>"
        f" to <input type=date name=updated_to value='{_arg(args, 'updated_to')}'>"
        " <button>Filter</button></form>"
    )


# -- search ---------------------------------------------------------------------------------


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
    crumbs = [("Workspaces", "/"), (_ws_label(workspace), href("/sessions", **ws_query(workspace)))]
    return page(f"Search: {query}", body, crumbs=crumbs)


# -- a session's timeline -------------------------------------------------------------------


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
    crumbs = [("Workspaces", "/"), (_ws_label(workspace), href("/sessions", **wsq)), (sid, None)]
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
    if (
        parsed is None
    ):  # not JSON, or cut  # cut: the start only, the rest is paged on the event's page
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


# -- one event ------------------------------------------------------------------------------


def event(
    workspace: str | None,
    sid: str,
    seq: int,
    chunk: Mapping[str, Any],
    relations: Mapping[str, Any] | None,
) -> str:
    wsq = ws_query(workspace)
    offset, size, text = int(chunk["offset"]), int(chunk["size"]), chunk["text"]
    pager = [f"<span>characters {offset + 1 if text else 0}–{offset + len(text)} of {size}</span>"]
    if offset > 0:
        back = max(0, offset - len(text) if text else 0)
        pager.insert(
            0,
            f'<a href="{href("/event", **wsq, id=sid, seq=seq, offset=back)}">← previous part</a>',
        )
    if offset + len(text) < size:
        pager.append(
            a(href("/event", **wsq, id=sid, seq=seq, offset=offset + len(text)), "next part →")
        )
    body = (
        f'<p><a href="{href("/session", **wsq, id=sid, at=seq)}#e{seq}">in the timeline</a>'
        f' · <a href="{href("/lineage", **wsq, id=sid)}">lineage</a></p>'
        + (_relations(workspace, sid, relations) if relations else "")
        + f"<h2>Exact JSON</h2><p class=pager>{' '.join(pager)}</p>"
        + f"<pre class=json>{esc(text)}</pre>"
    )
    crumbs = [
        ("Workspaces", "/"),
        (_ws_label(workspace), href("/sessions", **wsq)),
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


# -- lineage --------------------------------------------------------------------------------

_NODE_W: Final = 230
_NODE_H: Final = 46
_GAP_X: Final = 24
_GAP_Y: Final = 40


def lineage(workspace: str | None, found: Mapping[str, Any]) -> str:
    wsq = ws_query(workspace)
    target = found["target"]
    body = (
        (
            "<p class=note>The chain goes on past the top: a parent outside this workspace"
            " or not indexed.</p>"
            if found.get("continues_hidden")
            else ""
        )
        + lineage_svg(workspace, found)
        + "<p class=legend>Arrows point from a parent to the session started from it (a"
        " fork, a resumed session or a sub-agent's delegation); the outlined box is this"
        " session.</p>"
    )
    crumbs = [
        ("Workspaces", "/"),
        (_ws_label(workspace), href("/sessions", **wsq)),
        (target, href("/session", **wsq, id=target)),
        ("lineage", None),
    ]
    return page(f"Lineage of {target}", body, crumbs=crumbs)


def _layers(
    nodes: Sequence[Mapping[str, Any]], edges: Sequence[Mapping[str, str]]
) -> dict[str, int]:
    """Each session's depth from the top of the drawn chain (a parent above its children)."""
    parents = {e["child"]: e["parent"] for e in edges}
    depth: dict[str, int] = {}
    for node in nodes:
        chain, sid = [], node["session_id"]
        while sid not in depth and sid in parents and sid not in chain:
            chain.append(sid)
            sid = parents[sid]
        base = depth.get(sid, 0)
        depth.setdefault(sid, base)
        for offset, item in enumerate(reversed(chain), start=1):
            depth[item] = base + offset
    return depth


def lineage_svg(workspace: str | None, found: Mapping[str, Any]) -> str:
    nodes, edges = found["nodes"], found["edges"]
    depth = _layers(nodes, edges)
    rows: dict[int, list[Mapping[str, Any]]] = {}
    for node in nodes:
        rows.setdefault(depth.get(node["session_id"], 0), []).append(node)
    at: dict[str, tuple[int, int]] = {}
    for level, members in rows.items():
        for i, node in enumerate(members):
            at[node["session_id"]] = (10 + i * (_NODE_W + _GAP_X), 10 + level * (_NODE_H + _GAP_Y))
    width = 20 + max(len(m) for m in rows.values()) * (_NODE_W + _GAP_X)
    height = 20 + (max(rows) + 1) * (_NODE_H + _GAP_Y)
    lines = []
    for edge in edges:
        if edge["parent"] in at and edge["child"] in at:
            (px, py), (cx, cy) = at[edge["parent"]], at[edge["child"]]
            lines.append(
                f"<line x1={px + _NODE_W // 2} y1={py + _NODE_H} x2={cx + _NODE_W // 2}"
                f" y2={cy - 2} class=edge marker-end='url(#arrow)'/>"
            )
    boxes = []
    for node in nodes:
        x, y = at[node["session_id"]]
        target = " target" if node["session_id"] == found["target"] else ""
        label = _clip(node.get("title") or node["session_id"], 34)
        link = href("/session", **ws_query(workspace), id=node["session_id"])
        boxes.append(
            f'<a href="{link}" class=node><rect x={x} y={y} width={_NODE_W} height={_NODE_H}'
            f" rx=6 class='box {esc(node['availability'])}{target}'/>"
            f"<text x={x + 8} y={y + 19}>{esc(label)}</text>"
            f"<text x={x + 8} y={y + 36} class=sid>{esc(_clip(node['session_id'], 36))}</text>"
            f"<title>{esc(node['session_id'])}: {esc(node.get('title') or '')}</title></a>"
        )
    return (
        f"<svg class=lineage width={width} height={height} viewBox='0 0 {width} {height}'"
        " xmlns='http://www.w3.org/2000/svg' role=img aria-label='lineage graph'>"
        "<defs><marker id=arrow viewBox='0 0 10 10' refX=9 refY=5 markerWidth=7 markerHeight=7"
        " orient=auto-start-reverse><path d='M0,0 L10,5 L0,10 z'/></marker></defs>"
        + "".join(lines)
        + "".join(boxes)
        + "</svg>"
    )


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# -- operations -----------------------------------------------------------------------------


def operations(found: Mapping[str, Any]) -> str:
    index = found.get("index") or {}
    stream = index.get("stream") or {}
    facts = [
        ("applied sequence", index.get("applied_seq")),
        ("stream last sequence", stream.get("last_seq")),
        ("lag (events)", index.get("lag_events")),
        ("lag (seconds)", index.get("lag_seconds")),
        ("matches the stream", index.get("matches_stream")),
        ("divergence", index.get("divergence") or "none"),
        ("rebuild running", index.get("rebuild_running")),
        ("rebuild progress", _rebuild(index)),
        ("stream", stream.get("name")),
        ("partitions held", index.get("partitions")),
        ("epoch", index.get("epoch")),
        ("schema version", index.get("schema_version")),
        ("index size (bytes)", index.get("index_bytes")),
        ("history unavailable before", index.get("history_unavailable_before") or "—"),
    ]
    load = found.get("load") or {}
    kinds = index.get("dead_letters") or {}
    letters = found.get("dead_letters") or []
    body = (
        "<h2>Index against its stream</h2><dl class=facts>"
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
        + "</dl><h2>This worker's load</h2><dl class=facts>"
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in load.items())
        + "</dl><h2>Dead letters</h2>"
        + (
            "<p>" + ", ".join(f"{esc(k)}: {esc(v)}" for k, v in kinds.items()) + "</p>"
            if kinds
            else ""
        )
        + (
            table(
                ("stream seq", "kind", "reason"),
                ((esc(d["stream_seq"]), esc(d["kind"]), esc(d["reason"])) for d in letters),
            )
            if letters
            else "<p>None.</p>"
        )
    )
    return page("Operations", body, crumbs=[("Workspaces", "/"), ("Operations", None)])


def _rebuild(index: Mapping[str, Any]) -> str:
    if not index.get("rebuild_running"):
        return "—"
    done, target = index.get("rebuild_applied_seq") or 0, index.get("rebuild_target_seq") or 0
    share = f" ({100 * done // target}%)" if target else ""
    return f"{done} of {target}{share}"
