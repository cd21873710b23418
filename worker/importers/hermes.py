"""Hermes agent (NousResearch): ``state.db`` (SQLite) in ``$HERMES_HOME`` (default
``~/.hermes``), and each profile's in ``profiles/<name>/state.db``.

Read from the writer in the ``hermes-agent`` package 0.19.0 (``hermes_state.py``, schema
version 22; ``run_agent.py``'s flush, ``agent/conversation_compression.py``,
``agent/context_compressor.py``, ``tools/delegate_tool.py``):

- a ``sessions`` row starts a session (``hermes-<id>``; cwd: ``cwd``, else its nearest
  ancestor's (a sub-agent has none); title: ``title``;
  ``source``, the platform it ran on (cli, telegram, subagent...), kept as ``platform``);
  ``parent_session_id`` makes it a child. Hermes links three kinds of child, told apart
  as Hermes itself does: a continuation after compression (the parent ended with
  ``end_reason`` ``compression`` and the child started at or after that end), a
  ``/branch`` (``model_config._branched_from``, or the parent ended ``branched``), else
  a sub-agent run by ``delegate_task``. The delegation's
  result does not name the child session, so a sub-agent's start cites the parent's
  latest ``delegate_task`` call written at or before the child started (a batch call
  spawns several children, all citing it), and the call's ``goal`` titles an untitled one;
- ``messages`` in id order (the rows Hermes archives on compaction, ``active = 0``, are
  read too: they are the history as it happened): ``user`` text (harness text typed),
  ``assistant`` ``reasoning``/``reasoning_content`` as thinking, its text, and each of its
  ``tool_calls`` (OpenAI's ``{id, function: {name, arguments}}``) as a ``tool/call``;
  ``tool`` rows as the ``tool/result`` of ``tool_call_id`` (a JSON object with an
  ``error`` string, Hermes's ``tool_error``, is flagged ``is_error``);
- a message that starts with Hermes's compaction handoff prefix (``[CONTEXT COMPACTION``
  or the older ``[CONTEXT SUMMARY]:``) is its summary: a ``compaction`` replacing what
  came before. The messages Hermes keeps around the summary (the first turn, the last
  ones) are written again with it: a copy that carries its original's time is counted
  (``message:compaction-copy``), one written with a new time is imported where it is.
- the description Hermes's CLI writes before a prompt an image came with (``[The user
  attached an image...]``, naming the image) is ``message/context``, the prompt after it
  ``message/user``;
- a call still without a result when the session's next prompt comes was cut off (a turn
  interrupted while its tool ran; Hermes writes no ``tool`` row): it gets a result marked
  ``interrupted``, ``is_error``, with no output, before that prompt;
- skipped and counted: ``system`` rows and other roles, non-text content parts (images),
  messages with nothing to say (an assistant turn with only tool calls has no text).
  Content stored as ``"\\x00json:"`` + JSON (a list of parts) is decoded.

The opt-in ``sessions/session_<id>.json`` snapshots repeat ``state.db`` (its docstring:
"state.db is the canonical message store") and are not read.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import Problem, as_text, cut, safe_id
from worker.importers.readonly_db import columns, grouped, read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    from_seconds,
    parents_first,
    said,
)
from worker.importers.whole_sources import ReadingImporter

NAME: Final = "hermes"
DATABASE: Final = "state.db"
PREFIX: Final = "hermes-"
# How Hermes marks structured (list/dict) content in the ``content`` column.
_JSON_CONTENT: Final = "\x00json:"
# The starts of Hermes's compaction summary messages (current and older releases).
_SUMMARY_STARTS: Final = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")
# A merged summary (the summary folded into a kept message) follows this line.
_MERGED: Final = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
_DELEGATE: Final = "delegate_task"
# Columns of ``messages`` read when the database has them (older schemas lack some).
_MESSAGE_COLUMNS: Final = ("id", "role", "content", "tool_call_id", "tool_calls", "tool_name",
                           "timestamp", "reasoning", "reasoning_content", "active")  # fmt: skip


def read_database(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every session of a ``state.db``, read in one transaction; with a ``cache``, a
    session whose rows did not change is not read again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    try:
        with read_only(path) as conn:
            if not {"sessions", "messages"} <= tables(conn):
                reading.problems.append(
                    Problem(str(path), 0, "not a Hermes database: no sessions/messages tables")
                )
                return reading
            have = columns(conn, "messages")
            picked = ", ".join(c if c in have else f"NULL AS {c}" for c in _MESSAGE_COLUMNS)
            stamps = grouped(conn, "SELECT session_id, COUNT(*), MAX(id),"
                                   " TOTAL(LENGTH(content)) FROM messages"
                                   " GROUP BY session_id")  # fmt: skip
            rows = [dict(row) for row in
                    conn.execute("SELECT * FROM sessions ORDER BY started_at, id")]  # fmt: skip
            by_id = {str(row["id"]): row for row in rows}
            read: dict[str, SourceSession] = {}
            for info in rows:
                key = str(info["id"])
                stamp = (*info.values(), *stamps.get(key, ()))
                session = cache.get(key, stamp)
                if session is None:
                    session = cache.put(key, stamp, _session(info, by_id))
                    query = f"SELECT {picked} FROM messages WHERE session_id = ? ORDER BY id"
                    written: set[tuple[object, ...]] = set()
                    for message in conn.execute(query, (key,)):
                        row = dict(message)
                        if _copy_of_earlier(row, written):
                            session.skipped["message:compaction-copy"] += 1
                            continue
                        session.items.extend(_row(row, session.skipped))
                    _pair_bare_calls(session.items)
                    _close_cut_off_calls(session.items)
                read[key] = session
                parent = read.get(str(info.get("parent_session_id")))
                if parent is not None and session.extra.get("lineage") == "subagent":
                    _cite_delegation(parent, session)
            reading.sessions = parents_first(list(read.values()))
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
    return reading


def _session(info: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> SourceSession:
    title = info.get("title")
    parent = info.get("parent_session_id")
    parent_row = by_id.get(str(parent)) if parent else None
    extra: dict[str, Any] = {}
    if isinstance(info.get("source"), str):
        extra["platform"] = info["source"]
    if isinstance(info.get("model"), str) and info["model"]:
        extra["model"] = info["model"]
    if parent:
        extra["lineage"] = _lineage(info, parent_row)
    return SourceSession(
        session_id=safe_id(str(info["id"]), prefix=PREFIX),
        cwd=_cwd(info, by_id),
        time=from_seconds(info.get("started_at")),
        title=title if isinstance(title, str) and title.strip() else None,
        parent=safe_id(str(parent), prefix=PREFIX) if parent else None,
        extra=extra,
    )


def _cwd(info: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str | None:
    """The session's ``cwd``, else its nearest ancestor's: Hermes writes none for a
    sub-agent, which runs in its parent's process and folder (left without one, it would
    sit in another workspace than the session that started it)."""
    seen: set[str] = set()
    row: dict[str, Any] | None = info
    while row is not None and str(row["id"]) not in seen:
        cwd = row.get("cwd")
        if isinstance(cwd, str) and cwd.strip():
            return cwd.strip()
        seen.add(str(row["id"]))
        parent = row.get("parent_session_id")
        row = by_id.get(str(parent)) if parent else None
    return None


def _lineage(info: dict[str, Any], parent: dict[str, Any] | None) -> str:
    """What a child session is, by Hermes's own rules (``hermes_state.py``): a compression
    continuation starts at or after its parent's end (a sub-agent the parent started
    before compressing also has it as parent, and older schemas mark neither)."""
    config = _json_object(info.get("model_config"))
    reason = parent.get("end_reason") if parent else None
    started, ended = info.get("started_at"), parent.get("ended_at") if parent else None
    before_end = (
        isinstance(started, int | float) and isinstance(ended, int | float) and started < ended
    )
    if reason == "compression" and not before_end and "_delegate_from" not in config:
        return "compression"
    if "_branched_from" in config or reason == "branched":
        return "branch"
    return "subagent"


def _cite_delegation(parent: SourceSession, child: SourceSession) -> None:
    """A sub-agent's spawning call: its parent's latest ``delegate_task`` call written at
    or before the child started (times as ISO UTC strings of one width compare as times;
    a batch call starts several children, all citing it)."""
    if child.time is None:
        return
    calls = [item for item in parent.items
             if item.type == "tool/call" and item.payload.get("tool") == _DELEGATE
             and item.time is not None and item.time <= child.time]  # fmt: skip
    if not calls:
        return
    call = calls[-1]
    goal = call.payload["input"].get("goal") if isinstance(call.payload["input"], dict) else None
    if child.title is None and isinstance(goal, str) and goal.strip():
        child.title = goal  # the task it was given, as Claude Code's Task description
    if call.spawns is None or call.spawns == child.session_id:
        call.spawns = child.session_id
    elif child.session_id not in call.also_spawns:
        call.also_spawns = (*call.also_spawns, child.session_id)


# What Hermes's CLI writes before a prompt an image came with (``cli.py``): a bracketed
# description (or the failure to make one) per image, each naming the image's path last,
# joined by blank lines; then the prompt.
_ATTACHED: Final = re.compile(r"\[The user attached an image.*image_url: [^\n]*\](?:\n\n|$)", re.S)


def _row(row: dict[str, Any], skipped: Counter[str]) -> list[Item]:
    """One ``messages`` row as its events-to-be."""
    ref, role, stamp = str(row["id"]), str(row["role"]), row.get("timestamp")
    time = from_seconds(stamp)
    text = _text(row.get("content"), skipped)
    if role in ("user", "assistant") and _is_summary(text):
        summary = text.split(_MERGED, 1)[-1].strip()
        return [Item(ref, "compaction", "system", {"summary": summary}, f"{role}:summary", time)]
    if role == "user":
        attached = _ATTACHED.match(text)
        if attached:  # Hermes's description of an attached image, before the prompt
            context = {"text": cut(attached.group(0).strip())}
            described = Item(f"{ref}-attached", "message/context", "system", context,
                             "user:attached", time)  # fmt: skip
            rest = text[attached.end() :]
            return [described] + ([said(ref, "user", rest, time, "user")] if rest.strip() else [])
        if text.strip():
            return [said(ref, "user", text, time, "user")]
        skipped["message:user:empty"] += 1
        return []
    if role == "assistant":
        return _assistant(ref, row, text, time, skipped)
    if role == "tool":
        output: dict[str, Any] = {"tool": row.get("tool_name"), "output": cut(text)}
        if _is_error(text):
            output["is_error"] = True
        call = row.get("tool_call_id")
        return [Item(ref, "tool/result", "tool", output, "tool", time,
                     result_of=str(call) if call else None)]  # fmt: skip
    skipped[f"message:{role}"] += 1
    return []


def _assistant(
    ref: str, row: dict[str, Any], text: str, time: str | None, skipped: Counter[str]
) -> list[Item]:
    items: list[Item] = []
    thought = row.get("reasoning") or row.get("reasoning_content")
    if isinstance(thought, str) and thought.strip():
        items.append(Item(f"{ref}-thinking", "message/assistant", "assistant",
                          {"thinking": cut(thought)}, "assistant:reasoning", time))  # fmt: skip
    if text.strip():
        items.append(said(f"{ref}-text", "assistant", text, time, "assistant"))
    calls = _json_value(row.get("tool_calls"))
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        item = _call(f"{ref}-call-{index}", call, time)
        if item is None:
            skipped["tool_call:unreadable"] += 1
        else:
            items.append(item)
    if not items:
        skipped["message:assistant:empty"] += 1
    return items


def _call(ref: str, call: object, time: str | None) -> Item | None:
    """An OpenAI-shaped tool call (``{id, function: {name, arguments}}``; Hermes also
    keeps ``call_id``), or the bare ``{name, arguments}`` some flushes write."""
    if not isinstance(call, dict):
        return None
    inner = call.get("function")
    function: dict[str, Any] = inner if isinstance(inner, dict) else call
    name = function.get("name")
    if not isinstance(name, str):
        return None
    arguments = function.get("arguments")
    parsed = _json_value(arguments) if isinstance(arguments, str) else arguments
    call_id = call.get("id") or call.get("call_id")
    return Item(ref, "tool/call", "assistant",
                {"tool": name, "input": parsed if parsed is not None else arguments},
                "assistant:tool_call", time, call=str(call_id) if call_id else None)  # fmt: skip


def _copy_of_earlier(row: dict[str, Any], written: set[tuple[object, ...]]) -> bool:
    """Whether a row repeats an earlier one exactly, its time included: on compaction
    Hermes writes the messages it keeps again, with the time they carry (a message that
    carries none gets the time of writing, and its copy is imported again)."""
    key = tuple(row.get(c) for c in ("role", "content", "tool_call_id", "tool_calls",
                                     "timestamp"))  # fmt: skip
    if key in written:
        return True
    written.add(key)
    return False


def _pair_bare_calls(items: list[Item]) -> None:
    """Calls written without an id (the flush of a provider's message object keeps only
    ``{name, arguments}``) are answered in order by the results naming no known call."""
    known = {item.call for item in items if item.call}
    waiting: list[Item] = []
    for index, item in enumerate(items):
        if item.type == "tool/call" and item.call is None:
            item.call = f"bare-{item.ref}"
            waiting.append(item)
        elif item.type == "tool/result" and item.result_of not in known and waiting:
            items[index].result_of = waiting.pop(0).call


def _close_cut_off_calls(items: list[Item]) -> None:
    """Calls still without a result when the session's next prompt comes were cut off (a
    turn interrupted while its tool ran: Hermes writes no ``tool`` row): each gets a result
    marked ``interrupted``, before that prompt."""
    answered = {item.result_of for item in items if item.type == "tool/result"}
    open_calls: list[Item] = []
    index = 0
    while index < len(items):
        item = items[index]
        if item.type == "tool/call" and item.call and item.call not in answered:
            open_calls.append(item)
        elif item.type == "message/user" and open_calls:
            cut_off = [_cut_off(call, item.time) for call in open_calls]
            items[index:index] = cut_off
            index += len(cut_off)
            open_calls = []
        index += 1


def _cut_off(call: Item, time: str | None) -> Item:
    """The result of a call cut off: an error, marked ``interrupted``, with no output."""
    payload = {"tool": call.payload.get("tool"), "output": "", "is_error": True}
    return Item(f"{call.ref}-interrupted", "tool/result", "tool", payload | {"interrupted": True},
                "tool:missing", time, result_of=call.call)  # fmt: skip


def _text(content: object, skipped: Counter[str]) -> str:
    """A ``content`` cell as text: a string as it is; Hermes's JSON-marked parts joined
    (the parts that are not text counted)."""
    if not isinstance(content, str):
        return ""
    if not content.startswith(_JSON_CONTENT):
        return content
    value = _json_value(content[len(_JSON_CONTENT) :])
    if isinstance(value, list):
        for part in value:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text":
                skipped[f"content:{kind}"] += 1
    return as_text(value)


def _is_summary(text: str) -> bool:
    body = text.split(_MERGED, 1)[-1].lstrip()
    return body.startswith(_SUMMARY_STARTS)


def _is_error(text: str) -> bool:
    value = _json_value(text) if text.startswith("{") else None
    return isinstance(value, dict) and isinstance(value.get("error"), str) and bool(value["error"])


def _json_value(raw: object) -> object:
    if not isinstance(raw, str | bytes) or not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _json_object(raw: object) -> dict[str, Any]:
    value = _json_value(raw)
    return value if isinstance(value, dict) else {}


def looks_like_database(path: Path) -> bool:
    """Detection: a ``state.db`` with Hermes's ``sessions`` and ``messages`` tables (the
    name alone is common)."""
    if path.name != DATABASE or not path.is_file():
        return False
    try:
        with read_only(path) as conn:
            return {"sessions", "messages"} <= tables(conn) and "tool_calls" in columns(
                conn, "messages"
            )
    except sqlite3.Error:
        return False


def hermes_home() -> Path:
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


class HermesImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Hermes agent's state.db ($HERMES_HOME, default ~/.hermes; profiles)"
    env_vars: ClassVar[tuple[str, ...]] = ("HERMES_HOME",)
    detect_order: ClassVar[int] = 57

    def default_locations(self) -> list[Path]:
        return [hermes_home()]  # its profiles (``hermes -p NAME``) are in ``profiles/``

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return looks_like_database(path)

    def sources(self, root: Path) -> Iterator[Path]:
        if root.name == DATABASE:
            yield root
            return
        # The home's own database and its profiles' (``profiles/<name>/state.db``); a
        # folder that is not a Hermes home is searched whole.
        found = [root / DATABASE, *root.glob(f"profiles/*/{DATABASE}")]
        if not any(path.is_file() for path in found):
            found = list(root.rglob(DATABASE))
        yield from (path for path in found if looks_like_database(path))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_database(path, cache)
