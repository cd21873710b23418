"""Zed's agent threads: ``threads/threads.db`` (SQLite) in Zed's data folder.

Studied: zed-industries/zed ``crates/agent/src/db.rs`` (table ``threads``: ``id``,
``summary``, ``updated_at``, ``data_type`` ``json`` or ``zstd``, ``data``, and the columns
added later: ``parent_id``, ``folder_paths``/``folder_paths_order``, ``created_at``; each
save rewrites the row with the whole thread, zstd-compressed JSON since 2025),
``thread.rs`` (``DbThread`` version 0.3.0: ``Message`` ``User``/``Agent``/``Resume``, their
serde shapes, ``SubagentContext``), ``tools/spawn_agent_tool.rs`` (its output names the
sub-agent's session) and ``legacy_thread.rs`` (the first agent's threads, versions 0.1.0,
0.2.0 and before, in the same table).

- each row is a session (``zed-<id>``); cwd: the first folder the user opened
  (``folder_paths`` in ``folder_paths_order``), else the first worktree of the thread's
  ``initial_project_snapshot``, else none; the ``summary`` titles it (not Zed's
  placeholder "New Thread");
- a ``User`` message's ``Text`` as ``message/user`` (harness text typed), a ``Mention``'s
  content (an attached file, selection, rule...) as ``message/context``; an ``Agent``
  message's ``Text``, ``Thinking`` and ``ToolUse`` (``tool/call``, waiting while its input
  is incomplete), then its ``tool_results`` as ``tool/result`` citing the call (errors
  flagged); ``Resume`` ("Continue where you left off") as ``message/context``;
- a sub-agent's thread (``parent_id``, ``subagent_context``) is a child of its caller,
  its start citing the ``spawn_agent`` call whose output names it;
- the older threads: ``segments`` (``text``, ``thinking``), ``tool_uses``,
  ``tool_results``, ``context`` the same way.

Zed keeps no time per message: the first message carries the thread's ``created_at``,
the others its ``updated_at`` when they were read. A zstd row needs the ``zstandard``
decompressor (``worker.importers.zstd``; Python before 3.14 has none of its own):
without it those threads are reported, once per reading, and the JSON rows still read.
Skipped and counted: images, redacted thinking, unknown content variants, ``system``
messages of the older threads.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers import zstd
from worker.importers.base import Problem, as_text, cut, iso_time, safe_id
from worker.importers.readonly_db import columns, read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    parents_first,
    said,
)
from worker.importers.whole_sources import ReadingImporter

DATABASE: Final = "threads.db"
PLACEHOLDER_TITLE: Final = "New Thread"
_SPAWNING_TOOLS: Final = ("spawn_agent",)  # compared with ==: a damaged name may be a list
_OPTIONAL: Final = ("parent_id", "folder_paths", "folder_paths_order", "created_at")


def zed_data_dir() -> Path:
    """Zed's ``paths::data_dir``."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Zed"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "Zed"
    base = os.environ.get("FLATPAK_XDG_DATA_HOME") or os.environ.get("XDG_DATA_HOME")
    return Path(base or Path.home() / ".local" / "share") / "zed"


