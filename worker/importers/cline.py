"""Cline and Roo Code (and Kilo Code, Roo's fork): a folder per task, ``tasks/<id>/``.

Where: VS Code's global storage of the extension (``saoudrizwan.claude-dev``,
``rooveterinaryinc.roo-cline``, ``kilocode.kilo-code``) or Cline's own ``~/.cline/data``.
Studied: Cline's writer (3.x to 4.1: ``ExtensionMessage.ts`` ``ClineMessage``/``ClineAsk``/
``ClineSay``, ``HistoryItem.ts``, ``storage/disk.ts``, ``core/task``), Roo Code's
(``packages/types`` ``message.ts``, ``history.ts``), and real task folders.

- the task is the session (id: ``cline-<task id>``; Roo: ``roo-<task id>``). Its cwd is
  the one the agent recorded: Roo's ``history_item.json`` ``workspace``, Cline's task
  list ``<root>/state/taskHistory.json`` (``cwdOnTaskInitialization`` of the item with
  the task's ``id``; ``<root>`` holds ``tasks/``); else the one Cline writes into the
  ``<environment_details>`` ("# Current Working Directory (…)"). The title is that item's
  ``task``, which the task list shows as the task's name. Roo's ``parentTaskId`` makes a
  sub-task a child session; the start is the item's ``ts``, else the first UI message's
  (Cline's task ids are that time in milliseconds too);
- ``api_conversation_history.json`` (what the model saw: Anthropic-style messages) gives
  the events when it exists, one per content block: ``text`` as ``message/user``/
  ``message/assistant``, ``<environment_details>`` and "[TASK RESUMPTION]" blocks as
  ``message/context``; native ``tool_use``/``tool_result`` as ``tool/call`` and a
  ``tool/result`` citing it; in the older XML tool mode a user text "[tool for 'x']
  Result:" is a ``tool/result`` (its call is XML inside the assistant's text, without an
  id to cite); ``thinking`` and Roo's ``reasoning`` blocks as assistant thinking; a
  message with ``isSummary`` (Roo's condensed context) is a ``compaction``;
- a task with no API history (older versions, a task stopped before its first request)
  is read from ``ui_messages.json``, the UI's log: ``task`` and ``user_feedback`` (and
  the first message when it is a ``text``: older versions wrote the task so) as
  ``message/user``; ``text``, ``completion_result``, a ``followup`` question and a plan
  response as ``message/assistant``; ``reasoning`` as thinking; ``tool``, ``command``,
  MCP, browser and sub-task asks or says as a ``tool/call``, answered by the outputs that
  follow it (``command_output`` chunks joined, ``mcp_server_response``,
  ``browser_action_result``) or else by the next API request's "[tool] Result:" sections,
  one per call in order, when their number matches; errors as ``message/context``. A UI
  log whose last message (its ``ts``) is less than a minute old waits: Cline writes the
  API history moments after the task starts, and then that is read instead. When both
  exist, the API history wins;
- skipped and counted: ``image`` blocks and other block types; with an API history,
  ``ui_messages.json``'s content (its first time is read); in a UI log, bookkeeping
  (``api_req_started`` not used for a result, ``checkpoint_created``, ``task_progress``,
  retries, resume asks, the empty completion ask) and unknown kinds, as ``ui:<type>:<kind>``.

Cline rewrites the whole file after each message, keeping what it held: ``watch``
publishes the messages after the ones it published. The task list is read with the
folder (a task's cwd is known when it is first read, its title when it ends): a change of
``taskHistory.json`` alone does not make ``watch`` read a task again.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from time import time as now
from typing import Any, Final

import orjson

from worker.importers.base import Problem, as_text, cut, safe_id
from worker.importers.source_reading import (
    Item,
    SourceReading,
    SourceSession,
    from_millis,
    read_document,
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


def read_task(task_dir: Path) -> SourceReading:
    """The task folder's session: from ``api_conversation_history.json`` when it exists
    (what the model saw), else from ``ui_messages.json`` (the UI's log of the task)."""
    reading = SourceReading()
    has_history = (task_dir / CONVERSATION).exists()
    conversation = _load(task_dir / (CONVERSATION if has_history else UI_MESSAGES), reading)
    if not isinstance(conversation, list):
        if conversation is not None:
            what = f"{CONVERSATION if has_history else UI_MESSAGES} is not a list of messages"
            reading.problems.append(Problem(str(task_dir), 0, what))
        return reading
    history = _load(task_dir / "history_item.json", reading, optional=True)
    history = history if isinstance(history, dict) else {}
    kind = flavour(task_dir)
    task_id = str(history.get("id") or task_dir.name)
    listed = _listed(task_dir, task_id) if kind == "cline" else {}
    ui = _load(task_dir / UI_MESSAGES, reading, optional=True) if has_history else conversation
    first_ui = ui[0] if isinstance(ui, list) and ui and isinstance(ui[0], dict) else {}
    # Cline's task ids are the task's start in milliseconds.
    start = from_millis(history.get("ts") or listed.get("ts")) or from_millis(first_ui.get("ts"))
    start = start or (from_millis(int(task_id)) if task_id.isdigit() else None)
    parent = history.get("parentTaskId")
    # The folder the agent recorded (Roo's workspace, Cline's cwd at the task's start),
    # else the one Cline wrote into the environment details.
    recorded = history.get("workspace") or listed.get("cwdOnTaskInitialization")
    title = history.get("task") or listed.get("task")
    extra = {"mode": history["mode"]} if isinstance(history.get("mode"), str) else {}
    if isinstance(listed.get("ulid"), str):
        extra["ulid"] = listed["ulid"]
    session = SourceSession(
        session_id=safe_id(task_id, prefix=f"{kind}-"),
        cwd=recorded if isinstance(recorded, str) and recorded else None,
        time=start,
        # The task list shows the task's text (``HistoryItem.task``) as its name.
        title=title if isinstance(title, str) and title.strip() else None,
        parent=safe_id(parent, prefix=f"{kind}-") if isinstance(parent, str) and parent else None,
        extra=extra,
    )
    if has_history:
        session.cwd = session.cwd or _cwd_of(conversation)
        for index, message in enumerate(conversation):
            if isinstance(message, dict):
                session.items.extend(_message(str(index), message, start, session.skipped))
            else:
                session.skipped["message:not-an-object"] += 1
    else:
        session.cwd = session.cwd or _cwd_of_ui(conversation)
        read_ui_log(conversation, session, settled=_quiet(task_dir / UI_MESSAGES, conversation))
    reading.sessions.append(session)
    return reading


def _quiet(path: Path, messages: list[Any]) -> bool:
    """The UI log is not being written: its last message is ``UI_SETTLE_S`` old (by its
    own ``ts``; the file's time only when it has none: a copied file's is the copy's)."""
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    ts = last.get("ts")
    if isinstance(ts, int | float) and not isinstance(ts, bool):
        return now() - float(ts) / 1000 >= UI_SETTLE_S
    try:
        return now() - path.stat().st_mtime >= UI_SETTLE_S
    except OSError:
        return False


# Cline's task list, ``<root>/state/taskHistory.json`` beside ``<root>/tasks/<id>/`` (the
# extension's globalStorage folder, or ``~/.cline/data``): read once per change of the
# file, not once per task.
_TASK_LISTS: dict[Path, tuple[tuple[int, int], dict[str, dict[str, Any]]]] = {}


def _listed(task_dir: Path, task_id: str) -> dict[str, Any]:
    """The task's item in Cline's task list (``HistoryItem``: ``id``, ``ulid``, ``ts``,
    ``task``, ``cwdOnTaskInitialization``), or empty."""
    path = task_dir.parent.parent / "state" / "taskHistory.json"
    try:
        stat = path.stat()
    except OSError:
        return {}
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _TASK_LISTS.get(path)
    if cached is None or cached[0] != stamp:
        try:
            items = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}  # being rewritten: the next reading finds it whole
        by_id = (
            {str(i.get("id")): i for i in items if isinstance(i, dict)}
            if isinstance(items, list)
            else {}
        )
        cached = _TASK_LISTS[path] = (stamp, by_id)
    return cached[1].get(task_id, {})


