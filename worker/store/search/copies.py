"""Sessions that copied each other's events (a resume, a fork) told apart on one page."""

from __future__ import annotations

from collections.abc import Sequence

from worker.store import results, sql
from worker.store.database import Fetch


def own_lines(fetch: Fetch, session_ids: Sequence[str]) -> dict[str, str]:
    """For each session, its first message whose text none of the others holds."""
    found, at = fetch(
        "SELECT session_id AS session_id, seq AS seq,"
        " substr(event_text(doc, type, :bytes), 1, :chars) AS body"
        " FROM events"
        " WHERE session_id IN (SELECT value FROM json_each(:ids))"
        " AND surface IN ('user', 'assistant') ORDER BY session_id, seq LIMIT :cap",
        {
            "ids": sql.json_list(session_ids),
            "chars": sql.PREVIEW_SOURCE_CHARS,
            "bytes": sql.PREVIEW_SOURCE_BYTES,
            "cap": 20_000,
        },
    )
    texts: dict[str, list[tuple[int, str]]] = {}
    for session_id, seq, body in map(at.getter(("session_id", "seq", "body")), found):
        texts.setdefault(session_id, []).append((int(seq), body))
    lines: dict[str, str] = {}
    for session_id, mine in texts.items():
        others = {body for sid, items in texts.items() if sid != session_id for _, body in items}
        first = next(((seq, body) for seq, body in mine if body not in others), None)
        if first is not None:
            lines[session_id] = f"seq {first[0]}: {results.preview(first[1])}"
    return lines
