"""A generated Factory Droid history (``~/.factory/sessions``), made-up content.

The shapes follow what public readers of Droid's session files parse (Droid 0.2xx,
2025–2026): a ``session_start`` first line (rewritten in place when the title changes)
with ``id``, ``title``, ``sessionTitle``, ``isSessionTitleManuallySet``, ``cwd``,
``version``, a sub-agent session naming its ``callingSessionId``; then ``message``
records with Anthropic-style blocks; a ``.settings.json`` beside each session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/portafilter"
MAIN: Final = "d7000000-0000-4000-8000-00000000a001"
TASK: Final = "d7000000-0000-4000-8000-00000000b002"
TITLE: Final = "Portafilter basket sizes"
RENAMED: Final = "Basket sizes (renamed)"
SLUG: Final = "-home-dev-portafilter"
EVENTS: Final = {MAIN: 8, TASK: 3}
SKIPPED: Final = {"record:todo_state": 1, "block:message:assistant:image": 1}


def header(session: str, title: str, *, manual: bool = False, **extra: Any) -> dict[str, Any]:
    return {"type": "session_start", "id": session, "title": title, "sessionTitle": title,
            "owner": "dev", "version": 2, "cwd": CWD, "isSessionTitleManuallySet": manual,
            **extra}  # fmt: skip


def _message(n: int, role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": f"m-{n:03d}", "parentId": f"m-{n - 1:03d}" if n > 1 else None,
            "timestamp": f"2025-10-01T15:{n:02d}:00.000Z",
            "message": {"role": role, "content": list(blocks)}}  # fmt: skip


def main_messages() -> list[dict[str, Any]]:
    return [
        _message(1, "user", {"type": "text", "text": "which basket size for a double shot?"}),
        _message(2, "assistant", {"type": "thinking", "thinking": "Check the grinder profile."},
                 {"type": "tool_use", "id": "tu-1", "name": "Read",
                  "input": {"file_path": "profiles.yaml"}}),
        _message(3, "user", {"type": "tool_result", "tool_use_id": "tu-1",
                             "content": [{"type": "text", "text": "double: 18 g"}]}),
        {"type": "todo_state", "todos": []},  # a record type this importer does not know
        _message(4, "assistant", {"type": "text", "text": "An 18 g basket."},
                 {"type": "image", "source": {"type": "base64", "data": "AAAA"}}),
        _message(5, "user", {"type": "text", "text": "<system-reminder>plan</system-reminder>"}),
    ]  # fmt: skip


def task_messages() -> list[dict[str, Any]]:
    return [
        _message(1, "user", {"type": "text", "text": "# Task Tool Invocation\nlist basket sizes"}),
        _message(2, "assistant", {"type": "text", "text": "14 g, 18 g and 22 g baskets."}),
    ]


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def write(home: Path) -> Path:
    """The history under ``home/.factory/sessions``; returns that folder."""
    sessions = home / ".factory" / "sessions"
    folder = sessions / SLUG
    folder.mkdir(parents=True)
    (folder / f"{MAIN}.jsonl").write_bytes(lines([header(MAIN, TITLE), *main_messages()]))
    (folder / f"{MAIN}.settings.json").write_bytes(orjson.dumps({"model": "claude-sonnet-4"}))
    task = header(TASK, "New Session", callingSessionId=MAIN)
    (folder / f"{TASK}.jsonl").write_bytes(lines([task, *task_messages()]))
    return sessions


# One record of each type, and one content block of each type, Droid 0.225.2 writes to a
# session file (skips.WRITER_KINDS), in its shapes, made-up content.
EVERY_KIND: Final = "d7000000-0000-4000-8000-00000000c0de"
DOCUMENT: Final = "Basket sizes: 14 g single, 18 g double."


def every_writer_kind() -> list[dict[str, Any]]:
    pdf = {"type": "base64", "mediaType": "application/pdf", "data": "JVBERi0="}
    return [
        header(EVERY_KIND, TITLE),
        _message(1, "user", {"type": "text", "text": "which basket for a double?"},
                 {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                              "data": "iVBORw0KGgo="}},
                 {"type": "document", "source": {"type": "text", "mediaType": "text/plain",
                                                 "data": DOCUMENT, "name": "baskets.txt"}},
                 {"type": "document", "source": pdf}),
        _message(2, "assistant", {"type": "thinking", "thinking": "Check the sizes.",
                                  "signature": "sig"},
                 {"type": "redacted_thinking", "data": "EncRypTed"},
                 {"type": "tool_use", "id": "tu-1", "name": "Read",
                  "input": {"file_path": "baskets.txt"}}),
        _message(3, "user", {"type": "tool_result", "tool_use_id": "tu-1", "content": "18 g"}),
        {"type": "todo_state", "id": "t-1", "timestamp": "2025-10-01T15:04:00.000Z",
         "todos": [], "messageIndex": 3},
        {"type": "compaction_state", "id": "c-1", "timestamp": "2025-10-01T15:05:00.000Z",
         "summaryText": "Double shot: 18 g basket.", "summaryTokens": 10,
         "summaryKind": "auto", "removedCount": 3},
        {"type": "agent_turn_outcome", "turnId": "turn-1", "reason": "completed",
         "resultKind": "text"},
    ]  # fmt: skip


def write_every_writer_kind(home: Path) -> Path:
    folder = home / ".factory" / "sessions" / SLUG
    folder.mkdir(parents=True)
    path = folder / f"{EVERY_KIND}.jsonl"
    path.write_bytes(lines(every_writer_kind()))
    return path
