"""VS Code Copilot Chat: ``workspaceStorage/<hash>/chatSessions/<id>.json`` or ``.jsonl``.

Studied: the chat session files VS Code writes (2024-2026; ``version`` 1 to 3: one JSON
document per session), the newer operation log (JSON Lines: ``kind`` 0 the initial
state, 1 set a value at the path ``k``, 2 push ``v`` onto the list at ``k`` (at ``i`` when
given), 3 delete ``k``), and public readers of both. The format changes often: a version
this module was not written against is refused as a whole with a precise problem, never
half-imported.

- the session (``vscode-<sessionId>``) starts at ``creationDate``; its cwd is the folder
  ``workspace.json`` (beside ``chatSessions``) names; a chat of an empty window has none
  (the no-cwd workspace); ``customTitle`` titles it;
- each of ``requests``: ``message.text`` as ``message/user``; its ``response`` items in
  order: markdown (no ``kind``, or ``markdownContent``) as ``message/assistant`` (adjacent
  pieces joined), ``thinking`` as assistant thinking, ``toolInvocationSerialized`` as a
  ``tool/call`` (``toolId``, its ``toolSpecificData`` or invocation message) and its
  ``tool/result`` (the past-tense message and ``resultDetails``) citing it;
- a request without its ``result`` is still being answered: it waits for a later look;
- skipped and counted: references, code-block URIs, edit groups, undo stops, progress
  and confirmation items and other kinds. Copilot Chat keeps no compaction and no
  sub-agent session of its own in these files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

import orjson

from worker.importers.base import Problem, as_text, cut, safe_id
from worker.importers.plugin import UnreadableSource
from worker.importers.snapshot import Item, Snapshot, SourceSession, field_of, from_millis

VERSIONS: Final = frozenset({1, 2, 3})
_SKIPPED: Final = frozenset({
    "inlineReference", "codeblockUri", "textEditGroup", "undoStop", "prepareToolInvocation",
    "progressMessage", "confirmation", "warning", "command",
})  # fmt: skip


class Refused(UnreadableSource):
    """A file this module cannot read as a whole (an unknown version, a broken log): its
    reason becomes the file's one problem line, and nothing of it is imported."""


def read_chat(path: Path) -> Snapshot:
    snapshot = Snapshot()
    try:
        state = _replay(path) if path.suffix == ".jsonl" else _document(path)
        version = state.get("version")
        if version not in VERSIONS:
            known = ", ".join(map(str, sorted(VERSIONS)))
            raise Refused(f"chat session format version {version!r} is not one this importer"
                          f" reads ({known}); not imported")  # fmt: skip
    except (OSError, Refused) as exc:
        snapshot.problems.append(Problem(str(path), 0, str(exc)))
        return snapshot
    title = state.get("customTitle")
    session = SourceSession(
        session_id=safe_id(str(state.get("sessionId") or path.stem), prefix="vscode-"),
        cwd=_workspace_folder(path),
        time=from_millis(state.get("creationDate")),
        title=title if isinstance(title, str) else None,
    )
    requests = state.get("requests")
    for index, request in enumerate(requests if isinstance(requests, list) else []):
        if isinstance(request, dict):
            ref = str(request.get("requestId") or index)
            session.items.extend(_request(ref, request, session.skipped))
    snapshot.sessions.append(session)
    return snapshot