def _load(path: Path, reading: SourceReading, *, optional: bool = False) -> object:
    # Cline writes the file whole; a half-written one is read again on the next poll.
    document = read_document(path, reading, optional=optional)
    return None if document is None else document.value


def _cwd_of_ui(messages: list[Any]) -> str | None:
    """The cwd Cline wrote into the first API request's environment details."""
    for message in messages[:8]:
        if isinstance(message, dict) and message.get("say") == "api_req_started":
            request = _json(str(message.get("text") or "")).get("request")
            found = _CWD.search(request) if isinstance(request, str) else None
            if found:
                return found.group(1).strip()
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


# --- ui_messages.json: the task's UI log (ClineMessage), read when there is no API history

UI_MESSAGES: Final = "ui_messages.json"
# Cline writes the API history moments after the task starts: a UI log alone whose last
# message is this recent may be a task whose history is not written yet.
UI_SETTLE_S: Final = 60.0
# Kinds that open a tool call, by the tool name the call gets; the kinds that answer each.
_CALLS: Final = {
    "tool": None,  # the name is in the JSON text's ``tool``
    "command": "execute_command",
    "use_mcp_server": "use_mcp_server",
    "browser_action_launch": "browser_action",
    "browser_action": "browser_action",
    "use_subagents": "use_subagents",
    "new_task": "new_task",
}
_ANSWERS: Final = {
    "command_output": "execute_command",
    "mcp_server_response": "use_mcp_server",
    "browser_action_result": "browser_action",
}
_USER: Final = frozenset({"task", "user_feedback"})
_ASSISTANT: Final = frozenset({
    "text", "completion_result", "plan_completion_result", "followup", "plan_mode_respond",
    "act_mode_respond",
})  # fmt: skip
_NOTICES: Final = frozenset({
    "error", "diff_error", "clineignore_error", "rooignore_error", "api_req_failed",
    "mistake_limit_reached", "command_permission_denied", "condense_context_error",
})  # fmt: skip
# The API request's "request" starts with the tool's result as the model saw it: the XML
# mode's "[tool for 'x'] Result:", native tools' "[Tool]" (formatContentBlockToMarkdown).
_RESULT_HEAD: Final = re.compile(
    r"^\[(?:[\w-]+(?: for '[^\n]*?')?\] Result:|Tool(?: \(Error\))?\]$)", re.MULTILINE
)


