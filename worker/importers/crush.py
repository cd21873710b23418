"""Crush (charmbracelet/crush): the SQLite ``crush.db`` in a project's data folder.

Studied: Crush's ``internal/db/migrations`` (2025-04 initial schema to 2026-01
``read_files``), ``internal/db/sql/*.sql``, ``internal/message/{content,message}.go``,
``internal/session/session.go``, ``internal/projects/projects.go`` and
``internal/agent/{agent,coordinator}.go`` (source at v0.90, 2026-08).

- Where: ``<project>/.crush/crush.db`` (``options.data_directory`` moves it); the global
  ``projects.json`` (``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``, else
  ``~/.local/share/crush``) lists each working directory with its data folder.
- The database records no working directory: the cwd is the one ``projects.json`` gives
  for that data folder, else the folder holding ``.crush`` (the project Crush opened);
  none when neither says (a data folder elsewhere, not listed).
- ``sessions`` (``id``, ``parent_session_id``, ``title``, ``created_at`` in seconds,
  ``summary_message_id``) start sessions. A sub-agent (the ``agent`` tool, agentic fetch)
  is a session whose id is ``<message id>$$<tool call id>`` (older versions: the tool
  call id) and whose parent is the caller: its start cites that call. The
  ``title-<parent>`` sessions that only generate a title are skipped and counted.
  Titles: the session's, unless a placeholder ("Untitled Session", "New Session").
- ``messages`` (``role``, ``parts`` JSON: ``[{"type", "data"}]``, ``created_at``,
  ``finished_at``, ``is_summary_message``) in time order: ``text`` as ``message/user``
  (harness text typed) or ``message/assistant``, ``reasoning`` as thinking,
  ``tool_call`` as ``tool/call`` (once ``finished``: its input is whole),
  ``tool_result`` (in ``tool`` messages) as its ``tool/result`` (``is_error`` kept),
  ``shell_command`` (the user's ``!`` commands) as ``command`` and ``command/output``,
  a ``finish`` with reason ``error`` or ``content_filter`` as ``message/context``;
  an ``is_summary_message`` assistant message is the compaction summary: a
  ``compaction`` replacing everything before it.
- skipped and counted: ``finish`` parts of other reasons (bookkeeping), ``image_url``
  and ``binary`` (attachments), unknown part types, roles other than user, assistant
  and tool, the ``files`` and ``read_files`` tables (file versions, not conversation).

An assistant message still streaming (no ``finish`` part, no ``finished_at``) waits,
with what follows it in its session, for a later look; one that another message follows,
or that was last written ``ABANDONED_S`` ago, was abandoned (versions before 2026 left
a message cut off by quitting unfinished) and is read as it stands.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time as clock
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import Problem, as_text, cut, json_value, safe_id
from worker.importers.readonly_db import columns, grouped, read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    from_seconds,
    parents_first,
    said,
)
from worker.importers.whole_sources import ReadingImporter, data_home

NAME: Final = "crush"
PREFIX: Final = "crush-"
# The key of a call Crush kept with an empty id (a model's malformed call; its "Tool not
# found" result names the same empty id): the next result without an id answers it.
_NO_ID: Final = "\0no-id"
DATABASE: Final = "crush.db"
DATA_FOLDER: Final = ".crush"
_PLACEHOLDER_TITLES: Final = frozenset({"Untitled Session", "New Session"})
_TITLE_SESSION: Final = "title-"  # CreateTitleSession: "title-" + the parent's id
_SUB_AGENT_SEPARATOR: Final = "$$"  # CreateAgentToolSessionID: message id $$ tool call id
_SHOWN_FINISHES: Final = frozenset({"error", "content_filter"})
# An unfinished message not written for this long is not streaming: Crush writes a
# streaming message every few seconds.
ABANDONED_S: Final = 600
_STAMPS: Final = (
    "SELECT session_id, COUNT(*), TOTAL(LENGTH(parts)), MAX(updated_at),"
    " COUNT(finished_at) FROM messages GROUP BY session_id"
)


def global_data() -> Path:
    """Crush's global data folder (``projects.json``, ``crush.json``)."""
    moved = os.environ.get("CRUSH_GLOBAL_DATA")
    if moved:
        return Path(moved)
    if os.environ.get("XDG_DATA_HOME") or sys.platform != "win32":
        return data_home() / "crush"
    local = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
    return Path(local) / "crush"


