"""Continue (the ``cn`` CLI, ``@continuedev/cli``): ``~/.continue/sessions/<id>.json``.

Studied: ``@continuedev/cli`` 1.5.47 (its ``src/session.ts``, ``compaction.ts``,
``services/ChatHistoryService.ts``, ``stream/handleToolCalls.ts``,
``subagent/executor.ts`` and the bundled core ``util/history`` it saves with).

A session is one JSON document, written whole after every change (``historyManager.save``:
``sessionId``, ``title``, ``workspaceDirectory``, ``history``, maybe ``mode``,
``chatModelTitle``, ``usage``); ``sessions.json`` beside it lists each session with its
``dateCreated`` (milliseconds). ``$CONTINUE_GLOBAL_DIR`` moves ``~/.continue``.

- the session: ``continue-<sessionId>``; cwd = ``workspaceDirectory`` (a ``file://``
  URI read as its path); title = ``title`` unless Continue's placeholder ("Untitled
  Session", "New Session"); start = ``dateCreated``, else the file's time.
- ``history`` items (``message`` and, on assistant items, ``toolCallStates``): a user
  message's text as ``message/user`` (harness text typed) and its ``contextItems`` as
  ``message/context``; an assistant's text as ``message/assistant``, its ``reasoning``
  (and ``thinking`` messages) as thinking; each tool call state as a ``tool/call``
  (``parsedArgs``) and, once its status is ``done``, ``errored`` or ``canceled``, a
  ``tool/result`` citing it (``output`` items' content; errors flagged). A ``tool``
  message answers a call no state answered.
- compaction rewrites the file: the history becomes one assistant item with a
  ``conversationSummary`` (the system message is never saved), then what follows. That
  item is a ``compaction`` replacing what came before; what was read before the rewrite
  keeps its numbers (``ContinueConverter``).
- no times in the history: events take the file's modification time when read.
- the ``Subagent`` tool runs its child conversation in memory only: nothing links
  sessions, and its output is the call's result.
- skipped and counted: ``system`` messages (never saved, counted if present), image
  parts, unknown roles and part types.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import (
    Converter,
    Outgoing,
    Problem,
    as_text,
    cut,
    file_time,
    file_uri_path,
    safe_id,
)
from worker.importers.plugin import ConvertOptions
from worker.importers.source_reading import (
    Item,
    ReadingConverter,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    from_millis,
    read_document,
    said,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed

NAME: Final = "continue"
PREFIX: Final = "continue-"
INDEX: Final = "sessions.json"
_PLACEHOLDER_TITLES: Final = frozenset({"Untitled Session", "New Session"})
_ANSWERED: Final = frozenset({"done", "errored", "canceled"})


def home() -> Path:
    """``$CONTINUE_GLOBAL_DIR`` (relative to the working directory, as the CLI reads it),
    else ``~/.continue``."""
    moved = os.environ.get("CONTINUE_GLOBAL_DIR")
    return Path(moved).absolute() if moved else Path.home() / ".continue"


def read_session(path: Path) -> SourceReading:
    """One session file as it is now; a half-written file is reported and read again on
    the next change."""
    reading = SourceReading()
    read = read_document(path, reading)
    if read is None:
        return reading
    document = read.value
    if not isinstance(document, dict) or not isinstance(document.get("history"), list):
        reading.problems.append(Problem(str(path), 0, "not a Continue session: no history"))
        return reading
    raw_id = document.get("sessionId") or path.stem
    title = document.get("title")
    when = file_time(path)
    extra = {k: document[k] for k in ("mode", "chatModelTitle") if isinstance(document.get(k), str)}
    session = SourceSession(
        session_id=safe_id(str(raw_id), prefix=PREFIX),
        cwd=_path_of(document.get("workspaceDirectory")),
        time=_created(path.parent / INDEX, str(raw_id)) or when,
        title=title if isinstance(title, str) and title not in _PLACEHOLDER_TITLES else None,
        extra=extra,
    )
    answered: set[str] = set()
    history = document["history"]
    for index, entry in enumerate(history):
        if isinstance(entry, dict):
            last = index == len(history) - 1
            session.items.extend(_entry(f"h{index}", entry, when, answered, last, session.skipped))
        else:
            session.skipped["history:not-an-object"] += 1
    reading.sessions.append(session)
    return reading


def _path_of(raw: object) -> str | None:
    """A workspace directory: a path, or (the IDE extensions) a ``file://`` URI."""
    if not isinstance(raw, str) or not raw:
        return None
    if raw.startswith("file://"):
        return file_uri_path(raw)
    return raw