def _document(path: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise Refused(f"not a whole JSON document: {exc}") from exc
    if not isinstance(value, dict):
        raise Refused("not a chat session (not a JSON object)")
    return value


def _replay(path: Path) -> dict[str, Any]:
    """The session an operation log builds, line by line. A line that does not apply
    (an unknown operation, a path that is not there) refuses the file: what it built
    would not be the session VS Code shows."""
    state: Any = None
    with path.open("rb") as fh:
        lines = fh.read().split(b"\n")
    complete = lines[:-1] if lines and lines[-1].strip() else lines  # the last may be mid-write
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            op = orjson.loads(raw)
            kind, keys, value = op["kind"], op.get("k") or [], op.get("v")
            if kind == 0:
                state = value
            elif kind in (1, 2, 3):
                *parents, last = keys
                target = state
                for key in parents:
                    target = target[key]
                if kind == 1:
                    target[last] = value
                elif kind == 2:
                    at = op.get("i")
                    items = target[last]
                    items[len(items) if at is None else at :] = value
                else:
                    del target[last]
            else:
                raise Refused(f"line {number}: unknown operation kind {kind!r}; not imported")
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise Refused(f"line {number}: cannot apply ({type(exc).__name__});"
                          " not imported") from exc  # fmt: skip
    if not isinstance(state, dict):
        raise Refused("no initial state (kind 0); not imported")
    return state


def _workspace_folder(path: Path) -> str | None:
    """The folder of the workspace the chat belongs to (``workspace.json``'s file URI)."""
    try:
        manifest = orjson.loads((path.parent.parent / "workspace.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    uri = manifest.get("folder") if isinstance(manifest, dict) else None
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return None
    return unquote(urlparse(uri).path) or None


def _request(ref: str, request: dict[str, Any], skipped: Counter[str]) -> list[Item]:
    time = from_millis(request.get("timestamp"))
    answered = isinstance(request.get("result"), dict)
    items: list[Item] = []
    text = field_of(request, "message").get("text")
    if isinstance(text, str) and text.strip():
        items.append(Item(f"{ref}-prompt", "message/user", "user", {"text": cut(text)},
                          "request", time))  # fmt: skip
    response = request.get("response")
    for index, part in enumerate(response if isinstance(response, list) else []):
        kind = part.get("kind") if isinstance(part, dict) else None
        if not isinstance(part, dict) or kind in _SKIPPED:
            skipped[f"response:{kind}"] += 1
            continue
        items.extend(_response_part(f"{ref}-{index}", part, items, time, skipped))
    for item in items:  # an answer still streaming waits, with what follows it
        item.complete = item.complete and (answered or item.type == "message/user")
    return items


def _response_part(
    ref: str, part: dict[str, Any], before: list[Item], time: str | None, skipped: Counter[str]
) -> list[Item]:
    kind = part.get("kind")
    if kind in (None, "markdownContent"):
        value = part.get("value") if kind is None else field_of(part, "content").get("value")
        if not isinstance(value, str):
            skipped[f"response:{kind}:no-text"] += 1
            return []
        if before and before[-1].type == "message/assistant" and "text" in before[-1].payload:
            before[-1].payload["text"] = cut(before[-1].payload["text"] + value)
            return []
        return [Item(ref, "message/assistant", "assistant", {"text": value}, "markdown", time)]
    if kind == "thinking" and isinstance(part.get("value"), str):
        payload = {"thinking": cut(part["value"])}
        return [Item(ref, "message/assistant", "assistant", payload, "thinking", time)]
    if kind == "toolInvocationSerialized":
        call_id = str(part.get("toolCallId") or ref)
        arguments = part.get("toolSpecificData") or _message_text(part.get("invocationMessage"))
        call = {"tool": part.get("toolId"), "input": arguments}
        output = [_message_text(part.get("pastTenseMessage")), as_text(part.get("resultDetails"))]
        result = {"output": "\n".join(text for text in output if text)}
        return [
            Item(f"{ref}-call", "tool/call", "assistant", call, kind, time, call=call_id),
            Item(f"{ref}-result", "tool/result", "tool", result, kind, time,
                 complete=part.get("isComplete") is not False, result_of=call_id),
        ]  # fmt: skip
    skipped[f"response:{kind}"] += 1
    return []


def _message_text(value: object) -> str:
    """An invocation message: a string, or ``{"value": markdown}``."""
    if isinstance(value, dict):
        value = value.get("value")
    return value if isinstance(value, str) else ""
