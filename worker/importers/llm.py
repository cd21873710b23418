"""Simon Willison's LLM (``llm`` on PyPI): ``logs.db`` (SQLite) in ``$LLM_USER_PATH``, by
default LLM's own folder (Linux ``${XDG_CONFIG_HOME:-~/.config}/io.datasette.llm``, macOS
``~/Library/Application Support/io.datasette.llm``, Windows ``%APPDATA%``).

Two generations of tables, both read (a database kept across an upgrade holds both):

- from 0.32 (read from the writer in ``llm`` 0.36, ``logs.py`` ``LogStore``, recorded from
  0.36): the content-addressed store. A ``threads`` row is a session (``llm-<id>``, title:
  its ``name``, the first prompt cut); its history is the chain of ``messages`` from its
  ``tip_message_hash`` up the ``parent_hash`` links, each message's ``parts`` in
  ``position`` order: ``text`` (a fragment's text stored by reference, ``text_ref``, is put
  back), ``reasoning`` as thinking, ``tool_call`` (its ``tool_call_id``) and
  ``tool_result`` (``exception`` flags an error). Messages carry no time: each gets its
  ``turns`` row's (a model call: what it was sent, up to ``parent_message_hash``, at its
  start; what it answered, up to ``tip_message_hash``, at the start plus ``duration_ms``).
  A thread ``forked_from`` another is its child: the history the two share is the
  parent's, and the child's start cites the parent's event the fork grows from;
- up to 0.31 (``llm`` 0.31's ``Response.log_to_db``): ``conversations`` and ``responses``,
  one row per model call: its ``tool_results`` (the results it was sent), the system
  prompt when it changes, the ``prompt``, the ``response`` and its ``tool_calls``. When a
  thread has the conversation's id (a conversation continued after the upgrade), the
  responses are read first and the thread's copy of them (the history LLM rebuilt from
  them for its first turn) is skipped.

LLM records no working folder: every session has ``cwd: null``. Skipped and counted:
attachments (images, files), reasoning kept only encrypted, fragments given with ``-f``
to an older version (stored apart from the prompt), other roles and part types (drift).
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import Problem, as_text, cut, iso_time, safe_id
from worker.importers.readonly_db import columns, grouped, read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    parents_first,
    said,
)
from worker.importers.whole_sources import ReadingImporter

NAME: Final = "llm"
DATABASE: Final = "logs.db"
PREFIX: Final = "llm-"
APP: Final = "io.datasette.llm"
STORE: Final = frozenset({"threads", "turns", "messages", "parts"})
LEGACY: Final = frozenset({"conversations", "responses"})


@dataclass
class _Message:
    hash: str
    parent: str | None
    role: str
    time: str | None = None


def read_database(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every conversation of a ``logs.db``, read in one transaction; with a ``cache``, a
    session whose rows did not change is not read again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    try:
        with read_only(path) as conn:
            have = tables(conn)
            if not (have >= STORE or have >= LEGACY):
                reading.problems.append(
                    Problem(
                        str(path),
                        0,
                        "not an LLM database: no threads/turns/messages/parts"
                        " or conversations/responses tables",
                    )
                )
                return reading
            legacy = _Legacy(conn) if have >= LEGACY else None
            store = _Store(conn) if have >= STORE else None
            sessions: dict[str, SourceSession] = {}
            for key in _session_keys(legacy, store):
                stamp = (
                    legacy.stamp(key) if legacy else (),
                    store.stamp(key) if store else (),
                )
                session = cache.get(key, stamp)
                if session is None:
                    session = cache.put(key, stamp, _read_session(key, legacy, store))
                sessions[key] = session
            if store is not None:
                for key, session in sessions.items():
                    store.link_fork(key, session, sessions)
            reading.sessions = parents_first(list(sessions.values()))
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    return reading


def _session_keys(legacy: _Legacy | None, store: _Store | None) -> list[str]:
    """Conversations and threads by their ids (one id space: a thread continuing a
    conversation has its id), in the order they started (ULIDs sort by time)."""
    keys = set(legacy.ids() if legacy else ()) | set(store.threads if store else ())
    return sorted(keys)


def _read_session(key: str, legacy: _Legacy | None, store: _Store | None) -> SourceSession:
    sid = safe_id(key, prefix=PREFIX)
    session = SourceSession(session_id=sid, cwd=None, time=None)
    copied = 0
    if legacy is not None and key in legacy.ids():
        legacy.read(key, session)
        copied = 1  # the thread's first turn re-sent this history: skip its copy
    if store is not None and key in store.threads:
        store.read(key, session, skip_history=bool(copied))
    times = [item.time for item in session.items if item.time]
    if times:
        session.time = min(times)
    elif store is not None and key in store.threads:  # a thread with no message yet
        session.time = iso_time(store.threads[key].get("datetime_utc"))
    return session


def _time_after(start: object, millis: object) -> str | None:
    """``start`` (an ISO time, LLM's) plus ``millis`` milliseconds, as an event time."""
    base = iso_time(start)
    if base is None or isinstance(millis, bool) or not isinstance(millis, int | float):
        return base
    moment = datetime.fromisoformat(base.replace("Z", "+00:00")) + timedelta(milliseconds=millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _json(raw: object) -> Any:
    if not isinstance(raw, str | bytes) or not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _call_key(sid: str, call_id: object, fallback: str) -> str:
    # Provider call ids are unique within a conversation, not across a database.
    return f"{sid}:{call_id}" if isinstance(call_id, str) and call_id else f"{sid}:bare:{fallback}"


def _call(
    ref: str,
    sid: str,
    name: object,
    arguments: object,
    call_id: object,
    time: str | None,
    source_type: str,
) -> Item:
    parsed = _json(arguments) if isinstance(arguments, str) else arguments
    payload = {"tool": name, "input": parsed if parsed is not None else arguments}
    return Item(
        ref, "tool/call", "assistant", payload, source_type, time, call=_call_key(sid, call_id, ref)
    )


def _result(
    ref: str,
    sid: str,
    name: object,
    output: object,
    call_id: object,
    exception: object,
    time: str | None,
    source_type: str,
) -> Item:
    payload: dict[str, Any] = {"tool": name, "output": cut(as_text(output))}
    if isinstance(exception, str) and exception:
        payload["is_error"] = True
        payload["exception"] = cut(exception)
    return Item(
        ref,
        "tool/result",
        "tool",
        payload,
        source_type,
        time,
        result_of=_call_key(sid, call_id, ref),
    )


def _pair_bare(items: list[Item]) -> None:
    """Calls and results without ids (a plugin's provider that names none) are paired in
    order, by tool name."""
    waiting: dict[object, list[Item]] = defaultdict(list)
    for item in items:
        if item.type == "tool/call" and item.call and ":bare:" in item.call:
            waiting[item.payload.get("tool")].append(item)
        elif item.type == "tool/result" and item.result_of and ":bare:" in item.result_of:
            queue = waiting.get(item.payload.get("tool"))
            if queue:
                item.result_of = queue.pop(0).call


class _Legacy:
    """``conversations`` and ``responses`` (LLM up to 0.31)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        have = tables(conn)
        self.has_tools = {"tool_calls", "tool_results"} <= have
        self.has_attachments = "prompt_attachments" in have
        self.has_fragments = "prompt_fragments" in have
        self.response_columns = columns(conn, "responses")
        self.names = {
            str(row["id"]): row["name"]
            for row in conn.execute("SELECT id, name FROM conversations")
        }
        # A response logged outside a conversation (no conversation_id) stands alone.
        self.stamps = grouped(
            conn,
            "SELECT COALESCE(conversation_id, id), COUNT(*), MAX(id),"
            " TOTAL(LENGTH(response)) FROM responses"
            " GROUP BY COALESCE(conversation_id, id)",
        )

    def ids(self) -> set[str]:
        return set(self.stamps)

    def stamp(self, key: str) -> tuple[object, ...]:
        return (self.names.get(key), *self.stamps.get(key, ()))

    def read(self, key: str, session: SourceSession) -> None:
        sid, skipped = session.session_id, session.skipped
        name = self.names.get(key)
        if isinstance(name, str) and name.strip():
            session.title = name
        reasoning = "reasoning" if "reasoning" in self.response_columns else "NULL"
        rows = self.conn.execute(
            f"SELECT id, prompt, system, response, datetime_utc, duration_ms,"
            f" {reasoning} AS reasoning FROM responses"
            " WHERE conversation_id = ? OR (conversation_id IS NULL AND id = ?)"
            " ORDER BY datetime_utc, id",
            (key, key),
        )
        system: str | None = None
        for row in rows:
            rid, start = str(row["id"]), iso_time(row["datetime_utc"])
            done = _time_after(row["datetime_utc"], row["duration_ms"])
            if self.has_tools:
                for result in self.conn.execute(
                    "SELECT * FROM tool_results WHERE response_id = ? ORDER BY id", (rid,)
                ):
                    res = dict(result)
                    session.items.append(
                        _result(
                            f"{rid}-result-{res['id']}",
                            sid,
                            res.get("name"),
                            res.get("output"),
                            res.get("tool_call_id"),
                            res.get("exception"),
                            start,
                            "tool_result",
                        )
                    )
            text = row["system"]
            if isinstance(text, str) and text.strip() and text != system:
                session.items.append(
                    Item(
                        f"{rid}-system",
                        "message/context",
                        "system",
                        {"text": cut(text), "role": "system"},
                        "system",
                        start,
                    )
                )
                system = text
            prompt = row["prompt"]
            if isinstance(prompt, str) and prompt.strip():
                session.items.append(said(f"{rid}-prompt", "user", prompt, start, "prompt"))
            self._count(rid, skipped)
            thought = row["reasoning"]
            if isinstance(thought, str) and thought.strip():
                session.items.append(
                    Item(
                        f"{rid}-reasoning",
                        "message/assistant",
                        "assistant",
                        {"thinking": cut(thought)},
                        "reasoning",
                        done,
                    )
                )
            answer = row["response"]
            if isinstance(answer, str) and answer.strip():
                session.items.append(said(f"{rid}-response", "assistant", answer, done, "response"))
            if self.has_tools:
                for call in self.conn.execute(
                    "SELECT * FROM tool_calls WHERE response_id = ? ORDER BY id", (rid,)
                ):
                    c = dict(call)
                    session.items.append(
                        _call(
                            f"{rid}-call-{c['id']}",
                            sid,
                            c.get("name"),
                            c.get("arguments"),
                            c.get("tool_call_id"),
                            done,
                            "tool_call",
                        )
                    )
        _pair_bare(session.items)

    def _count(self, rid: str, skipped: Counter[str]) -> None:
        """What a response was given beside its prompt: attachments, fragments."""
        if self.has_attachments:
            (n,) = self.conn.execute(
                "SELECT COUNT(*) FROM prompt_attachments WHERE response_id = ?", (rid,)
            ).fetchone()
            if n:
                skipped["attachment"] += n
        if self.has_fragments:
            (n,) = self.conn.execute(
                "SELECT COUNT(*) FROM prompt_fragments WHERE response_id = ?", (rid,)
            ).fetchone()
            if n:
                skipped["fragment"] += n


class _Store:
    """The content-addressed tables (LLM from 0.32): threads, turns, messages, parts."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.threads = {str(row["id"]): dict(row) for row in conn.execute("SELECT * FROM threads")}
        self.turn_stamps = grouped(
            conn,
            "SELECT thread_id, COUNT(*), MAX(id),"
            " MAX(tip_message_hash) FROM turns"
            " GROUP BY thread_id",
        )
        self.messages = {
            str(row["hash"]): _Message(str(row["hash"]), row["parent_hash"], str(row["role"]))
            for row in conn.execute("SELECT hash, parent_hash, role FROM messages")
        }
        self.has_fragments = "fragments" in tables(conn)

    def stamp(self, key: str) -> tuple[object, ...]:
        thread = self.threads.get(key)
        return (*(thread.values() if thread else ()), *self.turn_stamps.get(key, ()))

    def chain(self, tip: object) -> list[_Message]:
        """The thread's history, oldest first (a loop or a missing parent ends it)."""
        out: list[_Message] = []
        seen: set[str] = set()
        current = self.messages.get(str(tip)) if tip else None
        while current is not None and current.hash not in seen:
            seen.add(current.hash)
            out.append(current)
            current = self.messages.get(str(current.parent)) if current.parent else None
        out.reverse()
        return out

    def _timed(self, key: str, chain: list[_Message]) -> dict[str, str | None]:
        """Each message's time: its turn's start for what the turn was sent, the start
        plus the call's duration for what it answered (the earliest turn that has it)."""
        index = {m.hash: i for i, m in enumerate(chain)}
        times: dict[str, str | None] = {}
        turns = self.conn.execute(
            "SELECT parent_message_hash, tip_message_hash, datetime_utc, duration_ms"
            " FROM turns WHERE thread_id = ? ORDER BY datetime_utc, id",
            (key,),
        )
        for turn in turns:
            parent, tip = turn["parent_message_hash"], turn["tip_message_hash"]
            start = iso_time(turn["datetime_utc"])
            done = _time_after(turn["datetime_utc"], turn["duration_ms"])
            last = index.get(str(tip)) if tip else None
            sent = index.get(str(parent)) if parent else -1
            if last is None or sent is None:
                continue  # a turn of another branch of the tree
            for i in range(last, sent, -1):
                times.setdefault(chain[i].hash, done)
            for i in range(sent, -1, -1):
                if chain[i].hash in times:
                    break
                times[chain[i].hash] = start
        return times

    def first_turn_sent(self, key: str, chain: list[_Message]) -> int:
        """How many of the chain's messages the thread's first turn was sent as history
        (up to the last assistant message before its prompt)."""
        row = self.conn.execute(
            "SELECT parent_message_hash FROM turns WHERE thread_id = ?"
            " ORDER BY datetime_utc, id LIMIT 1",
            (key,),
        ).fetchone()
        hashes = [m.hash for m in chain]
        if row is None or row[0] not in hashes:
            return 0
        sent = hashes.index(row[0]) + 1
        answered = [i for i in range(sent) if chain[i].role == "assistant"]
        return answered[-1] + 1 if answered else 0

    def read(self, key: str, session: SourceSession, *, skip_history: bool) -> None:
        thread = self.threads[key]
        sid, skipped = session.session_id, session.skipped
        name = thread.get("name")
        # A conversation LLM 0.31 named keeps its name (LLM reads that row first).
        if session.title is None and isinstance(name, str) and name.strip():
            session.title = name
        forked = thread.get("forked_from")
        if isinstance(forked, str) and forked in self.threads:
            session.parent = safe_id(forked, prefix=PREFIX)
        chain = self.chain(thread.get("tip_message_hash"))
        times = self._timed(key, chain)
        fallback = iso_time(thread.get("datetime_utc"))
        copies = self.first_turn_sent(key, chain) if skip_history else 0
        if copies:
            skipped["message:legacy-copy"] += copies
        shared = self._shared(forked, chain) if session.parent else 0
        if shared:
            skipped["message:fork-copy"] += shared
        parts = self._parts([m.hash for m in chain[max(copies, shared) :]])
        time = fallback
        for message in chain[max(copies, shared) :]:
            time = times.get(message.hash) or time
            items = _message_items(sid, message, parts.get(message.hash, []), time, skipped)
            session.items.extend(items)
        _pair_bare(session.items)

    def _shared(self, forked: object, chain: list[_Message]) -> int:
        parent = self.threads.get(str(forked))
        if parent is None:
            return 0
        theirs = {m.hash for m in self.chain(parent.get("tip_message_hash"))}
        shared = 0
        for message in chain:
            if message.hash not in theirs:
                break
            shared += 1
        return shared

    def link_fork(self, key: str, session: SourceSession, by_key: dict[str, SourceSession]) -> None:
        """A fork's start cites the parent's event its history grows from: the last
        event of the last message the two share."""
        thread = self.threads.get(key, {})
        forked = thread.get("forked_from")
        parent = by_key.get(str(forked)) if forked else None
        if parent is None:
            return
        theirs = {m.hash for m in self.chain(self.threads[str(forked)].get("tip_message_hash"))}
        shared = [m.hash for m in self.chain(thread.get("tip_message_hash")) if m.hash in theirs]
        for message in reversed(shared):
            owned = [item for item in parent.items if item.ref.startswith(f"{message}-")]
            if owned:
                item = owned[-1]
                if item.spawns is None or item.spawns == session.session_id:
                    item.spawns = session.session_id
                elif session.session_id not in item.also_spawns:
                    item.also_spawns = (*item.also_spawns, session.session_id)
                return

    def _parts(self, hashes: list[str]) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT id, message_hash, position, type, tool_name, text, payload FROM parts"
                f" WHERE message_hash IN ({marks}) ORDER BY message_hash, position",
                chunk,
            ):
                part = dict(row)
                payload = _json(part.get("payload"))
                part["payload"] = payload if isinstance(payload, dict) else {}
                found[str(part["message_hash"])].append(part)
        if self.has_fragments:
            self._resolve_fragments(found)
        return found

    def _resolve_fragments(self, found: dict[str, list[dict[str, Any]]]) -> None:
        """A text that borrows fragments is stored as ``text_ref`` pieces: literals and
        fragment ids, put back together as LLM's ``_decode_text_refs`` does."""
        ids = {
            piece["fragment"]
            for parts in found.values()
            for part in parts
            for piece in part["payload"].get("text_ref") or []
            if isinstance(piece, dict) and "fragment" in piece
        }
        if not ids:
            return
        marks = ", ".join("?" * len(ids))
        contents = {
            row[0]: row[1]
            for row in self.conn.execute(
                f"SELECT id, content FROM fragments WHERE id IN ({marks})", list(ids)
            )
        }
        for parts in found.values():
            for part in parts:
                pieces = part["payload"].get("text_ref")
                if isinstance(pieces, list) and part.get("text") is None:
                    part["text"] = "".join(
                        str(p.get("literal", ""))
                        if "literal" in p
                        else str(contents.get(p.get("fragment"), ""))
                        for p in pieces
                        if isinstance(p, dict)
                    )


def _message_items(
    sid: str,
    message: _Message,
    parts: list[dict[str, Any]],
    time: str | None,
    skipped: Counter[str],
) -> list[Item]:
    """One message's parts as its events-to-be."""
    role, items = message.role, []
    if role not in ("user", "assistant", "tool", "system"):
        skipped[f"message:{role}"] += 1
        return []
    if not parts:
        skipped[f"message:{role}:empty"] += 1
    for part in parts:
        ref = f"{message.hash}-{part['position']}"
        kind, payload, text = part.get("type"), part["payload"], part.get("text")
        if kind == "text" and isinstance(text, str):
            if not text.strip():
                skipped[f"part:{role}:text:empty"] += 1
            elif role == "system":
                items.append(
                    Item(
                        ref,
                        "message/context",
                        "system",
                        {"text": cut(text), "role": "system"},
                        "system",
                        time,
                    )
                )
            elif role == "tool":
                skipped["part:tool:text"] += 1
            else:
                items.append(said(ref, role, text, time, f"{role}:text"))
        elif kind == "reasoning":
            if isinstance(text, str) and text.strip():
                items.append(
                    Item(
                        ref,
                        "message/assistant",
                        "assistant",
                        {"thinking": cut(text)},
                        "assistant:reasoning",
                        time,
                    )
                )
            else:
                skipped["part:reasoning:redacted"] += 1
        elif kind == "tool_call":
            name = payload.get("name", part.get("tool_name"))
            item = _call(
                ref,
                sid,
                name,
                payload.get("arguments"),
                payload.get("tool_call_id"),
                time,
                f"{role}:tool_call",
            )
            if payload.get("server_executed"):
                item.payload["server_executed"] = True
            items.append(item)
        elif kind == "tool_result":
            name = payload.get("name", part.get("tool_name"))
            items.append(
                _result(
                    ref,
                    sid,
                    name,
                    payload.get("output"),
                    payload.get("tool_call_id"),
                    payload.get("exception"),
                    time,
                    f"{role}:tool_result",
                )
            )
            if payload.get("attachments"):
                skipped["part:tool_result:attachment"] += len(payload["attachments"])
        else:
            skipped[f"part:{kind}"] += 1
    return items


def looks_like_database(path: Path) -> bool:
    """Detection: a ``logs.db`` with LLM's tables (the name alone is common)."""
    if path.name != DATABASE or not path.is_file():
        return False
    try:
        with read_only(path) as conn:
            have = tables(conn)
    except sqlite3.Error:
        return False
    return have >= STORE or (have >= LEGACY and "conversation_id" in _columns_of(path))


def _columns_of(path: Path) -> set[str]:
    with read_only(path) as conn:
        return columns(conn, "responses")


def user_dir() -> Path:
    """LLM's folder: ``$LLM_USER_PATH``, else click's application folder for it."""
    if os.environ.get("LLM_USER_PATH"):
        return Path(os.environ["LLM_USER_PATH"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home()) / APP
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / APP


class LlmImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Simon Willison's LLM: logs.db ($LLM_USER_PATH; default: its own folder)"
    env_vars: ClassVar[tuple[str, ...]] = ("LLM_USER_PATH", "XDG_CONFIG_HOME")
    detect_order: ClassVar[int] = 58

    def default_locations(self) -> list[Path]:
        return [user_dir()]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return looks_like_database(path)

    def sources(self, root: Path) -> Iterator[Path]:
        if root.name == DATABASE:
            yield root
            return
        found = [root / DATABASE] if (root / DATABASE).is_file() else list(root.rglob(DATABASE))
        yield from (path for path in found if looks_like_database(path))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_database(path, cache)