def projects() -> list[tuple[str, str]]:
    """``projects.json``: (working directory, data folder) of each project Crush opened."""
    try:
        listed = orjson.loads((global_data() / "projects.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return []
    entries = listed.get("projects") if isinstance(listed, dict) else None
    return [(str(p["path"]), str(p["data_dir"])) for p in entries or []
            if isinstance(p, dict) and p.get("path") and p.get("data_dir")]  # fmt: skip


def working_dir(database: Path) -> str | None:
    """The cwd of a data folder's sessions: the working directory ``projects.json`` lists
    for it (when one), else the project folder holding ``.crush``, else none."""
    folder = database.absolute().parent
    listed = {path for path, data in projects() if Path(data) == folder}
    if len(listed) == 1:
        return listed.pop()
    return str(folder.parent) if folder.name == DATA_FOLDER else None


def read_database(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every session of a ``crush.db``, in one transaction; with a ``cache``, a session
    whose messages did not change is not decoded again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    cwd = working_dir(path)
    now = clock.time()
    skipped_sessions: Counter[str] = Counter()
    try:
        with read_only(path) as conn:
            if not {"sessions", "messages"} <= tables(conn):
                what = "not a Crush database: no sessions/messages tables"
                reading.problems.append(Problem(str(path), 0, what))
                return reading
            summary = "is_summary_message" in columns(conn, "messages")  # from 2025-08
            query = (
                "SELECT id, role, parts, created_at, updated_at, finished_at, "
                + ("is_summary_message" if summary else "0")
                + " AS summary FROM messages WHERE session_id = ? ORDER BY created_at, rowid"
            )
            stamps = grouped(conn, _STAMPS)
            rows = [dict(row) for row in conn.execute(
                "SELECT * FROM sessions ORDER BY created_at, rowid")]  # fmt: skip
            children = _children(rows)
            for info in rows:
                sid = str(info["id"])
                if sid.startswith(_TITLE_SESSION) and info.get("parent_session_id"):
                    skipped_sessions["session:title-generation"] += 1
                    continue
                linked = tuple(sorted(children.get(sid, {}).items()))
                counts = stamps.get(sid, ())
                # A session's last unfinished message becomes abandoned with time alone.
                aged = bool(counts) and _abandoned(None, counts[2], now)
                stamp = (*info.values(), *counts, linked, aged)
                session = cache.get(sid, stamp)
                if session is None:
                    session = _session(info, cwd)
                    messages = [dict(m) for m in conn.execute(query, (sid,))]
                    for n, message in enumerate(messages):
                        followed = n + 1 < len(messages)
                        message["abandoned"] = _abandoned(followed, message["updated_at"], now)
                        session.items.extend(_message(message, session.skipped))
                    _link_children(session, children.get(sid, {}))
                    session = cache.put(sid, stamp, session)
                reading.sessions.append(session)
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    reading.sessions = parents_first(reading.sessions)
    if skipped_sessions and reading.sessions:
        # Counted once per reading, with the first session (whose counts are the
        # reading's); a copy, so the cached session keeps its own.
        first = reading.sessions[0]
        reading.sessions[0] = replace(first, skipped=first.skipped + skipped_sessions)
    return reading


def _children(rows: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Parent id -> {spawning tool call id -> the sub-agent session's id}."""
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        parent, sid = row.get("parent_session_id"), str(row["id"])
        if isinstance(parent, str) and parent and not sid.startswith(_TITLE_SESSION):
            call = sid.rpartition(_SUB_AGENT_SEPARATOR)[2]  # the whole id in older versions
            found.setdefault(parent, {})[call] = safe_id(sid, prefix=PREFIX)
    return found


def _link_children(session: SourceSession, children: dict[str, str]) -> None:
    for item in session.items:
        if item.type == "tool/call" and item.call in children:
            item.spawns = children[item.call]


def _session(info: dict[str, Any], cwd: str | None) -> SourceSession:
    title, parent = info.get("title"), info.get("parent_session_id")
    return SourceSession(
        session_id=safe_id(str(info["id"]), prefix=PREFIX),
        cwd=cwd,
        time=_time(info.get("created_at")),
        title=title if isinstance(title, str) and title not in _PLACEHOLDER_TITLES else None,
        parent=safe_id(parent, prefix=PREFIX) if isinstance(parent, str) and parent else None,
    )


def _time(value: object) -> str | None:
    """Crush writes ``strftime('%s', 'now')``: seconds (its schema comments say
    milliseconds; a value that large is read as such)."""
    if isinstance(value, int | float) and value > 10**11:
        return from_seconds(value, per_second=1000)
    return from_seconds(value)


def _abandoned(followed: bool | None, updated: object, now: float) -> bool:
    """Whether an unfinished message will never be finished: another one follows it, or
    it was last written long ago (``updated_at``: seconds, or milliseconds in a few
    versions)."""
    if followed:
        return True
    if not isinstance(updated, int | float):
        return False
    seconds = updated / 1000 if updated > 10**11 else updated
    return now - seconds > ABANDONED_S


def _parts(raw: object, skipped: Counter[str]) -> list[dict[str, Any]] | None:
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else None
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, list):
        skipped["message:invalid-parts"] += 1
        return None
    return [part for part in value if isinstance(part, dict)]


def _message(row: dict[str, Any], skipped: Counter[str]) -> list[Item]:
    role, ref = str(row["role"]), str(row["id"])
    parts = _parts(row["parts"], skipped)
    if parts is None:
        return []
    if role not in ("user", "assistant", "tool"):
        skipped[f"message:{role}"] += 1
        return []
    time = _time(row.get("created_at"))
    finished = (
        role != "assistant" or row.get("finished_at") is not None or row.get("abandoned")
        or any(part.get("type") == "finish" for part in parts)
    )  # fmt: skip
    if row.get("summary"):
        texts = [field_of(p, "data") for p in parts if p.get("type") == "text"]
        return [Item(ref, "compaction", "system", {"summary": as_text(texts)},
                     "assistant:summary", time, complete=finished)]  # fmt: skip
    items: list[Item] = []
    for index, part in enumerate(parts):
        found = _part(f"{ref}-{index}", role, part, finished, time)
        if not found:
            skipped[f"part:{part.get('type')}"] += 1
        items.extend(found)
    return items


def _part(
    ref: str, role: str, part: dict[str, Any], finished: bool, time: str | None
) -> list[Item]:
    kind, data = part.get("type"), field_of(part, "data")
    if kind == "text" and isinstance(data.get("text"), str) and role != "tool":
        item = said(ref, role, data["text"], time, f"{role}:text")
        item.complete = finished
        return [item]
    if kind == "reasoning" and isinstance(data.get("thinking"), str) and data["thinking"]:
        thought = {"thinking": cut(data["thinking"])}
        return [Item(ref, "message/assistant", "assistant", thought, "reasoning", time,
                     complete=finished)]  # fmt: skip
    if kind == "tool_call":
        payload = {"tool": data.get("name"), "input": json_value(data.get("input"))}
        return [Item(ref, "tool/call", "assistant", payload, "tool_call", time,
                     complete=finished or data.get("finished") is True,
                     call=str(data.get("id")) or _NO_ID)]  # fmt: skip
    if kind == "tool_result":
        answer: dict[str, Any] = {"output": as_text(data.get("content"))}
        if data.get("is_error") is True:
            answer["is_error"] = True
        return [Item(ref, "tool/result", "tool", answer, "tool_result", time,
                     result_of=str(data.get("tool_call_id")) or _NO_ID)]  # fmt: skip
    if kind == "shell_command":
        ran = {"text": as_text(data.get("command"))}
        output = {"text": as_text(data.get("output")), "exit_code": data.get("exit_code")}
        return [Item(f"{ref}-command", "command", "user", ran, "shell_command", time),
                Item(f"{ref}-output", "command/output", "tool", output, "shell_command",
                     time)]  # fmt: skip
    if kind == "finish" and data.get("reason") in _SHOWN_FINISHES:
        said_text = ": ".join(str(data[k]) for k in ("message", "details") if data.get(k))
        payload = {"text": cut(f"[{data['reason']}] {said_text}".rstrip())}
        return [Item(ref, "message/context", "system", payload, "finish", time)]
    return []


class CrushImporter(ReadingImporter):
    name: ClassVar[str] = "crush"
    help: ClassVar[str] = (
        "Crush's crush.db in each project's .crush folder (projects.json in $CRUSH_GLOBAL_DATA)"
    )
    env_vars: ClassVar[tuple[str, ...]] = ("CRUSH_GLOBAL_DATA", "XDG_DATA_HOME")
    detect_order: ClassVar[int] = 57
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        "part:finish": "the end of a message: its reason and time (errors are kept)",
        "part:image_url": "images are not searchable text",
        "part:binary": "attachments (images, files): their bytes are not searchable text",
        "session:title-generation": "sessions that only generate a title",
    }

    def default_locations(self) -> list[Path]:
        """Every data folder ``projects.json`` lists, and the global one."""
        folders = [Path(data) for _, data in projects()]
        return list(dict.fromkeys([*folders, global_data()]))

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return path.name == DATABASE

    def sources(self, root: Path) -> Iterator[Path]:
        if root.name == DATABASE:
            yield root
            return
        yield from root.rglob(DATABASE)

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_database(path, cache)
