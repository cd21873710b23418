"""Amazon Q Developer CLI and Kiro CLI: conversations kept in ``data.sqlite3``.

Studied: aws/amazon-q-developer-cli (``crates/chat-cli``, 1.19.7): ``database/mod.rs`` and
its migrations (table ``conversations``: ``key`` = the directory ``q chat`` ran in,
``value`` = the ``ConversationState`` JSON, rewritten after each answer), ``cli/chat/
conversation.rs`` and ``message.rs`` (serde's shapes: ``history`` of ``{user, assistant,
request_metadata}``, before 1.13 of ``[user, assistant]`` pairs; ``UserMessageContent``
``Prompt``/``ToolUseResults``/``CancelledToolUses``; ``AssistantMessage``
``Response``/``ToolUse``; ``latest_summary`` set by ``/compact``). Kiro CLI, which descends
from it, keeps the same state in ``conversations`` (its 1.x) and then ``conversations_v2``
(``key``, ``conversation_id``, ``value``, ``created_at``, ``updated_at`` in milliseconds:
several conversations per directory), read from public readers of its database (its
source is not public); its later session files under ``~/.kiro/sessions`` are another
format, not read here.

- each conversation is a session (``qcli-<conversation_id>``, ``kiro-<conversation_id>``),
  its cwd the row's ``key``; no titles in the source (the first prompt stands in);
- each ``history`` entry: the user's ``Prompt`` as ``message/user`` (harness text typed)
  at its ``timestamp``, its ``additional_context`` (context files, hook output) as
  ``message/context``, ``ToolUseResults`` and ``CancelledToolUses`` as ``tool/result``
  citing their calls (``Error`` flagged); the assistant's ``content`` as
  ``message/assistant`` and its ``tool_uses`` as ``tool/call``;
- ``latest_summary`` as a ``compaction`` replacing what came before.

The history is a window, not a log: the CLI drops its oldest entries past its limit, on
``/compact`` and on ``/clear``. A reader keeps what it published (``SessionCache``) and
adds the entries it has not seen (by their request's ``message_id``), a new summary as a
compaction before them; a fresh reading (``import``, a restarted ``watch``) starts from the
window the database holds then, so a turn that left the window before it was read is not
in the index.

Skipped and counted: images, unknown content variants. ``next_message`` (a prompt not yet
answered) waits for its answer; a tangent's stored main history is a copy of entries read
as they were written.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import Problem, as_text, cut, iso_time, safe_id
from worker.importers.readonly_db import read_only, tables
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    Stamp,
    field_of,
    from_millis,
    said,
)
from worker.importers.whole_sources import ReadingImporter

DATABASE: Final = "data.sqlite3"


@dataclass(frozen=True)
class Flavour:
    name: str  # the format
    folder: str  # under the OS's local data folder
    prefix: str  # of session ids


Q_CLI: Final = Flavour("amazon-q", "amazon-q", "qcli-")
KIRO_CLI: Final = Flavour("kiro-cli", "kiro-cli", "kiro-")


def local_data_dir() -> Path:
    """Rust's ``dirs::data_local_dir``, where both CLIs keep their database."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def read_database(path: Path, flavour: Flavour, cache: SessionCache | None = None) -> SourceReading:
    """Every conversation of a ``data.sqlite3``, read in one transaction; with a ``cache``
    (one per source, kept across readings), a conversation is added to, never rebuilt."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    try:
        with read_only(path) as conn:
            found = tables(conn)
            rows = list(_rows(conn))
    except sqlite3.Error as exc:
        reading.problems.append(Problem(str(path), 0, f"cannot read the database: {exc}"))
        return reading
    if not found & {"conversations", "conversations_v2"}:
        # Builds before the conversation table (seen in real homes) keep only the shell's
        # command history and settings here: said, not read as an empty database.
        why = ("no conversation table (conversations, conversations_v2): written by a build"
               f" that kept no chat here; its tables: {', '.join(sorted(found))}")  # fmt: skip
        reading.problems.append(Problem(str(path), 0, why))
        return reading
    seen: set[str] = set()
    for key, value, created in rows:
        digest = hashlib.sha1(value.encode("utf-8", "surrogatepass")).hexdigest()
        try:
            state = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            reading.problems.append(Problem(str(path), 0, f"conversation of {key!r}: {exc}"))
            continue
        conversation = state.get("conversation_id") if isinstance(state, dict) else None
        if not isinstance(conversation, str) or not conversation or conversation in seen:
            continue  # a conversation in both tables is read once, from Kiro's
        seen.add(conversation)
        # The stamp: the row's length and digest, then what the session holds (the entries
        # read, the summary), which the next reading adds to.
        earlier = cache.entries.get(conversation)
        if earlier is not None and earlier[0][:2] == (len(value), digest):
            reading.sessions.append(earlier[1])
            continue
        ledger = _Ledger.of(earlier[0]) if earlier else _Ledger((), None)
        session, ledger = _merged(flavour, key, created, state, earlier[1] if earlier else None,
                                  ledger)  # fmt: skip
        reading.sessions.append(
            cache.put(conversation, (len(value), digest, ledger.entries, ledger.summary), session)
        )
    return reading


@dataclass(frozen=True)
class _Ledger:
    """What a session read so far holds: its entries' keys, in order, and its summary."""

    entries: tuple[str, ...]
    summary: str | None

    @classmethod
    def of(cls, stamp: Stamp) -> _Ledger:
        entries, summary = stamp[2:4]
        return cls(entries if isinstance(entries, tuple) else (),
                   summary if isinstance(summary, str) else None)  # fmt: skip


