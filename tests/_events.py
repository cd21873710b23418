"""One builder for the session events the tests publish or apply (the wire's JSON bytes).

Defaults make a valid event: ids unique across sessions, times one second apart by seq, a
``session/start`` in workspace ``/work/a``, other events a short text naming their
session and seq. Any field can be replaced or added with a keyword (``time=...``,
``payload=...``, ``extra=1`` to test a refusal).
"""

from __future__ import annotations

from typing import Any

import orjson


def event(session_id: str, seq: int, type_: str = "message/user", /, **fields: Any) -> bytes:
    body: dict[str, Any] = {
        "session_id": session_id,
        "seq": seq,
        "event_id": f"e-{session_id}-{seq}",
        "type": type_,
        "surface": "user",
        "time": f"2026-12-02T09:{seq // 60 % 60:02d}:{seq % 60:02d}Z",
        "payload": (
            {"cwd": "/work/a"}
            if type_ == "session/start"
            else {"text": f"hello {session_id} {seq}"}
        ),
    }
    body.update(fields)
    return orjson.dumps(body)
