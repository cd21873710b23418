"""Cline CLI 3.x sessions: ``~/.cline/data/sessions/<id>/`` (moved by ``$CLINE_SESSION_DATA_DIR``,
``$CLINE_DATA_DIR`` (its ``sessions``) or ``$CLINE_DIR`` (its ``data/sessions``), as the CLI
resolves them).

The command-line Cline (the ``cline`` package, 3.x, built on the Cline SDK) does not write the
extension's ``tasks/<id>/api_conversation_history.json``: each session is a folder holding

- ``<id>.json``, the session: ``session_id``, ``cwd``, ``started_at``/``ended_at``,
  ``status``, ``provider``, ``model``, ``metadata.title``, ``metadata.sessionHistoryOrigin``;
- ``<id>.messages.json``, the lead agent's conversation, rewritten whole as it goes:
  ``{agent: "lead", sessionId, origin: {version}, messages: [{id, role, content, ts}]}`` with
  Anthropic-style blocks (``text``, ``thinking``, ``tool_use``, ``tool_result``);
- ``agent_<id>.messages.json`` per sub-agent (``spawn_agent``), the same document with
  ``agent: "subagent"``, ``sessionId: "<session>__agent_<id>"`` and
  ``origin.parentThreadId``.

Mapping: the folder is one source (``source_reading``: read whole on a change); the session is
``cline-<id>`` (cwd, start, title from ``<id>.json``); the user's prompt, which Cline wraps in
``<user_input mode="act">``, is the ``message/user`` (its mode kept); assistant text and
thinking are ``message/assistant``; ``tool_use`` a ``tool/call``; ``tool_result`` a
``tool/result`` citing it, whose output is the results' text (a list of ``{query, result,
error, success}``, or one such object as JSON text) and which is an error when a result says
``success: false``. A sub-agent is the child ``cline-<session>__agent_<id>`` whose start cites
the ``spawn_agent`` call that gave it its task (its first prompt is the call's ``task``; else
the calls and the sub-agents are paired in order). Unknown blocks and roles are counted.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import Problem, as_text, cut, safe_id
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    from_millis,
    read_document,
    said,
)
from worker.importers.whole_sources import ReadingImporter

NAME: Final = "cline-cli"
PREFIX: Final = "cline-"
SPAWN_TOOL: Final = "spawn_agent"
_USER_INPUT: Final = re.compile(r'^\s*<user_input mode="([^"]*)">(.*)</user_input>\s*$', re.S)


def messages_file(folder: Path) -> Path:
    return folder / f"{folder.name}.messages.json"


def _load(path: Path, reading: SourceReading) -> dict[str, Any] | None:
    # Written whole: a half-written file is read again on the next look.
    document = read_document(path, reading, optional=True)
    if document is None:
        return None
    data = document.value
    if not isinstance(data, dict):
        reading.problems.append(Problem(str(path), 0, "not a JSON object"))
        return None
    return data


def read_session(folder: Path) -> SourceReading:
    reading = SourceReading()
    manifest = _load(folder / f"{folder.name}.json", reading) or {}
    lead = _load(messages_file(folder), reading)
    if lead is None:
        return reading
    raw_id = str(manifest.get("session_id") or lead.get("sessionId") or folder.name)
    metadata = field_of(manifest, "metadata")
    origin = field_of(lead, "origin")
    start = _iso(manifest.get("started_at")) or _first_time(lead)
    cwd = manifest.get("cwd") or manifest.get("workspace_root")
    extra = {
        key: value
        for key, value in (
            ("model", manifest.get("model")),
            ("provider", manifest.get("provider")),
            ("version", origin.get("version")),
        )
        if isinstance(value, str) and value
    }
    title = metadata.get("title")
    main = SourceSession(
        session_id=safe_id(raw_id, prefix=PREFIX),
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        time=start,
        title=title if isinstance(title, str) else None,
        extra=extra,
    )
    main.items = _items(lead, start, main.skipped)
    reading.sessions.append(main)
    children = sorted(p for p in folder.glob("agent_*.messages.json") if p != messages_file(folder))
    spawns = [item for item in main.items if item.type == "tool/call"
              and item.payload.get("tool") == SPAWN_TOOL]  # fmt: skip
    for path in children:
        document = _load(path, reading)
        if document is None:
            continue
        child_id = str(document.get("sessionId") or f"{raw_id}__{path.name.split('.')[0]}")
        child_start = _first_time(document) or start
        child = SourceSession(
            session_id=safe_id(child_id, prefix=PREFIX),
            cwd=main.cwd,
            time=child_start,
            parent=main.session_id,
            extra={k: v for k, v in extra.items() if k == "version"},
        )
        child.items = _items(document, child_start, child.skipped)
        call = _spawning_call(spawns, child)
        if call is not None:
            call.spawns = child.session_id
        reading.sessions.append(child)
    return reading


def _spawning_call(spawns: list[Item], child: SourceSession) -> Item | None:
    """The ``spawn_agent`` call whose task is the sub-agent's first prompt, else the first
    call not yet paired (sub-agents sorted by their id, which starts with their start time)."""
    prompt = next((i.payload.get("text") for i in child.items if i.type == "message/user"), None)
    free = [call for call in spawns if call.spawns is None]
    for call in free:
        task = call.payload.get("input")
        if isinstance(task, dict) and prompt is not None and task.get("task") == prompt:
            return call
    return free[0] if free else None


def _iso(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_time(document: dict[str, Any]) -> str | None:
    messages = document.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    return from_millis(first.get("ts")) if isinstance(first, dict) else None


def _items(document: dict[str, Any], start: str | None, skipped: Counter[str]) -> list[Item]:
    messages = document.get("messages")
    items: list[Item] = []
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            skipped["message:not-an-object"] += 1
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            skipped[f"message:{role}"] += 1
            continue
        ref = str(message.get("id") or index)
        time = from_millis(message.get("ts")) or start
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for number, block in enumerate(blocks if isinstance(blocks, list) else []):
            item = _block(f"{ref}-{number}", str(role), block, time)
            if item is None:
                kind = block.get("type") if isinstance(block, dict) else None
                skipped[f"block:{kind}"] += 1
            else:
                items.append(item)
    return items


def _block(ref: str, role: str, block: object, time: str | None) -> Item | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        text = block["text"]
        wrapped = _USER_INPUT.match(text) if role == "user" else None
        if wrapped is None:
            return said(ref, role, text, time, f"{role}:text")
        item = said(ref, role, wrapped.group(2), time, "user:user_input")
        item.payload["mode"] = wrapped.group(1)
        return item
    if kind in ("thinking", "reasoning") and role == "assistant":
        thought = block.get("thinking") or block.get("text")
        if isinstance(thought, str):
            thinking = {"thinking": cut(thought)}
            return Item(ref, "message/assistant", "assistant", thinking, str(kind), time)
        return None
    if kind == "tool_use":
        call = {"tool": block.get("name"), "input": block.get("input")}
        return Item(ref, "tool/call", "assistant", call, "tool_use", time,
                    call=str(block.get("id")))  # fmt: skip
    if kind == "tool_result":
        output, failed = _result(block.get("content"))
        answer: dict[str, Any] = {"output": output}
        if failed or block.get("is_error") is True:
            answer["is_error"] = True
        return Item(ref, "tool/result", "tool", answer, "tool_result", time,
                    result_of=str(block.get("tool_use_id")))  # fmt: skip
    if kind == "file" and isinstance(block.get("content"), str):
        # A file the user attached (@path): its text, named by its path, is context.
        text = (
            f"[{block.get('path')}]\n{block['content']}" if block.get("path") else block["content"]
        )
        return Item(ref, "message/context", "system", {"text": cut(text)}, "file", time)
    return None


def _result(content: object) -> tuple[str, bool]:
    """(output text, whether it failed) of a tool result's content: a list of
    ``{query, result, error, success}`` (one per command or file), or such an object (or
    another tool's answer) as JSON text."""
    if isinstance(content, str):
        try:
            parsed = orjson.loads(content)
        except orjson.JSONDecodeError:
            return cut(content), False
        if not isinstance(parsed, dict):
            return cut(content), False
        content = [parsed]
    if not isinstance(content, list) or not all(isinstance(part, dict) for part in content):
        return as_text(content), False
    texts: list[str] = []
    failed = False
    for part in content:
        if part.get("success") is False or part.get("error"):
            failed = True
        text = part.get("result") if "result" in part else part.get("text")
        if isinstance(text, str) and text:
            texts.append(text)
        if isinstance(part.get("error"), str) and part["error"] not in (text or ""):
            texts.append(part["error"])
        if not isinstance(text, str):
            texts.append(as_text(part))
    return cut("\n".join(texts)), failed


class ClineCliImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Cline CLI 3.x session folders (~/.cline/data/sessions)"
    env_vars: ClassVar[tuple[str, ...]] = ("CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR")
    detect_order: ClassVar[int] = 52

    def default_locations(self) -> list[Path]:
        sessions = os.environ.get("CLINE_SESSION_DATA_DIR", "").strip()
        data = os.environ.get("CLINE_DATA_DIR", "").strip()
        base = os.environ.get("CLINE_DIR", "").strip() or str(Path.home() / ".cline")
        return [Path(sessions or Path(data or Path(base) / "data") / "sessions")]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return path.is_dir() and messages_file(path).is_file()

    def sources(self, root: Path) -> Iterator[Path]:
        if messages_file(root).is_file():
            return iter([root])
        return (found.parent for found in root.rglob("*.messages.json")
                if found.name == f"{found.parent.name}.messages.json")  # fmt: skip

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_session(path)
