"""What every page shares: escaping, links, the page frame, tables, highlighted excerpts.

Everything shown comes from agents' sessions (untrusted text): every value goes through
``esc`` (``html.escape`` with quotes) or ``href`` before it reaches the markup, and the
server's Content-Security-Policy allows no script at all, so a ``<script>`` that slipped
through would still not run. Pages are plain HTML with one stylesheet; folding is
``<details>``; the lineage graph is inline SVG.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode


def esc(value: object) -> str:
    """Escaped text; a flag reads as yes/no for people, not as Python's True/False."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return html.escape("" if value is None else str(value), quote=True)


def when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def href(path: str, **query: object) -> str:
    """A link's escaped href; None values are left out."""
    kept = {k: v for k, v in query.items() if v is not None}
    return esc(f"{path}?{urlencode(kept)}" if kept else path)


def ws_query(workspace: str | None) -> dict[str, object]:
    """How a page names its workspace in a link (a session without cwd: ``nocwd=1``)."""
    return {"nocwd": 1} if workspace is None else {"ws": workspace}


def page(
    title: str,
    body: str,
    *,
    crumbs: Sequence[tuple[str, str | None]] = (),
    heading: str | None = None,
    banner: str | None = None,
) -> str:
    """A whole page; ``heading``: the h1's markup when it is more than ``title`` as text;
    ``banner``: a warning shown above everything (no worker answers)."""
    alert = f"<div class=banner role=alert>{esc(banner)}</div>" if banner else ""
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
        f"{alert}<main><p class=crumbs>{trail}</p><h1>{heading or esc(title)}</h1>{body}</main>"
        "</body></html>"
    )


def error_page(message: str, *, unavailable: bool = False) -> str:
    """An error; ``unavailable``: no worker answers, said in the banner every page has."""
    if unavailable:
        return page("Not available", "<p>This page shows again once a worker answers.</p>",
                    banner=message)  # fmt: skip
    return page("Not available", f"<p class=error>{esc(message)}</p>")


def login_page() -> str:
    return page(
        "Token needed",
        "<p>Open the address <code>sessionquery ui</code> printed (it carries the token),"
        " or paste the token:</p><form method=get action='/'>"
        "<input name=token type=password autocomplete=off aria-label=token>"
        " <button>Open</button></form>",
    )


def marked(
    text: str, spans: Iterable[Sequence[int]], *, land: bool = False, anchor: int | None = None
) -> str:
    """``text`` escaped, the (start, end) offsets the worker sent as <mark> (the worker
    found the matches; brackets in the text are text). With ``land``, the mark starting at
    ``anchor`` (else the first) is ``id=match``: a link ending ``#match`` scrolls it into
    view, no script needed (one per page). Offsets are code points, as the worker counts
    them (Python ``str`` indices)."""
    ordered = sorted((int(s), int(e)) for s, e in spans)
    if not land:
        anchor = -1
    elif anchor not in {s for s, _ in ordered}:
        anchor = ordered[0][0] if ordered else None
    out, at = [], 0
    for start, end in ordered:
        start, end = max(start, at), min(end, len(text))
        if end <= start:
            continue
        out.append(esc(text[at:start]))
        ident = " id=match" if start == anchor else ""
        out.append(f"<mark{ident}>{esc(text[start:end])}</mark>")
        at = end
    out.append(esc(text[at:]))
    return "".join(out)


def title_label(item: Mapping[str, Any], *, untitled: str = "(untitled)") -> str:
    """A session's title as the tools show it: its own, else its first prompt, marked."""
    title = item.get("title")
    if not title:
        return f"<i class=untitled>{esc(untitled)}</i>"
    if item.get("title_derived"):
        return f"<span class=title>{esc(title)}</span> <span class=derived>(first prompt)</span>"
    return f"<span class=title>{esc(title)}</span>"


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], *, cls: str = "") -> str:
    """A table of cells that are already markup (escape them before), scrolling inside
    itself when it is wider than the screen (the page never scrolls sideways)."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f"<div class=scroll><table class='{cls}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def a(url: str, label: str) -> str:
    """A link; ``url`` escaped already (``href``), ``label`` markup."""
    return f'<a href="{url}">{label}</a>'


def ws_label(workspace: str | None) -> str:
    return "(no cwd)" if workspace is None else workspace


def arg(args: Mapping[str, Any], key: str) -> str:
    return esc(args.get(key) or "")