@dataclass
class _OpenCall:
    item: Item
    tool: str
    result: Item | None = None


def read_ui_log(messages: list[Any], session: SourceSession, *, settled: bool) -> None:
    """The UI log as the session's items (Cline's ``ClineMessage``: ``ts``, ``type`` ask or
    say, the ``ask``/``say`` kind, ``text``, often JSON). ``settled``: the log is not
    being written, so its last message is whole."""
    items, skipped = session.items, session.skipped
    calls: list[_OpenCall] = []  # the calls since the last API request, in order
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            skipped["ui:not-an-object"] += 1
            continue
        kind = str(message.get("say") or message.get("ask"))
        raw = message.get("text")
        text = raw if isinstance(raw, str) else ""
        ref, time, source = f"ui-{index}", from_millis(message.get("ts")), message.get("type")
        added: list[Item] = []
        if index == 0 and kind == "text" and source == "say":
            kind = "task"  # Cline wrote the task as a "text" before the "task" kind
        if message.get("images"):
            skipped["ui:image"] += len(message["images"])
        if kind in _ANSWERS and calls and calls[-1].tool == _ANSWERS[kind]:
            call = calls[-1]  # output streams in chunks, each its own message
            if call.result is None:
                call.result = _result(ref, call, text, time, f"{source}:{kind}")
                added.append(call.result)
            elif text:
                call.result.payload["output"] = cut(f"{call.result.payload['output']}\n{text}")
        elif kind == "api_req_started":
            request = _json(text).get("request")
            waiting = [call for call in calls if call.result is None]
            sections = _result_sections(request) if isinstance(request, str) else []
            if waiting and len(sections) == len(waiting):
                # The request answers the calls in the order they were made.
                for number, (call, output) in enumerate(zip(waiting, sections, strict=True)):
                    added.append(_result(f"{ref}-{number}", call, output, time,
                                         "api_req_started:result"))  # fmt: skip
            else:
                skipped["ui:api_req_started"] += 1
            calls = []
        elif kind in _CALLS:
            data = _json(text)
            name = _CALLS[kind] or str(data.get("tool") or kind)
            arguments: object = (data or {"command": text}) if kind == "command" else (data or text)
            call_item = Item(ref, "tool/call", "assistant", {"tool": name, "input": arguments},
                             f"{source}:{kind}", time, call=ref)  # fmt: skip
            added.append(call_item)
            calls.append(_OpenCall(call_item, _CALLS[kind] or name))
        elif kind in _USER and text.strip():
            added.append(said(ref, "user", text, time, f"say:{kind}"))
            calls = []
        elif kind in _ASSISTANT and _spoken(kind, text):
            added.append(said(ref, "assistant", _spoken(kind, text), time, f"{source}:{kind}"))
        elif kind == "reasoning" and (text or message.get("reasoning")):
            thought = text or str(message.get("reasoning"))
            added.append(Item(ref, "message/assistant", "assistant", {"thinking": cut(thought)},
                              "say:reasoning", time))  # fmt: skip
        elif kind in _NOTICES and text.strip():
            added.append(Item(ref, "message/context", "system", {"text": cut(text)},
                              f"{source}:{kind}", time))  # fmt: skip
        elif source == "say" and kind in _USER | _ASSISTANT | _NOTICES | {"reasoning"}:
            skipped[f"ui:{source}:{kind}:empty"] += 1  # a streaming placeholder left empty
        else:
            skipped[f"ui:{source}:{kind}"] += 1
        # The last message may still be streaming (``partial``), or a command's output
        # may still be coming: it waits, with what follows it, for a later look.
        if index == last and not settled:
            still = message.get("partial") is True or (bool(calls) and kind in _ANSWERS)
            for item in added:
                item.complete = not still
        items.extend(added)