def _created(index: Path, session_id: str) -> str | None:
    """The session's ``dateCreated`` in ``sessions.json`` (milliseconds, as a string)."""
    try:
        listed = orjson.loads(index.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict) and entry.get("sessionId") == session_id:
            created = entry.get("dateCreated")
            try:
                return from_millis(float(created)) if created is not None else None
            except (TypeError, ValueError):
                return None
    return None


def _entry(
    ref: str, entry: dict[str, Any], when: str | None, answered: set[str], last: bool,
    skipped: Counter[str],
) -> list[Item]:  # fmt: skip
    message = field_of(entry, "message")
    role = message.get("role")
    if isinstance(entry.get("conversationSummary"), str):
        payload = {"summary": cut(entry["conversationSummary"])}
        return [Item(ref, "compaction", "system", payload, "conversationSummary", when)]
    if role == "user":
        items = _texts(ref, "user", message.get("content"), when, skipped)
        for n, context in enumerate(entry.get("contextItems") or []):
            if isinstance(context, dict) and context.get("content"):
                name = context.get("name") or context.get("description") or "context"
                payload = {"text": cut(f"{name}\n{as_text(context['content'])}")}
                items.append(Item(f"{ref}-ctx{n}", "message/context", "system", payload,
                                  "contextItem", when))  # fmt: skip
        return items
    if role == "assistant":
        items = _reasoning(ref, field_of(entry, "reasoning").get("text"), when)
        items += _texts(ref, "assistant", message.get("content"), when, skipped)
        for n, state in enumerate(entry.get("toolCallStates") or []):
            if isinstance(state, dict):
                items.extend(_tool(f"{ref}-tc{n}", state, when, answered, last))
        return items
    if role == "thinking":
        return _reasoning(ref, as_text(message.get("content")), when)
    if role == "tool":
        call = str(message.get("toolCallId") or message.get("tool_call_id") or "")
        if call in answered:
            skipped["message:tool:answered-by-state"] += 1
            return []
        answered.add(call)
        output = {"output": as_text(message.get("content"))}
        return [Item(ref, "tool/result", "tool", output, "tool", when, result_of=call)]
    skipped[f"message:{role}"] += 1
    return []


def _texts(
    ref: str, role: str, content: object, when: str | None, skipped: Counter[str]
) -> list[Item]:
    """A message's content: a string, or parts (``text``, ``imageUrl``)."""
    if isinstance(content, str):
        return [said(ref, role, content, when, f"{role}:text")] if content.strip() else []
    items: list[Item] = []
    for n, part in enumerate(content if isinstance(content, list) else []):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str) and part["text"].strip():
            items.append(said(f"{ref}-p{n}", role, part["text"], when, f"{role}:text"))
        else:
            skipped[f"part:{kind}"] += 1
    return items


def _reasoning(ref: str, text: object, when: str | None) -> list[Item]:
    if not isinstance(text, str) or not text.strip():
        return []
    thought = {"thinking": cut(text)}
    return [Item(f"{ref}-think", "message/assistant", "assistant", thought, "reasoning", when)]


