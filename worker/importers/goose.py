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
  a ``tool/result`` citing it, whatever the message's role (Goose writes ``user`` and
  ``assistant``; a response stored under ``tool`` is still the call's result);
- a message only the model sees (``metadata_json``: ``userVisible`` false,
  ``agentVisible`` true) is Goose's summary of a compacted conversation: a
  ``compaction`` replacing what came before; the originals stay, marked not
  ``agentVisible``, and were imported as they were written;
- skipped and counted: ``image``, ``redactedThinking``, ``toolConfirmationRequest``,
  ``frontendToolRequest``, ``systemNotification`` and other content types, text under
  roles other than user and assistant. Goose does not record which session spawned a
  sub-agent session (``session_type`` ``sub_agent``): those are imported as sessions of
  their own, marked ``session_type`` in their start.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.base import Problem, Tally, as_text, cut, iso_time, load_json_line, safe_id
from worker.importers.readonly_db import columns, grouped, read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    from_seconds,
    said,
)

NAME: Final = "goose"
# The roles Goose writes (rmcp's ``Role``). A tool request or response is what it is
# under any role: a response stored under ``tool`` (as other writers of the tables do)
# is still the result of its call.
_ROLES: Final = frozenset({"user", "assistant"})
_TOOL_BLOCKS: Final = frozenset({"toolRequest", "toolResponse"})


def read_database(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every session of a ``sessions.db``, read in one transaction; with a ``cache``, a
    session whose messages did not change is not read again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    try:
        with read_only(path) as conn:
            if not {"sessions", "messages"} <= tables(conn):
                reading.problems.append(
                    Problem(str(path), 0, "not a Goose database: no sessions/messages tables")
                )
                return reading
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
                        session.items.extend(_row_message(message, session.skipped))
                reading.sessions.append(session)
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    return reading


def read_jsonl(path: Path) -> SourceReading:
    """An older session file (``sessions/<id>.jsonl``): its metadata line (working dir,
    description), then one message per line; a last line without its newline is still
    being written and waits."""
    reading = SourceReading()
    try:
        lines = path.read_bytes().split(b"\n")[:-1]
    except OSError as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read: {exc}"))
        return reading
    read = Tally()  # where a line that is not JSON is reported
    records = [(n, load_json_line(line, n, str(path), read)) for n, line in
               enumerate(lines, start=1)]  # fmt: skip
    reading.problems.extend(read.problems)
    header = records[0][1] if records and records[0][1] and "role" not in records[0][1] else {}
    created = path.stat().st_mtime
    session = _session({"id": path.stem, "created_at": None, **(header or {})})
    for number, record in records[1 if header else 0 :]:
        if record is None:
            continue
        session.time = session.time or from_seconds(record.get("created"))
        meta = field_of(record, "metadata")
        ref = str(record.get("id") or number)
        session.items.extend(_message(ref, str(record.get("role")), record.get("content"),
                                      record.get("created"), meta, session.skipped))  # fmt: skip
    session.time = session.time or from_seconds(created)
    reading.sessions.append(session)
    return reading


def looks_like_session_file(first: dict[str, Any]) -> bool:
    """Detection: an older Goose session file starts with its metadata (``working_dir``)."""
    return "working_dir" in first and "role" not in first


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


def _row_message(row: sqlite3.Row, skipped: Counter[str]) -> list[Item]:
    try:
        content = orjson.loads(row["content_json"])
    except (orjson.JSONDecodeError, TypeError):
        skipped["message:invalid-json"] += 1
        return []
    meta = _meta(row["meta"])
    return _message(str(row["id"]), str(row["role"]), content, row["created_timestamp"], meta,
                    skipped)  # fmt: skip


def _message(
    ref: str, role: str, content: object, created: object, meta: dict[str, Any],
    skipped: Counter[str],
) -> list[Item]:  # fmt: skip
    """One Goose message (a database row, or a line of an older session file)."""
    if not isinstance(content, list):
        skipped[f"message:{role}"] += 1
        return []
    time = from_seconds(created)
    if meta.get("userVisible") is False and meta.get("agentVisible", True) is not False:
        texts = [c for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return [Item(ref, "compaction", "system", {"summary": as_text(texts)}, "summary", time)]
    items: list[Item] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if role not in _ROLES and kind not in _TOOL_BLOCKS:
            # Goose writes only user and assistant: another role's text has no speaker.
            skipped[f"message:{role}:{kind}"] += 1
            continue
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
