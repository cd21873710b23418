"""One builder for the session events the tests publish or apply.

``event_dict`` gives the event as a dict, ``event`` as the wire's JSON bytes (the same keys
in the same order, so stored bytes are predictable). Defaults make a valid event: ids
unique across sessions, times one second apart by seq, a ``session/start`` in workspace
``/work/a``, other events a short text naming their session and seq. Any field can be
replaced or added with a keyword (``time=...``, ``payload=...``, ``extra=1`` to test a
refusal); a replaced field keeps its place, an added one comes last.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

import orjson

from contracts.partitions import workspace_key
from contracts.publish import EventRoutes
from contracts.subjects import Subjects

DEFAULT_CWD: Final = "/work/a"


def event_dict(
    session_id: str, seq: int, type_: str = "message/user", /, **fields: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": session_id,
        "seq": seq,
        "event_id": f"e-{session_id}-{seq}",
        "type": type_,
        "surface": "user",
        "time": f"2026-12-02T09:{seq // 60 % 60:02d}:{seq % 60:02d}Z",
        "payload": (
            {"cwd": DEFAULT_CWD}
            if type_ == "session/start"
            else {"text": f"hello {session_id} {seq}"}
        ),
    }
    body.update(fields)
    return body


def event(session_id: str, seq: int, type_: str = "message/user", /, **fields: Any) -> bytes:
    return orjson.dumps(event_dict(session_id, seq, type_, **fields))


def cite_list(sources: Any) -> list[dict[str, Any]]:
    """``[(session_id, seq), ...]`` as the wire's ``cites`` list."""
    return [{"session_id": s, "seq": q} for s, q in sources]


def padded(body: dict[str, Any], size: int, key: str = "text") -> bytes:
    """``body``'s JSON padded (payload field ``key``) to exactly ``size`` bytes."""
    body["payload"] = {**body["payload"], key: ""}
    body["payload"][key] = "x" * (size - len(orjson.dumps(body)))
    data = orjson.dumps(body)
    assert len(data) == size
    return data


def subject_of(subjects: Subjects, session_id: str, cwd: str | None = DEFAULT_CWD) -> str:
    """Where an event of a session started in ``cwd`` is published."""
    return subjects.events(workspace_key(cwd), session_id)


@cache
def routes_for(subjects: Subjects) -> EventRoutes:
    """One ``EventRoutes`` per set of names, for harnesses that publish a session's events
    over several calls (each session's start first, as a runtime publishes them)."""
    return EventRoutes(subjects)