def _tool(
    ref: str, state: dict[str, Any], when: str | None, answered: set[str], last: bool
) -> list[Item]:
    call_id = str(state.get("toolCallId") or field_of(state, "toolCall").get("id") or ref)
    function = field_of(field_of(state, "toolCall"), "function")
    arguments = state.get("parsedArgs")
    if arguments is None:
        arguments = function.get("arguments")
    call = Item(f"{ref}-call", "tool/call", "assistant",
                {"tool": function.get("name"), "input": arguments}, "toolCallState", when,
                call=call_id)  # fmt: skip
    status = state.get("status")
    outputs = [o.get("content") for o in state.get("output") or [] if isinstance(o, dict)]
    result: dict[str, Any] = {"output": as_text(outputs), "status": status}
    if status == "errored":
        result["is_error"] = True
    answered.add(call_id)
    # Generated or running, the result waits for a later reading; unless the history went
    # on past it (the CLI quit while the tool ran): it will not change any more.
    done = Item(f"{ref}-result", "tool/result", "tool", result, "toolCallState", when,
                complete=status in _ANSWERED or not last, result_of=call_id)  # fmt: skip
    return [call, done]


# Stands for an item published before the file was rewritten (never published again).
_PUBLISHED: Final = Item("published", "message/context", "system", {}, "rewritten")


class ContinueConverter(ReadingConverter):
    """Readings of one session file. Compaction rewrites the file: the history starts
    again at the summary. The items read before keep their numbers: a new summary at the
    history's head puts the file's items after everything published so far. (Nanocoder's
    files are rewritten the same way: ``name`` is the format's.)"""

    def __init__(
        self, read: Callable[[], SourceReading], *, idle_s: float | None = None, name: str = NAME
    ) -> None:
        super().__init__(name, read, idle_s=idle_s)
        # Session -> [items published before the file's first item, that item's digest].
        self.rewrites: dict[str, list[Any]] = {}

    def _session(self, source: SourceSession) -> list[Outgoing]:
        head = source.items[0] if source.items else None
        if head is not None and head.type == "compaction":
            digest = hashlib.sha256(orjson.dumps(head.payload)).hexdigest()[:16]
            known = self.rewrites.get(source.session_id)
            if known is None or known[1] != digest:
                progress = self.progress.get(source.session_id)
                self.rewrites[source.session_id] = [progress.done if progress else 0, digest]
        before = self.rewrites.get(source.session_id, [0, None])[0]
        if before:
            # Never published again: ``done`` is at least ``before``.
            source = replace(source, items=[*([_PUBLISHED] * before), *source.items])
        return super()._session(source)

    def token(self) -> dict[str, Any]:
        return {**super().token(), "rewrites": self.rewrites}

    def restore(self, token: dict[str, Any]) -> None:
        super().restore(token)
        self.rewrites = {k: list(v) for k, v in token.get("rewrites", {}).items()}


class ContinueImporter(ReadingImporter):
    name: ClassVar[str] = "continue"
    help: ClassVar[str] = "Continue CLI (cn) sessions, one JSON file each (~/.continue/sessions)"
    env_vars: ClassVar[tuple[str, ...]] = ("CONTINUE_GLOBAL_DIR",)
    detect_order: ClassVar[int] = 58
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        "part:imageUrl": "images are not searchable text",
        "message:system": "the system prompt (the CLI never saves it)",
        "message:tool:answered-by-state": "a tool message whose call's state gave the result",
    }

    def default_locations(self) -> list[Path]:
        return [home() / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``sessions/<id>.json`` whose first keys are a session's (the CLI writes it
        indented: one key a line)."""
        text = b"".join(head)
        return (
            path.suffix == ".json" and path.name != INDEX and path.parent.name == "sessions"
            and b'"sessionId"' in text and b'"history"' in text
        )  # fmt: skip

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(
            root,
            "*.json",
            lambda path: (
                path.name != INDEX and path.parent.name == "sessions" and sniffed(self, path)
            ),
        )

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_session(path)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return ContinueConverter(lambda: self.read(path, SessionCache()), idle_s=options.idle_s)
