"""What every page shares: escaping, links, the page frame, tables, highlighted excerpts.

Everything shown comes from agents' sessions (untrusted text): every value goes through
``esc`` (``html.escape`` with quotes) or ``href`` before it reaches the markup, and the
server's Content-Security-Policy allows no script at all, so a ``<script>`` that slipped
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

# The excerpt marks matched words as [word]; shown as <mark>.
_MATCH: Final = re.compile(r"\[([^\[\]\n]{1,200})\]")


def esc(value: object) -> str:
    """Escaped text; a flag reads as yes/no for people, not as Python's True/False."""
    if isinstance(value, bool):
        return "yes" if value else "no"
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


def a(url: str, label: str) -> str:
    """A link; ``url`` escaped already (``href``), ``label`` markup."""
    return f'<a href="{url}">{label}</a>'


def ws_label(workspace: str | None) -> str:
    return "(no cwd)" if workspace is None else workspace


def arg(args: Mapping[str, Any], key: str) -> str:
    return esc(args.get(key) or "")
