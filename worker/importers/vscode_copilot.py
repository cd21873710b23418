"""VS Code Copilot Chat: ``workspaceStorage/<hash>/chatSessions/<id>.json`` or ``.jsonl``.

Studied: VS Code's writer (``chatModel.ts``: ``ISerializableChatData`` version 3 and its
response parts; ``chatSessionOperationLog.ts``: the ``storageSchema`` of the log;
``objectMutationLog.ts``: how the log is written and read back), and the older version 1
and 2 documents. The log is JSON Lines: ``kind`` 0 the initial state, 1 set the value at
the key path ``k`` (no ``v``: the property is removed), 2 cut the array at ``k`` to ``i``
when given and append ``v`` (either may be absent; a missing array is created), 3 delete
``k``; it is applied exactly as VS Code reads it back. The format changes often: a
version this module was not written against is refused as a whole with a precise
problem, never half-imported.

- the session (``vscode-<sessionId>``) starts at ``creationDate``; its cwd is the folder
  ``workspace.json`` (beside ``chatSessions``) names; a chat of an empty window has none
  (the no-cwd workspace); ``customTitle`` titles it;
- each of ``requests``: ``message.text`` as ``message/user``; its ``response`` parts in
  order: markdown (stored as the bare markdown string ``{value}``; ``markdownContent``,
  ``markdownVuln``) as ``message/assistant``, adjacent pieces and inline references
  joined as VS Code shows them; ``thinking`` (a string or chunks) as assistant thinking;
  ``toolInvocationSerialized`` as a ``tool/call`` (``toolId``, its ``toolSpecificData`` or
  invocation message) and its ``tool/result`` (the past-tense message and
  ``resultDetails``) citing it; an edit group (edit mode writes no tool invocation) as a
  call editing the file and its result;
- a request is over when it has its ``result`` or its ``modelState`` is complete,
  cancelled or failed; one with neither is still being answered only while it is the
  last request and was made recently (its ``timestamp``, not the file's time, which a
  copy resets): then it waits for a later look;
- skipped and counted: code-block URIs, undo stops, progress, confirmation, warning,
  elicitation and other parts, empty thinking separators. Copilot Chat keeps no
  compaction and no sub-agent session of its own in these files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from time import time as now
from typing import Any, Final

import orjson

from worker.importers.base import Problem, as_text, cut, file_uri_path, safe_id
from worker.importers.plugin import UnreadableSource
from worker.importers.source_reading import (
    Item,
    SourceReading,
    SourceSession,
    field_of,
    from_millis,
)

VERSIONS: Final = frozenset({1, 2, 3})
# Markdown parts: VS Code stores ``markdownContent`` as the bare markdown string (no kind;
# some files say ``kind: null``); ``markdownVuln`` keeps its kind and ``content``.
_MARKDOWN: Final = frozenset({None, "markdownContent", "markdownVuln"})
_EDITS: Final = frozenset({"textEditGroup", "notebookEditGroup"})
# ResponseModelState: Pending 0, Complete 1, Cancelled 2, Failed 3, NeedsInput 4.
_FINAL_STATES: Final = frozenset({1, 2, 3})
# A last request with no result, made this recently, is still being answered.
FRESH_S: Final = 1800.0


class Refused(UnreadableSource):
    """A file this module cannot read as a whole (an unknown version, a broken log): its
    reason becomes the file's one problem line, and nothing of it is imported."""