def _rows(conn: sqlite3.Connection) -> Iterator[tuple[str, str, object]]:
    """(cwd, state JSON, created) of each conversation: Kiro's table, then the older one."""
    found = tables(conn)
    if "conversations_v2" in found:
        query = ("SELECT key, value, created_at FROM conversations_v2"
                 " ORDER BY created_at, key, conversation_id")  # fmt: skip
        for row in conn.execute(query):
            yield str(row[0]), _text(row[1]), row[2]
    if "conversations" in found:
        for row in conn.execute("SELECT key, value FROM conversations ORDER BY rowid"):
            yield str(row[0]), _text(row[1]), None


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _merged(
    flavour: Flavour, cwd: str, created: object, state: dict[str, Any],
    earlier: SourceSession | None, ledger: _Ledger,
) -> tuple[SourceSession, _Ledger]:  # fmt: skip
    """The session as read before (its items, the entries and summary they hold) with what
    this reading adds: a new summary as a compaction, then the entries not seen yet."""
    session = SourceSession(
        session_id=safe_id(state["conversation_id"], prefix=flavour.prefix),
        cwd=cwd or None,
        time=from_millis(created),
        items=list(earlier.items) if earlier else [],
        skipped=Counter(earlier.skipped) if earlier else Counter(),
    )
    entries = state.get("history")
    entries = entries if isinstance(entries, list) else []
    known = list(ledger.entries)
    latest = state.get("latest_summary")
    summary = latest if isinstance(latest, list) and len(latest) == 2 else [None, None]
    text = summary[0]
    if isinstance(text, str) and text != ledger.summary:
        made = summary[1] if isinstance(summary[1], dict) else {}  # its request's metadata
        ends = from_millis(made.get("stream_end_timestamp_ms"))
        session.items.append(Item(f"summary-{len(known)}", "compaction", "system",
                                  {"summary": cut(text)}, "latest_summary", ends))  # fmt: skip
    for entry in entries:
        user, assistant, metadata = _parts(entry)
        key = _entry_key(user, assistant, metadata)
        if key in known:
            continue
        known.append(key)
        session.items.extend(_user(key, user, session.skipped))
        session.items.extend(_assistant(key, assistant, metadata, session.skipped))
    if session.time is None:  # the earliest: a summary comes first but is newer
        session.time = min((i.time for i in session.items if i.time), default=None)
    return session, _Ledger(tuple(known), text if isinstance(text, str) else ledger.summary)


def _parts(entry: object) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """An entry's user message, assistant message and request metadata, in either shape."""
    if isinstance(entry, list) and len(entry) == 2:  # before 1.13: a (user, assistant) pair
        parts = {"user": entry[0], "assistant": entry[1]}
    else:
        parts = entry if isinstance(entry, dict) else {}
    return (field_of(parts, "user"), field_of(parts, "assistant"),
            field_of(parts, "request_metadata"))  # fmt: skip


