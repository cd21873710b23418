"""Nanocoder (npm ``@nanocollective/nanocoder``): its saved sessions, one JSON document each,
``<session uuid>.json`` in ``sessions/`` of its data folder (``$NANOCODER_DATA_DIR``, else
``$XDG_DATA_HOME/nanocoder``, else Linux ``~/.local/share/nanocoder``, macOS
``~/Library/Application Support/nanocoder``, Windows ``%APPDATA%\\nanocoder``; a
``sessions.directory`` in ``agents.config.json`` moves it), beside ``sessions.json`` (an
index of the same headers: not a source).

Read from the writer in ``@nanocollective/nanocoder`` 1.30.0 (``session/session-manager.js``
``saveSession``, ``hooks/useSessionAutosave.js``, ``acp/acp-agent.js``, the ``Message`` type
in ``types/core.d.ts``, ``utils/llm-summariser.js``) and recorded from 1.30.0: the file is
``{id, title, createdAt, lastAccessedAt, messageCount, provider, model, workingDirectory,
titleManuallySet?, messages}``, rewritten whole (atomically) at each autosave and when the
interface exits; ``messages`` is the OpenAI-style chat history without the system prompt:

- the session is ``nanocoder-<id>``, cwd = ``workingDirectory``, title = ``title`` (the last
  prompt's first 50 characters as autosave writes it, an editor's first prompt over ACP, or
  a rename: ``titleManuallySet``; not when it is a compaction's summary, which autosave
  takes for the last prompt);
- ``user`` as ``message/user``, except the texts Nanocoder adds itself (its nudges after an
  empty answer, the malformed-call and diagnostics feedback, "Context has been compacted"),
  ``message/context``, and a ``!command``'s "Bash command output" block, ``command/output``;
  ``assistant`` ``reasoning`` as thinking, its text as ``message/assistant``, each
  ``tool_calls`` entry as a ``tool/call``; ``tool`` as the ``tool/result`` of
  ``tool_call_id``, an error when Nanocoder's own history view marks it failed ("Error: ",
  "⚒ Validation failed"), when ``execute_bash`` reports a non-zero ``EXIT_CODE`` or when it
  did not run (cancelled, or aborted beside an invalid call), and marked ``interrupted``
  when the user cancelled it;
- a compaction (``utils/llm-summariser.js``) rewrites ``messages`` as a ``user`` message
  holding ``<conversation-summary>`` followed by the kept recent messages: a ``compaction``.
  Read fresh, it opens the session and replaces nothing (the file keeps nothing older); a
  file read before and after it (``watch``) keeps what it published, and the rewritten
  file's items (the compaction, replacing all before it, the kept messages again, what
  follows) come after them: Continue's converter, which keeps that count in its token;
- messages carry no times: the first takes ``createdAt`` (a summary at the head: the
  save's), the others ``lastAccessedAt`` (the save that first showed them), so a session's
  last activity is the source's own.

Skipped and counted: images attached to a prompt, ``structuredContent`` beside a tool's
text (the same result for the interface), ``system`` messages and other roles (drift).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from worker.importers.base import Converter, Problem, as_text, cut, safe_id
from worker.importers.continue_cli import ContinueConverter
from worker.importers.plugin import ConvertOptions
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    read_document,
    said,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed_document

NAME: Final = "nanocoder"
PREFIX: Final = "nanocoder-"
FOLDER: Final = "sessions"
INDEX: Final = "sessions.json"
_UUID: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json$")
SUMMARY_OPEN: Final = "<conversation-summary>"
# The user messages Nanocoder writes itself (conversation-loop.js, auto-diagnostics.js):
# feedback to the model, not the user's words.
_HARNESS: Final = (
    "Your previous response contained a malformed tool call.",
    "Please continue with the task.",
    "Please provide a summary or response based on the tool results above.",
    "Context has been compacted. Please continue with the task.",
    "Automatic diagnostics after the recent edits found issues.",
)
BASH_OUTPUT: Final = "Bash command output:\n"  # a `!command`'s output, given to the model
# How its history view marks a failed tool (session-history-renderer.js isErrorResult).
_FAILED: Final = ("Error: ", "⚒ Validation failed")
# A tool the user cancelled (ACP's session/cancel, Esc in the interface): its result.
_CANCELLED: Final = (
    "Error: Cancelled via AbortSignal",
    "Error: cancelled by user",
    "Tool execution was cancelled by the user.",
)
# A call not run because another call of the same answer was invalid (conversation-loop.js).
_NOT_RUN: Final = "Execution aborted because another tool call in this request was invalid."
_EXIT: Final = re.compile(r"^EXIT_CODE: (-?\d+)")


def read_session(path: Path) -> SourceReading:
    """One session file as it is now; a half-written file is reported and read again on
    the next change (Nanocoder renames a whole new file into place)."""
    reading = SourceReading()
    document = read_document(path, reading)
    if document is None:
        return reading
    doc = document.value
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("id"), str)
        or not isinstance(messages, list)
    ):
        reading.problems.append(
            Problem(str(path), 0, "not a Nanocoder session (an object with id and messages)")
        )
        return reading
    not_objects = len(messages)
    messages = [m for m in messages if isinstance(m, dict)]
    not_objects -= len(messages)
    started = _time(doc.get("createdAt"))
    saved = _time(doc.get("lastAccessedAt")) or started
    cwd = doc.get("workingDirectory")
    session = SourceSession(
        session_id=safe_id(doc["id"], prefix=PREFIX),
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        time=started,
        extra={
            ours: doc[k]
            for k, ours in (("provider", "model_provider"), ("model", "model"))
            if isinstance(doc.get(k), str)
        },
    )
    if not_objects:
        session.skipped["message:not-an-object"] += not_objects
    title = doc.get("title")
    if isinstance(title, str) and not title.lstrip().startswith(SUMMARY_OPEN):
        session.title = title
    elif isinstance(title, str):  # autosave titles by the last user message: the summary
        session.skipped["title:summary"] += 1
    # A summary at the head was written by the save that compacted: its time, not the start.
    first = saved if _summary(messages) else started
    session.items = _items(session.session_id, messages, first, saved, session)
    reading.sessions.append(session)
    return reading


def _summary(messages: Sequence[dict[str, Any]]) -> bool:
    first = messages[0] if messages else {}
    content = first.get("content")
    return (
        first.get("role") == "user"
        and isinstance(content, str)
        and content.lstrip().startswith(SUMMARY_OPEN)
    )


def _time(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value if value.endswith("Z") or "+" in value[10:] else None


def _items(
    sid: str,
    messages: list[dict[str, Any]],
    first_time: str | None,
    time: str | None,
    session: SourceSession,
) -> list[Item]:
    items: list[Item] = []
    skipped = session.skipped
    for index, message in enumerate(messages):
        ref = f"m{index}"
        when = first_time if index == 0 else time
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if message.get("images"):
            skipped["message:images"] += 1
        if role == "user":
            items.extend(_user(ref, text, when, index, skipped))
        elif role == "assistant":
            reasoning = message.get("reasoning")
            if isinstance(reasoning, str) and reasoning.strip():
                items.append(
                    Item(f"{ref}-thinking", "message/assistant", "assistant",
                         {"thinking": cut(reasoning)}, "assistant:reasoning", when)
                )  # fmt: skip
            if text.strip():
                items.append(said(ref, "assistant", text, when, "assistant"))
            calls = message.get("tool_calls")
            for n, call in enumerate(calls if isinstance(calls, list) else []):
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    skipped["tool_call:malformed"] += 1
                    continue
                call_id = call.get("id")
                call_id = call_id if isinstance(call_id, str) and call_id else f"{sid}:{ref}:{n}"
                items.append(
                    Item(f"{ref}-call{n}", "tool/call", "assistant",
                         {"tool": function.get("name"), "input": function.get("arguments"),
                          "call_id": call_id},
                         "assistant:tool_call", when, call=call_id)
                )  # fmt: skip
            if not text.strip() and not calls and not reasoning:
                skipped["message:assistant:empty"] += 1
        elif role == "tool":
            if message.get("structuredContent") is not None:
                skipped["tool:structuredContent"] += 1
            payload: dict[str, Any] = {"output": as_text(text)}
            if _failed(text):
                payload["is_error"] = True
            if text.startswith(_CANCELLED):
                payload["interrupted"] = True
            call_id = message.get("tool_call_id")
            if isinstance(message.get("name"), str):
                payload["tool"] = message["name"]
            items.append(
                Item(ref, "tool/result", "tool", payload, "tool", when,
                     result_of=call_id if isinstance(call_id, str) else None)
            )  # fmt: skip
        else:
            skipped[f"message:{role}"] += 1
    return items


def _user(ref: str, text: str, when: str | None, index: int, skipped: Any) -> list[Item]:
    if not text.strip():
        skipped["message:user:empty"] += 1
        return []
    if index == 0 and text.lstrip().startswith(SUMMARY_OPEN):
        return [Item(ref, "compaction", "system", {"summary": cut(text)}, "user:summary", when)]
    if text.startswith(_HARNESS):
        return [Item(ref, "message/context", "system", {"text": cut(text)}, "user:harness", when)]
    if text.startswith(BASH_OUTPUT):
        payload = {"text": cut(text)}
        return [Item(ref, "command/output", "tool", payload, "user:bash-output", when)]
    return [said(ref, "user", text, when, "user")]


def _failed(text: str) -> bool:
    if text.startswith((*_FAILED, *_CANCELLED, _NOT_RUN)):
        return True
    code = _EXIT.match(text)
    return code is not None and code.group(1) != "0"


def data_dir() -> Path:
    """Nanocoder's data folder (``config/paths.js`` ``getAppDataPath``)."""
    chosen = os.environ.get("NANOCODER_DATA_DIR")
    if chosen:
        return Path(chosen)
    if os.environ.get("XDG_DATA_HOME"):
        return Path(os.environ["XDG_DATA_HOME"]) / NAME
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming") / NAME
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / NAME
    return Path.home() / ".local" / "share" / NAME


class NanocoderImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Nanocoder's saved sessions (~/.local/share/nanocoder/sessions)"
    env_vars: ClassVar[tuple[str, ...]] = ("NANOCODER_DATA_DIR", "XDG_DATA_HOME")
    detect_order: ClassVar[int] = 57

    def default_locations(self) -> list[Path]:
        return [data_dir() / FOLDER]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """``<uuid>.json`` whose first lines are a session's header (``saveSession``
        writes it indented, the header's keys first)."""
        text = b"".join(head)
        return (
            _UUID.match(path.name) is not None
            and b'"workingDirectory"' in text
            and b'"messageCount"' in text
        )

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(
            root, "*.json", lambda path: path.name != INDEX and sniffed_document(self, path)
        )

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_session(path)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return ContinueConverter(lambda: read_session(path), idle_s=options.idle_s, name=NAME)