def _result_sections(request: str) -> list[str]:
    """The tool results an API request starts with, one per result header, up to the
    environment details Cline adds after them."""
    request = request.split("<environment_details>")[0]
    starts = [found.start() for found in _RESULT_HEAD.finditer(request)]
    if not starts or starts[0] != 0:
        return []
    ends = [*starts[1:], len(request)]
    return [request[start:end].strip() for start, end in zip(starts, ends, strict=True)]


def _result(ref: str, call: _OpenCall, output: str, time: str | None, source: str) -> Item:
    payload: dict[str, Any] = {"output": cut(output)}
    if output.startswith("[Tool (Error)]"):
        payload["is_error"] = True
    return Item(f"{ref}-result", "tool/result", "tool", payload, source, time,
                result_of=call.item.call)  # fmt: skip


def _json(text: str) -> dict[str, Any]:
    """A message's text read as the JSON object Cline often puts there, else empty."""
    if not text.startswith("{"):
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _spoken(kind: str, text: str) -> str:
    """What the assistant said: a question's or a plan's text lives in JSON."""
    data = _json(text) if kind in ("followup", "plan_mode_respond", "act_mode_respond") else {}
    said_text = data.get("question") or data.get("response") or ("" if data else text)
    options = data.get("options")
    if isinstance(options, list) and options:
        said_text = f"{said_text}\n" + "\n".join(f"- {option}" for option in options)
    return said_text if isinstance(said_text, str) and said_text.strip() else ""
