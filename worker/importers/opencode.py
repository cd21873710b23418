"""OpenCode (and Kilo CLI, its fork): ``opencode.db`` or the older ``storage/`` JSON tree.

Studied: OpenCode's ``session.sql.ts`` and ``message-v2.ts`` (2025-2026 sources, the
SQLite store; ``storage/{session,message,part}`` JSON files before it), and public
readers of both. Kilo CLI keeps the same schema in ``kilo/kilo.db``.

- ``session`` (``id``, ``parent_id``, ``directory``, ``title``, ``version``,
  ``time_created``) starts a session whose cwd is its ``directory`` (else the project's
  ``worktree``); a ``parent_id`` makes it a child (OpenCode's sub-agents, started by the
  ``task`` tool, whose ``metadata.sessionId`` names the child: its start cites the call).
  The title is the session's, unless still OpenCode's placeholder ("New session - …").
- ``message`` rows (``data``: ``role``, ``time``, ``summary``...) in time order, and their
  ``part`` rows (``data.type``) in id order: ``text`` as ``message/user`` (harness text
  typed) or ``message/assistant``, synthetic user text (file contents the harness adds)
  as ``message/context``; ``reasoning`` as ``message/assistant`` thinking; ``tool`` as a
  ``tool/call`` (once running: its input is final) and its ``tool/result`` (once
  completed or failed).
- an assistant message with ``summary: true`` is OpenCode's compaction summary: one
  ``compaction`` replacing everything before it.
- skipped and counted: ``step-start``/``step-finish``/``snapshot``/``patch`` (bookkeeping),
  ``file``/``agent``/``subtask``/``retry``/``compaction`` parts (references and markers
  whose content appears as other parts), Kilo's transient text parts (a progress line it
  deletes when done: read from its 7.7.9 binary, seen in a recording's event log),
  unknown part types.

OpenCode 1.18.33 and Kilo CLI 7.7.9 also write a newer message model, one row per message
in ``session_message`` (``type``, ``seq``, ``data``), but only for a session prompted
through their v2 API (``/api/session/:id/prompt``: its runner publishes ``session.next.*``
events, projected into that table alone; the v1 prompt path of ``run`` and the TUI writes
``message``/``part`` only, read in both binaries; checked live: ``opencode serve`` serves
that API with no flag, and a recorded v2 session, ``tests/importers/recorded/opencode-v2``,
has ``session_message`` rows alone). Such a session's conversation is only
there, so it is read too, merged with any v1 messages by time: ``user`` as
``message/user`` (harness text typed), ``synthetic`` and ``system`` as
``message/context``, ``shell`` (a command the user ran) as a ``tool/call`` and its
``tool/result``, ``assistant`` content blocks (``text``, ``reasoning``, ``tool``) as
above and its ``error`` as ``message/context``, ``compaction`` as a ``compaction``;
agent and model switches and attached files are counted. A v2 tool's output is its
``content``, else its ``result``, else what it keeps in ``structured`` (1.18.33's ``read``:
the file's text in ``structured.content``); a call the runner failed on an interrupt
("Tool execution interrupted") is marked ``interrupted``. 1.18.33's v2 runner has no
``task`` tool, so v2 sessions have no sub-agents.

A part still being written (a text without an end time in an unfinished message, a
pending or running tool) waits, with what follows it in its session, for a later look;
once a later answer exists it is over: a turn interrupted by Ctrl-C leaves its message
unfinished and its tool ``running`` for good, and such a call's result is published
marked ``interrupted`` (``is_error``, no output).
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.base import Problem, as_text, cut, json_value, safe_id
from worker.importers.readonly_db import grouped, read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    from_millis,
    parents_first,
    read_document,
    said,
    tool_pair,
)

NAME: Final = "opencode"
_PLACEHOLDER_TITLE: Final = re.compile(r"^(New|Child) session - \d{4}-\d{2}-\d{2}T")
_BOOKKEEPING: Final = frozenset({"step-start", "step-finish", "snapshot", "patch"})
_MARKERS: Final = frozenset({"file", "agent", "subtask", "retry", "compaction"})
_SPAWNING_TOOLS: Final = frozenset({"task"})
# Kilo CLI marks a progress line ("Initializing snapshot…") this way and deletes it when done.
_LIFECYCLE: Final = "kilocode.lifecycle"

_MESSAGE_STAMPS: Final = (
    "SELECT session_id, COUNT(*), TOTAL(LENGTH(data)) FROM message GROUP BY session_id"
)
_PART_STAMPS: Final = (
    "SELECT m.session_id, COUNT(*), TOTAL(LENGTH(p.data)) FROM part p"
    " JOIN message m ON m.id = p.message_id GROUP BY m.session_id"
)
_ENTRY_STAMPS: Final = (
    "SELECT session_id, COUNT(*), TOTAL(LENGTH(data)) FROM session_message GROUP BY session_id"
)
# The v2 message types that are bookkeeping, not conversation.
_SWITCHES: Final = frozenset({"agent-switched", "model-switched"})

# One message as read: its info (id, role, time...) and its parts, in order.
Message = tuple[dict[str, Any], list[dict[str, Any]]]


def read_database(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every session of an ``opencode.db`` (or ``kilo.db``), read in one transaction;
    with a ``cache``, a session whose rows did not change is not read again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    try:
        with read_only(path) as conn:
            missing = {"session", "message", "part"} - tables(conn)
            if missing:
                what = f"not an OpenCode database: no {', '.join(sorted(missing))} table"
                reading.problems.append(Problem(str(path), 0, what))
                return reading
            worktrees = _worktrees(conn)
            stamps = session_stamps(conn)
            v2 = "session_message" in tables(conn)
            for row in conn.execute("SELECT * FROM session ORDER BY time_created, id"):
                sid = str(row["id"])
                stamp = (*tuple(row), *stamps.get(sid, ()))
                session = cache.get(sid, stamp)
                if session is None:
                    skipped: Counter[str] = Counter()
                    messages = _db_messages(conn, sid, skipped)
                    entries = _db_entries(conn, sid, skipped) if v2 else []
                    info = _session_info(dict(row), worktrees)
                    built = build(info, messages, skipped, entries=entries)
                    session = cache.put(sid, stamp, built)
                reading.sessions.append(session)
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    reading.sessions = parents_first(reading.sessions)
    return reading


def session_stamps(conn: sqlite3.Connection) -> dict[str, tuple[object, ...]]:
    """Per session: its messages' and parts' counts and total length (a streamed part
    grows; a tool's state changes), read without decoding any JSON."""
    messages = grouped(conn, _MESSAGE_STAMPS)
    parts = grouped(conn, _PART_STAMPS)
    entries = grouped(conn, _ENTRY_STAMPS) if "session_message" in tables(conn) else {}
    return {
        sid: (*messages.get(sid, (0, 0)), *parts.get(sid, (0, 0)), *entries.get(sid, ()))
        for sid in messages.keys() | entries.keys()
    }


def _worktrees(conn: sqlite3.Connection) -> dict[str, str]:
    if "project" not in tables(conn):
        return {}
    rows = conn.execute("SELECT id, worktree FROM project")
    return {str(r[0]): str(r[1]) for r in rows if isinstance(r[1], str)}


def _session_info(row: dict[str, Any], worktrees: dict[str, str]) -> dict[str, Any]:
    """A session row in the shape of the older JSON file (what ``build`` reads)."""
    directory = row.get("directory") or worktrees.get(str(row.get("project_id")))
    return {
        "id": row["id"], "parentID": row.get("parent_id"), "directory": directory,
        "title": row.get("title"), "version": row.get("version"),
        "time": {"created": row.get("time_created")},
    }  # fmt: skip


def _db_messages(conn: sqlite3.Connection, session: str, skipped: Counter[str]) -> list[Message]:
    messages: list[Message] = []
    by_id: dict[str, list[dict[str, Any]]] = {}
    query = "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id"
    for row in conn.execute(query, (session,)):
        info = _json(row["data"], skipped, "message")
        if info is not None:
            info["id"] = row["id"]
            parts: list[dict[str, Any]] = []
            by_id[str(row["id"])] = parts
            messages.append((info, parts))
    query = "SELECT p.id, p.message_id, p.data FROM part p JOIN message m ON m.id = p.message_id"
    for row in conn.execute(query + " WHERE m.session_id = ? ORDER BY p.id", (session,)):
        part = _json(row["data"], skipped, "part")
        if part is not None and str(row["message_id"]) in by_id:
            part["id"] = row["id"]
            by_id[str(row["message_id"])].append(part)
    return messages


def _db_entries(
    conn: sqlite3.Connection, session: str, skipped: Counter[str]
) -> list[dict[str, Any]]:
    """A session's v2 messages in their order (``seq``, the event sequence that appended
    each), each its ``data`` with the row's ``id``, ``type`` and ``time_created`` back."""
    entries: list[dict[str, Any]] = []
    query = "SELECT id, type, time_created, data FROM session_message WHERE session_id = ?"
    for row in conn.execute(query + " ORDER BY seq, id", (session,)):
        data = _json(row["data"], skipped, "session_message")
        if data is not None:
            entries.append({**data, "id": row["id"], "type": row["type"],
                            "time_created": row["time_created"]})  # fmt: skip
    return entries


def _json(raw: object, skipped: Counter[str], what: str) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else None
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        skipped[f"{what}:invalid-json"] += 1
        return None
    return value


def read_tree(storage: Path) -> SourceReading:
    """The older layout: ``storage/session/<project>/<id>.json``,
    ``storage/message/<session>/<id>.json``, ``storage/part/<message>/<id>.json``."""
    reading = SourceReading()
    worktrees = {}
    for file in sorted((storage / "project").glob("*.json")):
        project = _file_json(file, reading)
        if project and isinstance(project.get("worktree"), str):
            worktrees[str(project.get("id"))] = project["worktree"]
    infos = [i for f in (storage / "session").glob("*/*.json") if (i := _file_json(f, reading))]
    infos.sort(key=lambda i: (_created(i), str(i.get("id"))))
    for info in infos:
        if not info.get("directory"):
            info["directory"] = worktrees.get(str(info.get("projectID")))
        messages: list[Message] = []
        files = sorted((storage / "message" / str(info.get("id"))).glob("*.json"))
        for message in (m for f in files if (m := _file_json(f, reading))):
            parts = (storage / "part" / str(message.get("id"))).glob("*.json")
            loaded = sorted((p for f in parts if (p := _file_json(f, reading))),
                            key=lambda p: str(p.get("id")))  # fmt: skip
            messages.append((message, loaded))
        messages.sort(key=lambda m: (_created(m[0]), str(m[0].get("id"))))
        reading.sessions.append(build(info, messages))
    reading.sessions = parents_first(reading.sessions)
    return reading


def _file_json(path: Path, reading: SourceReading) -> dict[str, Any] | None:
    # A file being written is read again on the next poll; a broken one is reported.
    document = read_document(path, reading)
    value = None if document is None else document.value
    return value if isinstance(value, dict) else None


def _created(info: dict[str, Any]) -> float:
    created = field_of(info, "time").get("created")
    return float(created) if isinstance(created, int | float) else 0.0


def build(
    info: dict[str, Any],
    messages: Iterable[Message],
    skipped: Counter[str] | None = None,
    *,
    entries: Iterable[dict[str, Any]] = (),
) -> SourceSession:
    """One OpenCode session, from its info, its messages with their parts and its v2
    messages (``session_message`` rows), in time order."""
    parent = info.get("parentID")
    title = info.get("title") if isinstance(info.get("title"), str) else None
    extra = {"version": info["version"]} if isinstance(info.get("version"), str) else {}
    directory = info.get("directory")
    session = SourceSession(
        session_id=safe_id(str(info.get("id"))),
        cwd=directory if isinstance(directory, str) and directory else None,
        time=from_millis(_created(info)),
        title=None if title is None or _PLACEHOLDER_TITLE.match(title) else title,
        parent=safe_id(parent) if isinstance(parent, str) and parent else None,
        extra=extra,
        skipped=Counter() if skipped is None else skipped,
    )
    # The v1 messages come in time order, the v2 ones in their sequence; a session
    # prompted through both APIs interleaves them by creation time (a stable sort).
    listed: list[Message | dict[str, Any]] = [*messages]
    v2 = list(entries)
    if v2:
        listed = sorted([*listed, *v2], key=_created_of)
    answered = [i for i, unit in enumerate(listed) if _is_answer(unit)]
    for index, unit in enumerate(listed):
        # A message followed by a later answer is over, finished or not: the agent went on
        # (a turn interrupted by Ctrl-C leaves its message and a running tool for good). A
        # later user message alone is not enough: one typed while a turn runs is queued.
        # Nor is a later summary: Kilo compacts in chunks, each a summary message written
        # (and deleted) after the kept one, which it fills last.
        over = bool(answered) and index < answered[-1]
        if isinstance(unit, dict):
            session.items.extend(_entry_items(unit, session.skipped, over=over))
        else:
            session.items.extend(_message_items(*unit, session.skipped, over=over))
    return session


def _created_of(unit: Message | dict[str, Any]) -> float:
    if isinstance(unit, dict):
        created = field_of(unit, "time").get("created", unit.get("time_created"))
        return float(created) if isinstance(created, int | float) else 0.0
    return _created(unit[0])


def _is_answer(unit: Message | dict[str, Any]) -> bool:
    if isinstance(unit, dict):
        return unit.get("type") == "assistant"
    return unit[0].get("role") == "assistant" and unit[0].get("summary") is not True


# The error SessionRunner.failInterruptedTools writes on a call cut off by an interrupt.
_V2_INTERRUPTED = "Tool execution interrupted"


def _entry_items(entry: dict[str, Any], skipped: Counter[str], *, over: bool) -> list[Item]:
    """One v2 message (a ``session_message`` row: OpenCode's ``Session.Message`` union)."""
    kind = entry.get("type")
    ref = str(entry.get("id"))
    times = field_of(entry, "time")
    time = from_millis(times.get("created", entry.get("time_created")))
    text = entry.get("text")
    if kind == "user" and isinstance(text, str):
        files = entry.get("files")
        if isinstance(files, list) and files:
            skipped["session_message:user:file"] += len(files)
        return [said(ref, "user", text, time, "v2:user")] if text.strip() else []
    if kind in ("synthetic", "system") and isinstance(text, str):
        return [Item(ref, "message/context", "system", {"text": cut(text)}, f"v2:{kind}", time)]
    if kind == "shell":  # a command the user ran (``!cmd``): its output is in the row
        done = "completed" in times or over
        return tool_pair(
            ref, str(entry.get("callID") or ref), "shell", {"command": entry.get("command")},
            time, "v2:shell", output=entry.get("output"), answered=done,
        )  # fmt: skip
    if kind == "assistant":
        return _answer_items(ref, entry, time, skipped, over=over)
    if kind == "compaction":
        payload = {"summary": cut(str(entry.get("summary") or ""))}
        return [Item(ref, "compaction", "system", payload, "v2:compaction", time)]
    skipped[
        f"session_message:{kind}" if kind in _SWITCHES else f"session_message:unknown:{kind}"
    ] += 1
    return []


def _answer_items(
    ref: str, entry: dict[str, Any], time: str | None, skipped: Counter[str], *, over: bool
) -> list[Item]:
    error = field_of(entry, "error")
    finished = "completed" in field_of(entry, "time") or bool(error) or over
    items: list[Item] = []
    content = entry.get("content")
    for n, block in enumerate(content if isinstance(content, list) else []):
        kind = block.get("type") if isinstance(block, dict) else None
        key = f"{ref}-{n}"
        if kind == "text" and isinstance(block.get("text"), str):
            if finished and not block["text"].strip():
                skipped["session_message:text:empty"] += 1
                continue
            item = said(key, "assistant", block["text"], time, "v2:assistant:text")
            item.complete = finished
            items.append(item)
        elif kind == "reasoning" and isinstance(block.get("text"), str):
            written = finished or "completed" in field_of(block, "time")
            items.append(Item(key, "message/assistant", "assistant",
                              {"thinking": cut(block["text"])}, "v2:reasoning", time,
                              complete=written))  # fmt: skip
        elif kind == "tool":
            items.extend(_v2_tool_items(key, block, time, over=over))
        else:
            skipped[f"session_message:assistant:unknown:{kind}"] += 1
    if error:
        text = cut(f"error: {error.get('message') or error.get('type')}")
        payload: dict[str, Any] = {"text": text, "is_error": True}
        items.append(Item(f"{ref}-error", "message/context", "system", payload,
                          "v2:assistant:error", time))  # fmt: skip
    return items


def _v2_tool_items(ref: str, block: dict[str, Any], time: str | None, *, over: bool) -> list[Item]:
    state = field_of(block, "state")
    status = state.get("status")
    error = status == "error"
    message = field_of(state, "error").get("message")
    if error:
        output: object = message or state.get("content")
    else:
        # 1.18.33's read keeps what it read in ``structured`` ({uri, name, content, ...})
        # with ``content`` empty; other tools fill ``content``.
        structured = field_of(state, "structured")
        content = state.get("content")
        output = content or state.get("result") or structured.get("content") or structured or None
    # Pending: the input is still the model's partial JSON text.
    arguments = state.get("input") if status != "pending" else json_value(state.get("input"))
    items = tool_pair(
        ref, str(block.get("id") or ref), block.get("name"), arguments, time, "v2:tool",
        output=output, answered=status in ("completed", "error"), error=error,
    )  # fmt: skip
    if error and message == _V2_INTERRUPTED:
        # The runner's failInterruptedTools: the turn was interrupted while the call ran.
        items[1].payload["interrupted"] = True
    return _settled(items, status, over=over)


def _message_items(
    message: dict[str, Any], parts: list[dict[str, Any]], skipped: Counter[str], *, over: bool
) -> list[Item]:
    role = message.get("role")
    times = field_of(message, "time")
    time = from_millis(times.get("created"))
    if role not in ("user", "assistant"):
        skipped[f"message:{role}"] += 1
        return []
    finished = role == "user" or "completed" in times or bool(message.get("error")) or over
    if role == "assistant" and message.get("summary") is True:
        payload = {"summary": as_text([p for p in parts if p.get("type") == "text"])}
        return [Item(str(message.get("id")), "compaction", "system", payload,
                     "assistant:summary", time, complete=finished)]  # fmt: skip
    items: list[Item] = []
    for part in parts:
        items.extend(_part_items(str(role), part, finished, time, skipped, over=over))
    return items


def _part_items(
    role: str,
    part: dict[str, Any],
    finished: bool,
    time: str | None,
    skipped: Counter[str],
    *,
    over: bool = False,
) -> list[Item]:
    kind = part.get("type")
    ref = str(part.get("id"))
    span = field_of(part, "time")
    written = finished or "end" in span
    if kind == "text" and isinstance(part.get("text"), str):
        if field_of(part, "metadata").get(_LIFECYCLE) == "transient":
            skipped["part:text:transient"] += 1
            return []
        if part.get("synthetic") is True:  # the harness's: file contents, tool echoes
            payload = {"text": cut(part["text"])}
            return [Item(ref, "message/context", "system", payload, "text:synthetic", time)]
        if written and not part["text"].strip():  # seen in a real Kilo CLI database
            skipped["part:text:empty"] += 1
            return []
        item = said(ref, role, part["text"], time, f"{role}:text")
        item.complete = written
        return [item]
    if kind == "reasoning" and isinstance(part.get("text"), str):
        payload = {"thinking": cut(part["text"])}
        return [Item(ref, "message/assistant", "assistant", payload, "reasoning", time,
                     complete=written)]  # fmt: skip
    if kind == "tool":
        return _tool_items(ref, part, time, over=over)
    skipped[f"part:{kind}" if kind in _BOOKKEEPING | _MARKERS else f"part:unknown:{kind}"] += 1
    return []


def _tool_items(ref: str, part: dict[str, Any], time: str | None, *, over: bool) -> list[Item]:
    state = field_of(part, "state")
    status = state.get("status")
    error = status == "error"
    output = state.get("error") if error else state.get("output")
    items = tool_pair(
        ref, str(part.get("callID") or ref), part.get("tool"), state.get("input"), time,
        "tool", output=output, answered=status in ("completed", "error"), error=error,
    )  # fmt: skip
    _settled(items, status, over=over)
    metadata = field_of(state, "metadata")
    child = metadata.get("sessionId")
    if part.get("tool") in _SPAWNING_TOOLS and isinstance(child, str) and child:
        items[0].spawns = safe_id(child)
    if isinstance(state.get("title"), str):
        items[1].payload["title"] = as_text(state["title"])
    return items


def _settled(items: list[Item], status: object, *, over: bool) -> list[Item]:
    """A tool part's call and result as far as its state goes (v1 and v2 alike)."""
    interrupted = over and status in ("pending", "running")
    # Pending: the model is still writing the input. Running: the input is final.
    items[0].complete = status in ("running", "completed", "error") or interrupted
    if interrupted:  # never to finish: its result says so, with no output
        items[1].complete = True
        items[1].source_type = "tool:interrupted"
        items[1].payload.update({"is_error": True, "interrupted": True, "status": status})
    return items


def looks_like_database(path: Path) -> bool:
    return path.suffix == ".db" and path.stem in ("opencode", "kilo")
