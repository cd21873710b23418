"""A session's lineage drawn as a graph: forks, resumed sessions and sub-agents, as inline SVG."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from worker.ui.pages._markup import esc, href, page, title_label, ws_label, ws_query

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
        + f"<div class=scroll>{lineage_svg(workspace, found)}</div>"
        + _listing(workspace, found)
        + "<p class=legend>Arrows point from a parent to the session started from it (a"
        " fork, a resumed session or a sub-agent's delegation); the outlined box is this"
        " session.</p>"
    )
    crumbs = [
        ("Workspaces", "/"),
        (ws_label(workspace), href("/sessions", **wsq)),
        (target, href("/session", **wsq, id=target)),
        ("lineage", None),
    ]
    node: Mapping[str, Any] = next((n for n in found["nodes"] if n["session_id"] == target), {})
    heading = "Lineage of " + title_label(node, untitled=target)
    return page(f"Lineage of {node.get('title') or target}", body, crumbs=crumbs, heading=heading)


def _listing(workspace: str | None, found: Mapping[str, Any]) -> str:
    """The drawn sessions as a list with their titles (readable where the graph is small)."""
    items = "".join(
        f'<li><a href="{href("/session", **ws_query(workspace), id=n["session_id"])}">'
        f"{title_label(n)}</a> <code class=sid>{esc(n['session_id'])}</code>"
        + (" (this session)" if n["session_id"] == found["target"] else "")
        + "</li>"
        for n in found["nodes"]
    )
    return f"<ul class=nodes>{items}</ul>"


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
