"""Open Interpreter (PyPI ``open-interpreter``): its conversations, one JSON file each in
``conversations/`` of its config folder (platformdirs' ``user_config_dir("open-interpreter")``:
Linux ``${XDG_CONFIG_HOME:-~/.config}/open-interpreter``, macOS ``~/Library/Application
Support/open-interpreter``, Windows ``%LOCALAPPDATA%\\open-interpreter``), named after the
first prompt's first words and the time it was started
(``<words>__<Month_DD_YYYY_HH-MM-SS>.json``), rewritten whole after each exchange.

Read from the writer in ``open-interpreter`` 0.4.3 (``core/core.py`` ``chat`` and
``_respond_and_store``, ``core/respond.py``): the file is the list of LMC messages,
``{role, type, format?, content}``, chunks of the same role, type and format joined:

- the conversation is the session (``oi-<file name>``; no cwd: Open Interpreter records
  none); ``user`` ``message`` as ``message/user``; ``assistant`` ``message`` as
  ``message/assistant``; ``assistant`` ``code`` (its ``format`` the language) as a
  ``tool/call`` (``execute``: the language and the code), and the ``computer`` messages after
  it, its ``console`` output joined, as its ``tool/result``; a code block nothing answered
  (declined, or cut off before it ran: the file is written when a chat turn is over, never
  while code runs) gets a result marked ``not_run``, an error;
- no times: events take the file's modification time (its name's time is a local time
  without a zone), so a freshly copied conversation looks active.

Skipped and counted: images and files (a user's or the computer's), confirmations, other
roles and types.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from worker.importers.base import Problem, cut, file_time, safe_id
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    read_document,
    said,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed_document

NAME: Final = "open-interpreter"
PREFIX: Final = "oi-"
APP: Final = "open-interpreter"
FOLDER: Final = "conversations"


def read_conversation(path: Path) -> SourceReading:
    """One conversation file as it is now; a half-written file is reported and read again
    on the next change."""
    reading = SourceReading()
    read = read_document(path, reading)
    if read is None:
        return reading
    messages = read.value
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and "role" in m and "type" in m for m in messages
    ):
        reading.problems.append(
            Problem(str(path), 0, "not an Open Interpreter conversation (a list of LMC messages)")
        )
        return reading
    when = file_time(path)
    session = SourceSession(session_id=safe_id(path.stem, prefix=PREFIX), cwd=None, time=when)
    session.items = _items(session.session_id, messages, when, session)
    reading.sessions.append(session)
    return reading


def _items(
    sid: str, messages: list[dict[str, Any]], when: str | None, session: SourceSession
) -> list[Item]:
    items: list[Item] = []
    skipped = session.skipped
    call: Item | None = None  # the code block waiting for the computer's answer
    outputs: list[str] = []

    def answer(ref: str) -> None:
        nonlocal call, outputs
        if call is None:
            return
        if outputs:
            payload: dict[str, Any] = {"output": cut("".join(outputs))}
        else:  # declined, or stopped before it ran: nothing answered it
            payload = {"output": "", "is_error": True, "not_run": True}
        items.append(
            Item(
                f"{ref}-result",
                "tool/result",
                "tool",
                payload,
                "computer",
                when,
                result_of=call.call,
            )
        )
        call, outputs = None, []

    for index, message in enumerate(messages):
        ref = f"m{index}"
        role, kind, content = message["role"], message["type"], message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "computer":
            if call is not None and kind == "console" and message.get("format") == "output":
                outputs.append(text)
            elif call is None and kind == "console":
                skipped["computer:console:no-code"] += 1
            else:
                skipped[f"computer:{kind}"] += 1
            continue
        answer(f"m{index - 1}")
        if role == "user" and kind == "message":
            if text.strip():
                items.append(said(ref, "user", text, when, "user:message"))
            else:
                skipped["user:message:empty"] += 1
        elif role == "assistant" and kind == "message":
            if text.strip():
                items.append(said(ref, "assistant", text, when, "assistant:message"))
            else:
                skipped["assistant:message:empty"] += 1
        elif role == "assistant" and kind == "code":
            language = message.get("format")
            call = Item(
                ref,
                "tool/call",
                "assistant",
                {"tool": "execute", "input": {"language": language, "code": text}},
                "assistant:code",
                when,
                call=f"{sid}:{ref}",
            )
            items.append(call)
        else:
            skipped[f"{role}:{kind}"] += 1
    # Open Interpreter writes the file when a chat turn is over, never while code runs.
    answer(f"m{len(messages) - 1}")
    return items


def config_dir() -> Path:
    """platformdirs' user config folder for Open Interpreter."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home()) / APP
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / APP


class OpenInterpreterImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = (
        "Open Interpreter conversations (~/.config/open-interpreter/conversations)"
    )
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_CONFIG_HOME",)
    detect_order: ClassVar[int] = 61

    def default_locations(self) -> list[Path]:
        return [config_dir() / FOLDER]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``conversations/*.json`` holding a list of LMC messages (one line, or
        indented by ``%save_message``)."""
        text = b"".join(head).lstrip()
        return (
            path.suffix == ".json"
            and path.parent.name == FOLDER
            and text.startswith(b"[")
            and b'"role"' in text
            and b'"type"' in text
        )

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(root, "*.json", lambda path: sniffed_document(self, path))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_conversation(path)
