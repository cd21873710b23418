"""The wire dialects the scripted server speaks. Each module ``dialects/<name>.py`` exports
``ROUTES: list[Route]``; :func:`all_routes` collects every module present, so adding a dialect is
adding a file (nothing here names them)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.recording.script import Script


@dataclass(frozen=True)
class HttpReply:
    """What a handler answers: one chunk is sent with a Content-Length, several (SSE) are
    streamed with chunked transfer encoding, each flushed as it is written."""

    status: int
    content_type: str
    chunks: list[bytes]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def streamed(self) -> bool:
        return self.content_type.startswith("text/event-stream")


Handler = Callable[["re.Match[str]", dict[str, Any], Script], HttpReply]


@dataclass(frozen=True)
class Route:
    """``path`` is a regular expression matched in full against the request path without its
    query string, then (if that fails) against the path with it. ``public``: answered without
    the fake key (listings some agents probe before authenticating)."""

    method: str
    path: str
    handler: Handler
    public: bool = False


def json_reply(payload: Any, status: int = 200) -> HttpReply:
    return HttpReply(status, "application/json", [json.dumps(payload).encode()])


def sse_reply(events: Iterable[tuple[str | None, Any]]) -> HttpReply:
    """Server-sent events from (event name or None, JSON payload or preformatted str)."""
    chunks = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {text}\n\n".encode())
    return HttpReply(200, "text/event-stream", chunks, {"Cache-Control": "no-cache"})


def error_reply(status: int, message: str) -> HttpReply:
    return json_reply({"error": {"type": "scripted_server_error", "message": message}}, status)


def all_routes() -> list[Route]:
    routes: list[Route] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        routes += getattr(module, "ROUTES", [])
    return routes
