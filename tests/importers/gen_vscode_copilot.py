"""Generated VS Code Copilot Chat sessions: ``workspaceStorage/<hash>/chatSessions/``.

A version 3 JSON document per session, and the newer operation log (JSON Lines of
``kind`` 0 initial state, 1 set, 2 push, 3 delete, at the key path ``k``); the shapes
follow the studied files, the text is our own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

DOCUMENT: Final = "7d1e2f30-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
LOG: Final = "8e2f3041-5b6c-4d7e-9fa0-1b2c3d4e5f60"
WRITER_LOG: Final = "a0415263-7d8e-4f90-b1c2-3d4e5f607182"
WRITER_DOCUMENT: Final = "b1526374-8e9f-4a01-c2d3-4e5f60718293"
EMPTY_WINDOW: Final = "9f304152-6c7d-4e8f-a0b1-2c3d4e5f6071"
CWD: Final = "/home/dev/site"
T0: Final = 1_764_000_000_000


def tool(call: str, tool_id: str, command: str | None, done: str) -> dict[str, Any]:
    part: dict[str, Any] = {
        "kind": "toolInvocationSerialized", "toolId": tool_id, "toolCallId": call,
        "invocationMessage": {"value": f"Running {tool_id}"},
        "pastTenseMessage": {"value": done}, "isConfirmed": True, "isComplete": True,
    }  # fmt: skip
    if command:
        part["toolSpecificData"] = {"kind": "terminal", "command": command}
    return part


def request(
    n: int, text: str, response: list[dict[str, Any]], *, done: bool = True
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "requestId": f"request_{n}", "message": {"text": text, "parts": []},
        "variableData": {"variables": []}, "response": response,
        "timestamp": T0 + n * 60_000, "modelId": "copilot/model",
    }  # fmt: skip
    if done:
        body["result"] = {"timings": {"firstProgress": 500, "totalElapsed": 4000}}
    return body


def session(sid: str, requests: list[dict[str, Any]], *, version: int = 3,
            title: str | None = None) -> dict[str, Any]:  # fmt: skip
    body: dict[str, Any] = {
        "version": version, "sessionId": sid, "creationDate": T0, "lastMessageDate": T0,
        "requesterUsername": "dev", "responderUsername": "GitHub Copilot",
        "initialLocation": "panel", "requests": requests,
    }  # fmt: skip
    if title:
        body["customTitle"] = title
    return body


def document_requests() -> list[dict[str, Any]]:
    return [
        request(0, "Why is the hero image blurry on retina screens?", [
            {"value": "Let me look at "}, {"value": "the image markup."},
            tool("call_1", "copilot_readFile", None, "Read index.html"),
            {"value": "The markup in "},
            {"kind": "inlineReference", "inlineReference": {"path": "/index.html"}},
            {"value": " has no srcset for 2x screens."},
        ]),
        request(1, "Add one", [
            {"kind": "thinking", "value": "A 2x variant exists in assets."},
            tool("call_2", "run_in_terminal", "ls assets/hero*", "Ran ls"),
            {"kind": "markdownContent", "content": {"value": "Added srcset with hero@2x.jpg."}},
        ]),
    ]  # fmt: skip


def workspace(root: Path, name: str = "a1b2c3") -> Path:
    folder = root / "workspaceStorage" / name
    (folder / "chatSessions").mkdir(parents=True, exist_ok=True)
    (folder / "workspace.json").write_bytes(orjson.dumps({"folder": f"file://{CWD}"}))
    return folder / "chatSessions"


def write_document(root: Path) -> Path:
    path = workspace(root) / f"{DOCUMENT}.json"
    body = session(DOCUMENT, document_requests(), title="Retina hero image")
    path.write_bytes(orjson.dumps(body))
    return path


def log_lines() -> list[dict[str, Any]]:
    """A session written as an operation log: the request pushed unanswered, its answer
    pushed and its result set later, then a title."""
    first = request(0, "Minify the CSS in the build", [], done=False)
    return [
        {"kind": 0, "v": session(LOG, [])},
        {"kind": 2, "k": ["requests"], "v": [first]},
        {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "Use cssnano in postcss."}]},
        {"kind": 1, "k": ["requests", 0, "result"], "v": {"timings": {"totalElapsed": 900}}},
        {"kind": 1, "k": ["customTitle"], "v": "CSS minify"},
    ]  # fmt: skip


def write_log(root: Path, lines: list[dict[str, Any]] | None = None) -> Path:
    path = workspace(root) / f"{LOG}.jsonl"
    chosen = log_lines() if lines is None else lines
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in chosen))
    return path


def write_empty_window(root: Path) -> Path:
    folder = root / "globalStorage" / "emptyWindowChatSessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{EMPTY_WINDOW}.json"
    path.write_bytes(orjson.dumps(session(EMPTY_WINDOW, [request(0, "What is a CSS layer?", [
        {"value": "A cascade layer groups rules."}])])))  # fmt: skip
    return path


def write_future_version(root: Path) -> Path:
    path = workspace(root, "f00d") / "0a0a0a0a-0000-4000-8000-000000000000.json"
    path.write_bytes(orjson.dumps(session("future", document_requests(), version=9)))
    return path


# What VS Code's writer really produces (``chatSessionOperationLog.ts``, ``chatModel.ts``):
# markdown stored as a bare markdown string (no ``kind``), thinking as a list of chunks,
# a request's end told by ``modelState`` (0 pending, 1 complete, 2 cancelled) with no
# ``result``, parts rewritten from an index (``i``) when they change, an array cut
# without new items, a property deleted.


def md(text: str) -> dict[str, Any]:
    """A ``markdownContent`` part as VS Code stores it: the markdown string itself."""
    return {"value": text, "isTrusted": False, "supportThemeIcons": False, "supportHtml": False}


def writer_request(n: int, text: str) -> dict[str, Any]:
    return {
        "requestId": f"request_w{n}", "timestamp": T0 + n * 60_000,
        "message": {"text": text, "parts": [{"kind": "text", "text": text}]},
        "variableData": {"variables": []}, "response": [], "responseId": f"response_w{n}",
        "modelState": {"value": 0}, "modelId": "copilot/model",
    }  # fmt: skip


def writer_tool(*, done: bool) -> dict[str, Any]:
    part: dict[str, Any] = {
        "kind": "toolInvocationSerialized", "toolId": "copilot_readFile",
        "toolCallId": "call_w1", "invocationMessage": {"value": "Reading build.mjs"},
        "isConfirmed": {"type": 1}, "isComplete": done, "source": {"type": "internal"},
    }  # fmt: skip
    if done:
        part["pastTenseMessage"] = {"value": "Read build.mjs"}
    return part


def writer_log_lines() -> list[dict[str, Any]]:
    initial = session(WRITER_LOG, [])
    initial.update({"inputState": {"inputText": "", "attachments": []}, "pendingRequests": []})
    response, state = ["requests", 0, "response"], ["requests", 0, "modelState"]
    thought = {"kind": "thinking", "value": ["The build ", "uses esbuild."]}
    return [
        {"kind": 0, "v": initial},
        {"kind": 2, "k": ["requests"], "v": [writer_request(0, "Is the CSS minified?")]},
        {"kind": 2, "k": response, "v": [md("Checking ")]},
        {"kind": 2, "k": response, "i": 0, "v": [md("Checking the build script.")]},
        {"kind": 2, "k": response, "v": [thought]},
        {"kind": 2, "k": response, "v": [writer_tool(done=False)]},
        {"kind": 2, "k": response, "i": 2, "v": [writer_tool(done=True)]},
        {"kind": 2, "k": response, "v": [md("It is minified already."), md("Extra")]},
        {"kind": 2, "k": response, "i": 4},  # cut back (clearToPreviousToolInvocation)
        {"kind": 1, "k": state, "v": {"value": 1, "completedAt": T0 + 9000}},
        {"kind": 3, "k": ["inputState"]},
        {"kind": 2, "k": ["requests"], "v": [writer_request(1, "Rename the bundle")]},
        {"kind": 2, "k": ["requests", 1, "response"], "v": [md("Renamed it to app.min.css.")]},
        {"kind": 1, "k": ["requests", 1, "modelState"], "v": {"value": 2}},
    ]  # fmt: skip


def writer_document() -> dict[str, Any]:
    """A version 3 document (``ChatModel.toJSON``): the first request ended (its state
    complete) without a ``result``, the second has neither (cancelled in an older
    version), the last is unanswered; an edit-mode answer's edits as an edit group."""
    first = writer_request(0, "Make the header sticky")
    first["modelState"] = {"value": 1, "completedAt": T0 + 5000}
    first["response"] = [
        md("Adding position: sticky."),
        {"kind": "codeblockUri", "uri": {"scheme": "file", "path": "/home/dev/site/header.css"}},
        {"kind": "textEditGroup", "uri": {"scheme": "file", "path": "/home/dev/site/header.css"},
         "edits": [[{"text": "position: sticky;", "range": {}}]], "done": True},
    ]  # fmt: skip
    second = writer_request(1, "And the footer")
    del second["modelState"]
    terminal = {
        "kind": "toolInvocationSerialized", "toolId": "run_in_terminal", "toolCallId": "call_w2",
        "invocationMessage": {"value": "Running `npm test`"}, "isComplete": True,
        "pastTenseMessage": {"value": "Ran `npm test`"},
        "toolSpecificData": {
            "kind": "terminal", "language": "sh", "commandLine": {"original": "npm test"},
            "terminalCommandState": {"exitCode": 1, "duration": 900},
            "terminalCommandOutput": {"text": "1 failing: footer overlaps", "lineCount": 1},
        },
    }  # fmt: skip
    second["response"] = [terminal, md("The footer is sticky too.")]
    last = writer_request(2, "Check it on mobile")
    last["response"] = [md("Looking at the breakpoints")]
    return session(WRITER_DOCUMENT, [first, second, last])


def write_writer_log(root: Path, lines: list[dict[str, Any]] | None = None) -> Path:
    path = workspace(root) / f"{WRITER_LOG}.jsonl"
    chosen = writer_log_lines() if lines is None else lines
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in chosen))
    return path


def write_writer_document(root: Path) -> Path:
    path = workspace(root) / f"{WRITER_DOCUMENT}.json"
    path.write_bytes(orjson.dumps(writer_document()))
    return path
