"""Sessions that copied each other's events (a resume, a fork) told apart on one page."""

from __future__ import annotations

from collections.abc import Sequence

from worker.store import results, sql
from worker.store.database import Fetch

# Conversation events read per group of copies, at most.
_CAP: int = 20_000


def own_lines(fetch: Fetch, session_ids: Sequence[str]) -> dict[str, str]:
    """For each session, its first message whose text none of the others holds.

    The texts are compared by their digest (``events.preview_key``, written with the row),
    and only the rows shown are decompressed: deriving the text of every conversation
    event of the group cost a search up to 60 ms at 260k events (issue 41)."""
    found, at = fetch(
        "SELECT session_id AS session_id, seq AS seq, preview_key AS preview_key"
        " FROM events"
        " WHERE session_id IN (SELECT value FROM json_each(:ids))"
        " AND surface IN ('user', 'assistant') ORDER BY session_id, seq LIMIT :cap",
        {"ids": sql.json_list(session_ids), "cap": _CAP},
    )
    keys: dict[str, list[tuple[int, int]]] = {}
    holders: dict[int, set[str]] = {}
    for session_id, seq, key in map(at.getter(("session_id", "seq", "preview_key")), found):
        keys.setdefault(session_id, []).append((int(seq), key))
        holders.setdefault(key, set()).add(session_id)
    firsts: list[tuple[str, int]] = []
    for session_id, mine in keys.items():
        first = next((seq for seq, key in mine if len(holders[key]) == 1), None)
        if first is not None:
            firsts.append((session_id, first))
    if not firsts:
        return {}
    shown, at = fetch(
        "SELECT e.session_id AS session_id, e.seq AS seq,"
        " substr(event_text(e.doc, e.type, :bytes), 1, :chars) AS body"
        " FROM json_each(:rows) j JOIN events e"
        " ON e.session_id = json_extract(j.value, '$[0]')"
        " AND e.seq = json_extract(j.value, '$[1]')",
        {
            "rows": sql.json_list(firsts),
            "chars": sql.PREVIEW_SOURCE_CHARS,
            "bytes": sql.PREVIEW_SOURCE_BYTES,
        },
    )
    return {
        session_id: f"seq {int(seq)}: {results.preview(body)}"
        for session_id, seq, body in map(at.getter(("session_id", "seq", "body")), shown)
    }
