"""Goose: ``sessions.db`` (SQLite) in Goose's data folder, ``sessions/``.

Studied: Goose's ``session_manager.rs`` (schema versions 1-5: ``sessions`` with
``working_dir``, ``name``/``description``, ``session_type``; ``messages`` with ``role``,
``content_json``, ``created_timestamp`` in seconds and, from v3, ``metadata_json``), its
``conversation/message.rs`` content shapes, and public readers of the database.

- a ``sessions`` row starts a session (cwd: ``working_dir``); its ``name`` (or, before
  schema v4, ``description``) titles it;
- ``messages`` in id order; each ``content_json`` item: ``text`` as ``message/user`` or
  ``message/assistant`` (harness text typed), ``thinking`` as assistant thinking,
  ``toolRequest`` (``toolCall.value``: ``name``, ``arguments``) as a ``tool/call``,
  ``toolResponse`` (``toolResult.value``: content list, or ``{content, isError}``) as
  a ``tool/result`` citing it;
- a message only the model sees (``metadata_json``: ``userVisible`` false,
  ``agentVisible`` true) is Goose's summary of a compacted conversation: a
  ``compaction`` replacing what came before; the originals stay, marked not
  ``agentVisible``, and were imported as they were written;
- skipped and counted: ``image``, ``redactedThinking``, ``toolConfirmationRequest``,
  ``frontendToolRequest``, ``systemNotification`` and other content types, roles other
  than user and assistant. Goose does not record which session spawned a sub-agent
  session (``session_type`` ``sub_agent``): those are imported as sessions of their own,
  marked ``session_type`` in their start.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.base import Problem, as_text, cut, iso_time, safe_id
from worker.importers.readonly_db import columns, grouped, read_only, tables
from worker.importers.snapshot import (
    Item,
    SessionCache,
    Snapshot,
    SourceSession,
    field_of,
    from_seconds,
    said,
)

NAME: Final = "goose"


def read_database(path: Path, cache: SessionCache | None = None) -> Snapshot:
    """Every session of a ``sessions.db``, read in one transaction; with a ``cache``, a
    session whose messages did not change is not read again."""
    snapshot = Snapshot()
    cache = SessionCache() if cache is None else cache
    try:
        with read_only(path) as conn:
            if not {"sessions", "messages"} <= tables(conn):
                snapshot.problems.append(
                    Problem(str(path), 0, "not a Goose database: no sessions/messages tables")
                )
                return snapshot
            meta = "metadata_json" if "metadata_json" in columns(conn, "messages") else "NULL"
            stamps = grouped(conn, "SELECT session_id, COUNT(*), MAX(id),"
                                   " TOTAL(LENGTH(content_json)) FROM messages"
                                   " GROUP BY session_id")  # fmt: skip
            for row in conn.execute("SELECT * FROM sessions ORDER BY created_at, id"):
                info = dict(row)
                stamp = (*tuple(row), *stamps.get(str(info["id"]), ()))
                session = cache.get(str(info["id"]), stamp)
                if session is None:
                    session = cache.put(str(info["id"]), stamp, _session(info))
                    query = (f"SELECT id, role, content_json, created_timestamp, {meta} AS meta"
                             " FROM messages WHERE session_id = ? ORDER BY id")  # fmt: skip
                    for message in conn.execute(query, (info["id"],)):
                        session.items.extend(_message(message, session.skipped))
                snapshot.sessions.append(session)
    except sqlite3.Error as exc:
        snapshot.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    return snapshot


def _session(info: dict[str, Any]) -> SourceSession:
    title = info.get("name") or info.get("description")
    cwd = info.get("working_dir")
    extra = {"session_type": info["session_type"]} if info.get("session_type") else {}
    return SourceSession(
        session_id=safe_id(str(info["id"]), prefix="goose-"),
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        time=iso_time(str(info.get("created_at") or "").replace(" ", "T")),
        title=title if isinstance(title, str) else None,
        extra=extra,
    )


def _message(row: sqlite3.Row, skipped: Counter[str]) -> list[Item]:
    role = str(row["role"])
    try:
        content = orjson.loads(row["content_json"])
    except (orjson.JSONDecodeError, TypeError):
        skipped["message:invalid-json"] += 1
        return []
    if role not in ("user", "assistant") or not isinstance(content, list):
        skipped[f"message:{role}"] += 1
        return []
    time = from_seconds(row["created_timestamp"])
    ref = str(row["id"])
    meta = _meta(row["meta"])
    if meta.get("userVisible") is False and meta.get("agentVisible", True) is not False:
        texts = [c for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return [Item(ref, "compaction", "system", {"summary": as_text(texts)}, "summary", time)]
    items: list[Item] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        item = _block(f"{ref}-{index}", role, block, time) if isinstance(block, dict) else None
        if item is None:
            skipped[f"content:{kind}"] += 1
        else:
            items.append(item)
    return items


def _block(ref: str, role: str, block: dict[str, Any], time: str | None) -> Item | None:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return said(ref, role, block["text"], time, f"{role}:text")
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        thought = {"thinking": cut(block["thinking"])}
        return Item(ref, "message/assistant", "assistant", thought, "thinking", time)
    if kind == "toolRequest":
        call = field_of(block, "toolCall")
        value = field_of(call, "value")
        payload: dict[str, Any] = {"tool": value.get("name"), "input": value.get("arguments")}
        if call.get("status") == "error":
            payload["error"] = as_text(call.get("error"))
        return Item(ref, "tool/call", "assistant", payload, "toolRequest", time,
                    call=str(block.get("id")))  # fmt: skip
    if kind == "toolResponse":
        result = field_of(block, "toolResult")
        # Older versions keep a list of content; later ones rmcp's {content, isError}.
        raw: object = result.get("value")
        error = result.get("status") == "error" or field_of(result, "value").get("isError") is True
        if isinstance(raw, dict):
            raw = raw.get("content")
        output = as_text(result.get("error") if result.get("status") == "error" else raw)
        answer: dict[str, Any] = {"output": output, **({"is_error": True} if error else {})}
        return Item(ref, "tool/result", "tool", answer, "toolResponse", time,
                    result_of=str(block.get("id")))  # fmt: skip
    return None


def _meta(raw: object) -> dict[str, Any]:
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
