"""Cline and Roo Code (and Kilo Code, Roo's fork): a folder per task, ``tasks/<id>/``.

Where: VS Code's global storage of the extension (``saoudrizwan.claude-dev``,
``rooveterinaryinc.roo-cline``, ``kilocode.kilo-code``) or Cline's own ``~/.cline/data``.
Studied: Cline's and Roo Code's task persistence (``api_conversation_history.json``,
``ui_messages.json``, ``task_metadata.json``; Roo's ``history_item.json``), 2024-2026
versions, and public readers of both.

- the task is the session (id: ``cline-<task id>``; Roo: ``roo-<task id>``);
  ``history_item.json`` (Roo) gives its workspace, start time and ``parentTaskId`` (a
  sub-task is a child session of the task that delegated it); otherwise the cwd is the
  one Cline writes into every ``<environment_details>`` ("# Current Working Directory
  (…)"), and the start time the first ``ui_messages.json`` message's ``ts`` (Cline's task
  ids are that time in milliseconds too);
- ``api_conversation_history.json`` (what the model saw: Anthropic-style messages) gives
  the events, one per content block: ``text`` as ``message/user``/``message/assistant``,
  ``<environment_details>`` and "[TASK RESUMPTION]" blocks as ``message/context``;
  native ``tool_use``/``tool_result`` as ``tool/call`` and a ``tool/result`` citing it;
  in the older XML tool mode a user text "[tool for 'x'] Result:" is a ``tool/result``
  (its call is XML inside the assistant's text, without an id to cite); ``thinking``
  and Roo's ``reasoning`` blocks as assistant thinking;
- a message with ``isSummary`` (Roo's condensed context) is a ``compaction`` replacing
  what came before it;
- skipped and counted: ``image`` blocks and other block types; ``ui_messages.json``'s
  content (it repeats the conversation for the UI; only its first time is read).

Cline rewrites the whole file after each message, keeping what it held: ``watch``
publishes the messages after the ones it published.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.base import Problem, as_text, cut, safe_id
from worker.importers.snapshot import (
    Item,
    Snapshot,
    SourceSession,
    from_millis,
    said,
)

CONVERSATION: Final = "api_conversation_history.json"
_CWD: Final = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_XML_RESULT: Final = re.compile(r"^\[(\w+)(?: for [^\]]*)?\] Result:")


def flavour(task_dir: Path) -> str:
    """``roo`` for Roo Code and Kilo Code's folders (their history item, their storage
    folder's name), else ``cline``."""
    if (task_dir / "history_item.json").exists():
        return "roo"
    storage = str(task_dir.parent.parent.name)
    return "roo" if "roo" in storage or "kilo" in storage else "cline"


def read_task(task_dir: Path) -> Snapshot:
    snapshot = Snapshot()
    conversation = _load(task_dir / CONVERSATION, snapshot)
    if not isinstance(conversation, list):
        if conversation is not None:
            what = f"{CONVERSATION} is not a list of messages"
            snapshot.problems.append(Problem(str(task_dir), 0, what))
        return snapshot
    history = _load(task_dir / "history_item.json", snapshot, optional=True)
    history = history if isinstance(history, dict) else {}
    ui = _load(task_dir / "ui_messages.json", snapshot, optional=True)
    first_ui = ui[0] if isinstance(ui, list) and ui and isinstance(ui[0], dict) else {}
    kind = flavour(task_dir)
    task_id = str(history.get("id") or task_dir.name)
    # Cline's task ids are the task's start in milliseconds.
    start = from_millis(history.get("ts")) or from_millis(first_ui.get("ts"))
    start = start or (from_millis(int(task_id)) if task_id.isdigit() else None)
    parent = history.get("parentTaskId")
    workspace = history.get("workspace")
    session = SourceSession(
        session_id=safe_id(task_id, prefix=f"{kind}-"),
        cwd=workspace if isinstance(workspace, str) and workspace else _cwd_of(conversation),
        time=start,
        parent=safe_id(parent, prefix=f"{kind}-") if isinstance(parent, str) and parent else None,
        extra={"mode": history["mode"]} if isinstance(history.get("mode"), str) else {},
    )
    for index, message in enumerate(conversation):
        if isinstance(message, dict):
            session.items.extend(_message(str(index), message, start, session.skipped))
        else:
            session.skipped["message:not-an-object"] += 1
    snapshot.sessions.append(session)
    return snapshot


def _load(path: Path, snapshot: Snapshot, *, optional: bool = False) -> object:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        if not optional:
            snapshot.problems.append(Problem(str(path), 0, "missing"))
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        # Cline writes the file whole; a half-written one is read again on the next poll.
        snapshot.problems.append(Problem(str(path), 0, f"not readable JSON: {exc}"))
        return None


def _cwd_of(conversation: list[Any]) -> str | None:
    for message in conversation[:4]:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else [content]:
            text = block.get("text") if isinstance(block, dict) else block
            found = _CWD.search(text) if isinstance(text, str) else None
            if found:
                return found.group(1).strip()
    return None


def _message(
    ref: str, message: dict[str, Any], start: str | None, skipped: Counter[str]
) -> list[Item]:
    role = message.get("role")
    time = from_millis(message.get("ts")) or start
    content = message.get("content")
    if role not in ("user", "assistant"):
        skipped[f"message:{role}"] += 1
        return []
    if message.get("isSummary") is True:
        return [Item(ref, "compaction", "system", {"summary": as_text(content)}, "isSummary", time)]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    items: list[Item] = []
    for index, block in enumerate(content if isinstance(content, list) else []):
        item = _block(f"{ref}-{index}", str(role), block, time) if isinstance(block, dict) else None
        if item is None:
            skipped[f"block:{block.get('type') if isinstance(block, dict) else None}"] += 1
        elif _continues_xml_result(items, item):
            # XML mode: the blocks after a "[tool] Result:" header are that result's output.
            items[-1].payload["output"] += "\n" + str(item.payload["text"])
        else:
            items.append(item)
    return items


def _continues_xml_result(items: list[Item], item: Item) -> bool:
    return (
        bool(items)
        and items[-1].source_type == "text:xml-tool-result"
        and item.type == "message/user"
    )


def _block(ref: str, role: str, block: dict[str, Any], time: str | None) -> Item | None:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        text = block["text"]
        xml_result = _XML_RESULT.match(text) if role == "user" else None
        if xml_result is not None:
            payload = {"tool": xml_result.group(1), "output": cut(text)}
            return Item(ref, "tool/result", "tool", payload, "text:xml-tool-result", time)
        return said(ref, role, text, time, f"{role}:text")
    if kind in ("thinking", "reasoning"):
        thought = block.get("thinking") or block.get("text")
        if isinstance(thought, str):
            payload = {"thinking": cut(thought)}
            return Item(ref, "message/assistant", "assistant", payload, str(kind), time)
    if kind == "tool_use":
        payload = {"tool": block.get("name"), "input": block.get("input")}
        return Item(ref, "tool/call", "assistant", payload, "tool_use", time,
                    call=str(block.get("id")))  # fmt: skip
    if kind == "tool_result":
        answer: dict[str, Any] = {"output": as_text(block.get("content"))}
        if block.get("is_error") is True:
            answer["is_error"] = True
        return Item(ref, "tool/result", "tool", answer, "tool_result", time,
                    result_of=str(block.get("tool_use_id")))  # fmt: skip
    return None
