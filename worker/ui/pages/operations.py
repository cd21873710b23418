"""Operations: the index against its stream, this worker's load, dead letters with reasons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from worker.ui.pages._markup import esc, page, table

LOAD_LABELS: Final = {
    "searches": "searches running",
    "parallel_running": "reads and traces running",
    "parallel_waiting": "reads and traces waiting",
    "partitions": "partitions served",
}


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
        ("index size", _bytes(index.get("index_bytes"))),
        ("history unavailable before", index.get("history_unavailable_before") or "—"),
    ]
    load = found.get("load") or {}
    kinds = index.get("dead_letters") or {}
    letters = found.get("dead_letters") or []
    body = (
        "<h2>Index against its stream</h2><dl class=facts>"
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
        + "</dl><h2>This worker's load</h2><dl class=facts>"
        + "".join(
            f"<dt>{esc(LOAD_LABELS.get(k, k.replace('_', ' ')))}</dt><dd>{esc(v)}</dd>"
            for k, v in load.items()
        )
        + "</dl><h2>Dead letters</h2>"
        + (
            "<p>"
            + ", ".join(f"{esc(k.replace('_', ' '))}: {esc(v)}" for k, v in kinds.items())
            + "</p>"
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


def _bytes(count: object) -> str:
    """A byte count as people read it, with the exact number beside it."""
    if not isinstance(count, int):
        return "—"
    size, unit = float(count), "bytes"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{count:,} bytes" if unit == "bytes" else f"{size:.1f} {unit} ({count:,} bytes)"


def _rebuild(index: Mapping[str, Any]) -> str:
    if not index.get("rebuild_running"):
        return "—"
    done, target = index.get("rebuild_applied_seq") or 0, index.get("rebuild_target_seq") or 0
    share = f" ({100 * done // target}%)" if target else ""
    return f"{done} of {target}{share}"