def _entry_key(user: dict[str, Any], assistant: dict[str, Any], metadata: dict[str, Any]) -> str:
    """What names an entry across readings: its request's id, else the answer's, else a
    digest of the user's message."""
    for value in (metadata.get("message_id"), _variant(assistant)[1].get("message_id")):
        if isinstance(value, str) and value:
            return safe_id(value)
    return hashlib.sha1(orjson.dumps(user, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20]


def _variant(tagged: object) -> tuple[str | None, dict[str, Any]]:
    """serde's externally tagged enum: ``{"Variant": {fields}}``."""
    if isinstance(tagged, dict) and len(tagged) == 1:
        name, fields = next(iter(tagged.items()))
        return str(name), fields if isinstance(fields, dict) else {}
    return None, {}


def _user(ref: str, user: dict[str, Any], skipped: Counter[str]) -> list[Item]:
    time = iso_time(user.get("timestamp"))
    items: list[Item] = []
    context = user.get("additional_context")
    if isinstance(context, str) and context.strip():
        items.append(Item(f"{ref}-context", "message/context", "system", {"text": cut(context)},
                          "additional_context", time))  # fmt: skip
    kind, fields = _variant(user.get("content"))
    prompt = fields.get("prompt")
    if kind in ("Prompt", "CancelledToolUses") and isinstance(prompt, str) and prompt:
        items.append(said(f"{ref}-prompt", "user", prompt, time, kind))
    results = fields.get("tool_use_results")
    for index, result in enumerate(results if isinstance(results, list) else []):
        if isinstance(result, dict):
            items.append(_result(f"{ref}-result-{index}", result, time, str(kind)))
    if kind not in ("Prompt", "ToolUseResults", "CancelledToolUses"):
        skipped[f"user:{kind}"] += 1
    images = user.get("images")
    if isinstance(images, list) and images:
        skipped["user:image"] += len(images)
    return items


def _result(ref: str, result: dict[str, Any], time: str | None, kind: str) -> Item:
    blocks = result.get("content")
    texts = []
    for block in blocks if isinstance(blocks, list) else []:
        # ``{"Text": "..."}`` or ``{"Json": {...}}``
        for value in block.values() if isinstance(block, dict) else []:
            texts.append(value if isinstance(value, str) else as_text(value))
    payload: dict[str, Any] = {"output": cut("\n".join(texts))}
    if result.get("status") == "Error":
        payload["is_error"] = True
    return Item(ref, "tool/result", "tool", payload, kind, time,
                result_of=str(result.get("tool_use_id")))  # fmt: skip


def _assistant(
    ref: str, assistant: dict[str, Any], metadata: dict[str, Any], skipped: Counter[str]
) -> list[Item]:
    kind, fields = _variant(assistant)
    if kind not in ("Response", "ToolUse"):
        skipped[f"assistant:{kind}"] += 1
        return []
    time = from_millis(metadata.get("stream_end_timestamp_ms"))
    items: list[Item] = []
    content = fields.get("content")
    if isinstance(content, str) and content.strip():
        items.append(said(f"{ref}-answer", "assistant", content, time, kind))
    uses = fields.get("tool_uses")
    for index, use in enumerate(uses if isinstance(uses, list) else []):
        if not isinstance(use, dict):
            continue
        payload = {"tool": use.get("name"), "input": use.get("args")}
        items.append(Item(f"{ref}-call-{index}", "tool/call", "assistant", payload, "ToolUse",
                          time, call=str(use.get("id"))))  # fmt: skip
    return items


def looks_like(path: Path, flavour: Flavour) -> bool:
    """A ``data.sqlite3`` of this CLI: by its folder, else by its tables (a copy)."""
    if path.name != DATABASE or not path.is_file():
        return False
    if path.parent.name in (Q_CLI.folder, KIRO_CLI.folder):
        return path.parent.name == flavour.folder
    try:
        with read_only(path) as conn:
            found = tables(conn)
    except sqlite3.Error:
        return False
    if "conversations_v2" in found:
        return flavour is KIRO_CLI
    return "conversations" in found and flavour is Q_CLI


class AmazonQImporter(ReadingImporter):
    name: ClassVar[str] = "amazon-q"
    help: ClassVar[str] = "Amazon Q Developer CLI conversations (amazon-q/data.sqlite3)"
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_DATA_HOME", "LOCALAPPDATA")
    detect_order: ClassVar[int] = 61
    flavour: ClassVar[Flavour] = Q_CLI

    def default_locations(self) -> list[Path]:
        return [local_data_dir() / self.flavour.folder]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return looks_like(path, self.flavour)

    def sources(self, root: Path) -> Iterator[Path]:
        return (path for path in root.rglob(DATABASE) if looks_like(path, self.flavour))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_database(path, self.flavour, cache)


class KiroCliImporter(AmazonQImporter):
    name: ClassVar[str] = "kiro-cli"
    help: ClassVar[str] = "Kiro CLI conversations (kiro-cli/data.sqlite3, Amazon Q's state)"
    detect_order: ClassVar[int] = 62
    flavour: ClassVar[Flavour] = KIRO_CLI