def read_database(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every thread of a ``threads.db``, read in one transaction; with a ``cache``, a row
    whose ``updated_at`` and size did not change is not decoded again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    compressed = 0  # zstd rows this Python cannot read
    decompress = zstd.decompressor()
    try:
        with read_only(path) as conn:
            if "threads" not in tables(conn):
                reading.problems.append(Problem(str(path), 0, "not a Zed database: no threads"))
                return reading
            have = columns(conn, "threads")
            extra = ", ".join(c if c in have else f"NULL AS {c}" for c in _OPTIONAL)
            query = ("SELECT id, summary, updated_at, data_type, LENGTH(data) AS size, "
                     f"{extra} FROM threads"
                     " ORDER BY COALESCE(created_at, updated_at), id")  # fmt: skip
            for row in conn.execute(query).fetchall():
                info = dict(row)
                stamp = (info["updated_at"], info["data_type"], info["size"], info["summary"])
                session = cache.get(str(info["id"]), stamp)
                if session is None:
                    if info["data_type"] == "zstd" and decompress is None:
                        compressed += 1
                        continue
                    data = conn.execute("SELECT data FROM threads WHERE id = ?",
                                        (info["id"],)).fetchone()[0]  # fmt: skip
                    try:
                        thread = _thread(info["data_type"], data, decompress)
                    except (ValueError, orjson.JSONDecodeError) as exc:
                        problem = f"thread {info['id']}: cannot read it: {exc}"
                        reading.problems.append(Problem(str(path), 0, problem))
                        continue
                    session = cache.put(str(info["id"]), stamp, read_thread(info, thread))
                reading.sessions.append(session)
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    if compressed:
        reading.problems.append(Problem(str(path), 0, (
            f"{compressed} threads are zstd-compressed and this Python has no zstd:"
            f" {zstd.INSTALL_HINT} to read them")))  # fmt: skip
    reading.sessions = parents_first(reading.sessions)
    return reading


def _thread(
    data_type: object, data: object, decompress: Callable[[bytes], bytes] | None
) -> dict[str, Any]:
    raw = data if isinstance(data, bytes) else str(data).encode()
    if data_type == "zstd":
        if decompress is None:  # the caller counts these rows instead
            raise ValueError("zstd-compressed, and this Python has no zstd")
        try:
            raw = decompress(raw)
        except Exception as exc:  # zstandard.ZstdError and friends: a damaged row
            raise ValueError(f"not a zstd frame: {exc}") from exc
    elif data_type != "json":
        raise ValueError(f"unknown data_type {data_type!r}")
    thread = orjson.loads(raw)
    if not isinstance(thread, dict):
        raise ValueError("not a JSON object")
    return thread


def read_thread(row: dict[str, Any], thread: dict[str, Any]) -> SourceSession:
    """One ``threads`` row (its columns) and its decoded thread as a session."""
    title = row.get("summary") or thread.get("title") or thread.get("summary")
    parent = row.get("parent_id") or field_of(thread, "subagent_context").get("parent_thread_id")
    created = iso_time(row.get("created_at")) or iso_time(row.get("updated_at"))
    session = SourceSession(
        session_id=safe_id(str(row["id"]), prefix="zed-"),
        cwd=_cwd(row, thread),
        time=created,
        title=title if isinstance(title, str) and title != PLACEHOLDER_TITLE else None,
        parent=safe_id(parent, prefix="zed-") if isinstance(parent, str) and parent else None,
        extra={"version": thread["version"]} if isinstance(thread.get("version"), str) else {},
    )
    messages = thread.get("messages")
    later = iso_time(row.get("updated_at")) or created
    legacy = thread.get("version") != "0.3.0"
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        time = created if index == 0 else later
        read = _legacy_message if legacy else _message
        session.items.extend(read(f"m{index}", message, time, session.skipped))
    return session


def _cwd(row: dict[str, Any], thread: dict[str, Any]) -> str | None:
    paths = row.get("folder_paths")
    if isinstance(paths, str) and paths:
        listed = paths.split("\n")
        order = [int(i) for i in str(row.get("folder_paths_order") or "").split(",")
                 if i.strip().isdigit()]  # fmt: skip
        if sorted(order) == list(range(len(listed))):  # the first the user opened
            return listed[order.index(0)]
        return listed[0]
    snapshots = field_of(thread, "initial_project_snapshot").get("worktree_snapshots")
    first = snapshots[0] if isinstance(snapshots, list) and snapshots else None
    path = first.get("worktree_path") if isinstance(first, dict) else None
    return path if isinstance(path, str) and path else None


def _variant(tagged: object) -> tuple[str | None, Any]:
    """serde's externally tagged enum: ``{"Variant": value}`` (a unit variant: its name)."""
    if isinstance(tagged, str):
        return tagged, None
    if isinstance(tagged, dict) and len(tagged) == 1:
        name, value = next(iter(tagged.items()))
        return str(name), value
    return None, None


def _message(ref: str, message: object, time: str | None, skipped: Counter[str]) -> list[Item]:
    kind, body = _variant(message)
    if kind == "Resume":
        text = {"text": "Continue where you left off"}
        return [Item(ref, "message/context", "system", text, "Resume", time)]
    content = body.get("content") if isinstance(body, dict) else None
    if kind not in ("User", "Agent") or not isinstance(content, list):
        skipped[f"message:{kind}"] += 1
        return []
    items: list[Item] = []
    for index, part in enumerate(content):
        read = _user_part if kind == "User" else _agent_part
        item = read(f"{ref}-{index}", part, time, body)
        if item is None:
            skipped[f"content:{_variant(part)[0]}"] += 1
        else:
            items.append(item)
    results = body.get("tool_results") if kind == "Agent" else None
    for call_id, result in results.items() if isinstance(results, dict) else []:
        if isinstance(result, dict):
            items.append(_result(f"{ref}-result-{call_id}", str(call_id), result, time))
    return items


def _user_part(ref: str, part: object, time: str | None, body: dict[str, Any]) -> Item | None:
    kind, value = _variant(part)
    if kind == "Text" and isinstance(value, str):
        return said(ref, "user", value, time, "Text")
    if kind == "Mention" and isinstance(value, dict):
        text = value.get("content") or as_text(value.get("uri"))
        payload = {"text": cut(str(text))}
        return Item(ref, "message/context", "system", payload, "Mention", time)
    return None


def _agent_part(ref: str, part: object, time: str | None, body: dict[str, Any]) -> Item | None:
    kind, value = _variant(part)
    if kind == "Text" and isinstance(value, str):
        return said(ref, "assistant", value, time, "Text")
    if kind == "Thinking" and isinstance(value, dict) and isinstance(value.get("text"), str):
        thought = {"thinking": cut(value["text"])}
        return Item(ref, "message/assistant", "assistant", thought, "Thinking", time)
    if kind == "ToolUse" and isinstance(value, dict):
        call_id = str(value.get("id"))
        payload = {"tool": value.get("name"), "input": value.get("input")}
        call = Item(ref, "tool/call", "assistant", payload, "ToolUse", time, call=call_id,
                    complete=value.get("is_input_complete") is not False)  # fmt: skip
        results = body.get("tool_results")
        result = results.get(call_id) if isinstance(results, dict) else None
        call.spawns = _spawned(value, result)
        return call
    return None


def _spawned(use: dict[str, Any], result: object) -> str | None:
    """The sub-agent session a ``spawn_agent`` call started (not one it resumed)."""
    if use.get("name") not in _SPAWNING_TOOLS or field_of(use, "input").get("session_id"):
        return None
    output = result.get("output") if isinstance(result, dict) else None
    child = output.get("session_id") if isinstance(output, dict) else None
    if not child and isinstance(output, dict):
        child = field_of(output, "session_info").get("session_id")
    return safe_id(child, prefix="zed-") if isinstance(child, str) and child else None


def _result(ref: str, call_id: str, result: dict[str, Any], time: str | None) -> Item:
    payload: dict[str, Any] = {"output": cut(_result_text(result.get("content")))}
    if result.get("is_error") is True:
        payload["is_error"] = True
    if isinstance(result.get("tool_name"), str):
        payload["tool"] = result["tool_name"]
    return Item(ref, "tool/result", "tool", payload, "tool_result", time,
                result_of=call_id)  # fmt: skip


def _result_text(content: object) -> str:
    """A tool result's content: one value (older) or a list; each a string, ``{"Text"}``,
    ``{"type": "text", "text"}``, or an image (left out)."""
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            lowered = {str(k).lower(): v for k, v in part.items()}
            if isinstance(lowered.get("text"), str):
                texts.append(lowered["text"])
    return "\n".join(texts)


def _legacy_message(
    ref: str, message: object, time: str | None, skipped: Counter[str]
) -> list[Item]:
    """A message of the first agent's threads (versions 0.1.0, 0.2.0 and before)."""
    if not isinstance(message, dict):
        skipped["message:invalid"] += 1
        return []
    role = str(message.get("role", "")).lower()
    if role not in ("user", "assistant"):
        skipped[f"message:{role}"] += 1
        return []
    items: list[Item] = []
    context = message.get("context")
    if isinstance(context, str) and context.strip():
        items.append(Item(f"{ref}-context", "message/context", "system", {"text": cut(context)},
                          "context", time))  # fmt: skip
    segments = message.get("segments")
    if not isinstance(segments, list):  # before 0.1.0: one text
        segments = [{"type": "text", "text": message.get("text")}]
    for index, segment in enumerate(segments):
        kind = segment.get("type") if isinstance(segment, dict) else None
        text = segment.get("text") if isinstance(segment, dict) else None
        if kind == "text" and isinstance(text, str):
            items.append(said(f"{ref}-{index}", role, text, time, "text"))
        elif kind == "thinking" and isinstance(text, str) and role == "assistant":
            items.append(Item(f"{ref}-{index}", "message/assistant", "assistant",
                              {"thinking": cut(text)}, "thinking", time))  # fmt: skip
        else:
            skipped[f"segment:{kind}"] += 1
    uses = message.get("tool_uses")
    for index, use in enumerate(uses if isinstance(uses, list) else []):
        if isinstance(use, dict):
            payload = {"tool": use.get("name"), "input": use.get("input")}
            items.append(Item(f"{ref}-use-{index}", "tool/call", "assistant", payload,
                              "tool_use", time, call=str(use.get("id"))))  # fmt: skip
    results = message.get("tool_results")
    for result in results if isinstance(results, list) else []:
        if isinstance(result, dict):
            call_id = str(result.get("tool_use_id"))
            items.append(_result(f"{ref}-result-{call_id}", call_id, result, time))
    return items


def looks_like_database(path: Path) -> bool:
    if path.name != DATABASE or not path.is_file():
        return False
    try:
        with read_only(path) as conn:
            return "threads" in tables(conn) and "data_type" in columns(conn, "threads")
    except sqlite3.Error:
        return False


class ZedImporter(ReadingImporter):
    name: ClassVar[str] = "zed"
    help: ClassVar[str] = "Zed's agent threads (threads/threads.db in Zed's data folder)"
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_DATA_HOME", "FLATPAK_XDG_DATA_HOME")
    detect_order: ClassVar[int] = 63

    def default_locations(self) -> list[Path]:
        return [zed_data_dir() / "threads"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return looks_like_database(path)

    def sources(self, root: Path) -> Iterator[Path]:
        return (path for path in root.rglob(DATABASE) if looks_like_database(path))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_database(path, cache)