def read_chat(path: Path, *, fresh_s: float = FRESH_S) -> SourceReading:
    """The session in ``path``. A request with no result waits (VS Code is answering it)
    only while it is the last one and was made less than ``fresh_s`` ago (its own
    ``timestamp``; the file's time only when it has none: a copied file's is the copy's)."""
    reading = SourceReading()
    try:
        state = _replay(path) if path.suffix == ".jsonl" else _document(path)
        version = state.get("version")
        if version not in VERSIONS:
            known = ", ".join(map(str, sorted(VERSIONS)))
            raise Refused(f"chat session format version {version!r} is not one this importer"
                          f" reads ({known}); not imported")  # fmt: skip
    except (OSError, Refused) as exc:
        reading.problems.append(Problem(str(path), 0, str(exc)))
        return reading
    title = state.get("customTitle")
    session = SourceSession(
        session_id=safe_id(str(state.get("sessionId") or path.stem), prefix="vscode-"),
        cwd=_workspace_folder(path),
        time=from_millis(state.get("creationDate")),
        title=title if isinstance(title, str) else None,
    )
    requests = state.get("requests")
    requests = [r for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []
    stale = _stale(path, requests[-1] if requests else {}, fresh_s)
    for index, request in enumerate(requests):
        ref = str(request.get("requestId") or index)
        answered = _settled(request) or index < len(requests) - 1 or stale
        session.items.extend(_request(ref, request, answered, session.skipped))
    reading.sessions.append(session)
    return reading


def _stale(path: Path, last: dict[str, Any], fresh_s: float) -> bool:
    made = last.get("timestamp")
    if isinstance(made, int | float) and not isinstance(made, bool) and made > 0:
        return now() - made / 1000 >= fresh_s
    try:
        return now() - path.stat().st_mtime >= fresh_s
    except OSError:
        return False


def _document(path: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise Refused(f"not a whole JSON document: {exc}") from exc
    if not isinstance(value, dict):
        raise Refused("not a chat session (not a JSON object)")
    return value


def _replay(path: Path) -> dict[str, Any]:
    """The session an operation log builds, line by line, as VS Code's own reader
    (``ObjectMutationLog.read``) builds it. A line that does not apply (an unknown
    operation, a path through something that is not there) refuses the file: what it
    built would not be the session VS Code shows."""
    state: Any = None
    with path.open("rb") as fh:
        lines = fh.read().split(b"\n")
    # VS Code ends every entry with a newline: a last line without one is being written.
    complete = lines[:-1]
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            op = orjson.loads(raw)
            kind, keys = op["kind"], op.get("k") or []
            if kind == 0:
                state = op.get("v")
            elif kind not in (1, 2, 3):
                raise Refused(f"line {number}: unknown operation kind {kind!r}; not imported")
            elif state is None:
                raise Refused(f"line {number}: an operation before the initial state;"
                              " not imported")  # fmt: skip
            elif kind == 2:
                _push(state, keys, op.get("v"), op.get("i"))
            elif keys:
                # Set, or delete (set to undefined); a set whose value is undefined has
                # no ``v`` in the JSON and also removes the property.
                _set(state, keys, op["v"] if kind == 1 and "v" in op else _UNDEFINED)
            elif kind == 1 and isinstance(op.get("v"), dict):
                state = op["v"]  # the whole session replaced
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise Refused(f"line {number}: cannot apply ({type(exc).__name__});"
                          " not imported") from exc  # fmt: skip
    if not isinstance(state, dict):
        raise Refused("no initial state (kind 0); not imported")
    return state


_UNDEFINED: Final = object()


def _parent(state: Any, keys: list[Any]) -> Any:
    """The container the last key of ``keys`` is in (a missing step raises, as in VS Code)."""
    target = state
    for key in keys[:-1]:
        target = target[key]
    if not isinstance(target, dict | list):
        raise TypeError("not a container")
    return target


def _set(state: Any, keys: list[Any], value: object) -> None:
    target, last = _parent(state, keys), keys[-1]
    if isinstance(target, dict):
        if value is _UNDEFINED:
            target.pop(last, None)
        else:
            target[last] = value
        return
    # A JavaScript array grows to take an index past its end.
    target.extend([None] * (last + 1 - len(target)))
    target[last] = None if value is _UNDEFINED else value


def _push(state: Any, keys: list[Any], values: object, start: object) -> None:
    """Kind 2: cut the array at ``i`` when given, then append ``v`` (either may be
    absent); an array not there yet is created."""
    target, last = _parent(state, keys), keys[-1]
    if isinstance(target, dict):
        items = target.get(last)
    else:
        items = target[last] if 0 <= last < len(target) else None
    items = items if isinstance(items, list) else []
    if isinstance(start, int) and not isinstance(start, bool):
        del items[start:]
        items.extend([None] * (start - len(items)))
    if isinstance(values, list):
        items.extend(values)
    elif values is not None:
        raise TypeError("v is not a list")
    _set(state, keys, items)


def _workspace_folder(path: Path) -> str | None:
    """The folder of the workspace the chat belongs to (``workspace.json``'s file URI)."""
    try:
        manifest = orjson.loads((path.parent.parent / "workspace.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    uri = manifest.get("folder") if isinstance(manifest, dict) else None
    return file_uri_path(uri) if isinstance(uri, str) else None


def _settled(request: dict[str, Any]) -> bool:
    """Whether VS Code finished answering the request: it has its ``result``, its
    ``modelState`` (newer versions) is complete, cancelled or failed, or it was cancelled
    (``isCanceled``, older versions)."""
    state = field_of(request, "modelState").get("value")
    cancelled = request.get("isCanceled") is True  # before modelState (versions 1-3)
    return isinstance(request.get("result"), dict) or state in _FINAL_STATES or cancelled


def _request(
    ref: str, request: dict[str, Any], answered: bool, skipped: Counter[str]
) -> list[Item]:
    time = from_millis(request.get("timestamp"))
    items: list[Item] = []
    text = field_of(request, "message").get("text")
    if isinstance(text, str) and text.strip():
        items.append(Item(f"{ref}-prompt", "message/user", "user", {"text": cut(text)},
                          "request", time))  # fmt: skip
    response = request.get("response")
    for index, part in enumerate(response if isinstance(response, list) else []):
        if not isinstance(part, dict):
            skipped["response:not-an-object"] += 1
            continue
        items.extend(_response_part(f"{ref}-{index}", part, items, time, skipped))
    for item in items:  # an answer still streaming waits, with what follows it
        item.complete = answered or (item.complete and item.type == "message/user")
    return items


def _markdown(part: dict[str, Any]) -> str | None:
    """The text of a markdown part: a bare markdown string ``{value}`` (how VS Code
    stores ``markdownContent``), or ``{kind, content: {value}}``."""
    value = part.get("value")
    if "kind" in part and part["kind"] is not None:
        value = field_of(part, "content").get("value")
    return value if isinstance(value, str) else None


def _response_part(
    ref: str, part: dict[str, Any], before: list[Item], time: str | None, skipped: Counter[str]
) -> list[Item]:
    kind = part.get("kind")
    if kind in _MARKDOWN or kind == "inlineReference":
        value = _markdown(part) if kind != "inlineReference" else _reference(part)
        if value is None:
            skipped[f"response:{kind}:no-text"] += 1
            return []
        if before and before[-1].type == "message/assistant" and "text" in before[-1].payload:
            before[-1].payload["text"] = cut(before[-1].payload["text"] + value)
            return []
        if not value.strip():
            return []  # an empty piece VS Code keeps as a separator
        return [Item(ref, "message/assistant", "assistant", {"text": value}, "markdown", time)]
    if kind == "thinking":
        value = part.get("value")
        thought = (
            "".join(v for v in value if isinstance(v, str)) if isinstance(value, list) else value
        )
        if not isinstance(thought, str) or not thought.strip():
            skipped["response:thinking:empty"] += 1  # VS Code's separator between thoughts
            return []
        payload = {"thinking": cut(thought)}
        return [Item(ref, "message/assistant", "assistant", payload, "thinking", time)]
    if kind == "toolInvocationSerialized":
        return _tool(ref, part, time)
    if kind in _EDITS:
        # Edit mode (and edit tools) write the edits of a file as an edit group, with no
        # tool invocation of their own: the file edited is the call, its edits the result.
        uri = field_of(part, "uri")
        target = uri.get("path") or uri.get("fsPath") or uri.get("external")
        edits = part.get("edits")
        count = len(edits) if isinstance(edits, list) else 0
        call = {"tool": kind, "input": {"path": target}}
        result = {"output": f"{count} edit(s) to {target}"}
        return [
            Item(f"{ref}-call", "tool/call", "assistant", call, str(kind), time, call=ref),
            Item(f"{ref}-result", "tool/result", "tool", result, str(kind), time, result_of=ref),
        ]  # fmt: skip
    skipped[f"response:{kind}"] += 1
    return []


def _tool(ref: str, part: dict[str, Any], time: str | None) -> list[Item]:
    call_id = str(part.get("toolCallId") or ref)
    specific = field_of(part, "toolSpecificData")
    call = {"tool": part.get("toolId"), "input": _arguments(part, specific)}
    details = part.get("resultDetails")
    terminal = field_of(specific, "terminalCommandOutput").get("text")
    output = [_message_text(part.get("pastTenseMessage")), _details(details),
              terminal if isinstance(terminal, str) else "",
              specific.get("result") if specific.get("kind") == "subagent" else ""]  # fmt: skip
    result: dict[str, Any] = {
        "output": cut("\n".join(t for t in output if isinstance(t, str) and t))
    }
    exit_code = field_of(specific, "terminalCommandState").get("exitCode")
    failed = isinstance(details, dict) and details.get("isError") is True
    if failed or (isinstance(exit_code, int) and exit_code != 0):
        result["is_error"] = True
    return [
        Item(f"{ref}-call", "tool/call", "assistant", call, "toolInvocationSerialized", time,
             call=call_id),
        Item(f"{ref}-result", "tool/result", "tool", result, "toolInvocationSerialized", time,
             complete=part.get("isComplete") is not False, result_of=call_id),
    ]  # fmt: skip


def _arguments(part: dict[str, Any], specific: dict[str, Any]) -> object:
    """What the tool was called with: a terminal's command line, a tool's raw input, else
    the tool-specific data or the invocation message."""
    if specific.get("kind") == "terminal":
        line = field_of(specific, "commandLine")
        command = (line.get("userEdited") or line.get("toolEdited") or line.get("original")
                   or specific.get("command"))  # fmt: skip
        return {"command": command} if isinstance(command, str) else specific
    if specific.get("kind") == "input" and "rawInput" in specific:
        return specific["rawInput"]
    return specific or part.get("toolSpecificData") or _message_text(part.get("invocationMessage"))


def _details(details: object) -> str:
    """A tool's ``resultDetails``: its input and output (``output`` parts with ``value``),
    or the files it touched (a list of URIs), as text."""
    if isinstance(details, dict) and isinstance(details.get("output"), list):
        values = [o.get("value") for o in details["output"] if isinstance(o, dict)]
        return cut("\n".join(v for v in values if isinstance(v, str)))
    if isinstance(details, list):
        paths = [d.get("path") or d.get("uri", {}).get("path") for d in details
                 if isinstance(d, dict)]  # fmt: skip
        return "\n".join(p for p in paths if isinstance(p, str))
    return as_text(details) if details else ""


def _reference(part: dict[str, Any]) -> str | None:
    """An inline reference in the answer's text, as VS Code's own copy of the answer shows
    it: its name, else the file's name, as code."""
    reference = field_of(part, "inlineReference")
    name = part.get("name") or reference.get("name")
    if not isinstance(name, str):
        where = field_of(reference, "uri") or reference
        path = where.get("path")
        name = path.rstrip("/").rsplit("/", 1)[-1] if isinstance(path, str) else None
    return f"`{name}`" if name else None


def _message_text(value: object) -> str:
    """An invocation message: a string, or ``{"value": markdown}``."""
    if isinstance(value, dict):
        value = value.get("value")
    return value if isinstance(value, str) else ""
