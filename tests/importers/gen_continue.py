"""Generated Continue CLI sessions: ``~/.continue/sessions/<id>.json`` as ``cn`` 1.5.47
saves them (``historyManager.save``: indented JSON; history items built by
``ChatHistoryService``/``handleToolCalls``; a compaction's summary item) and the
``sessions.json`` index beside them; the text is our own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

MAIN: Final = "0b7e3c1a-5d2f-4e8a-9c6b-1f2e3d4c5b6a"
COMPACTED: Final = "9d8c7b6a-5f4e-4d3c-8b2a-1e0f9a8b7c6d"
CWD: Final = "/home/dev/orders"
CREATED_MS: Final = 1_764_000_000_000


def user(text: str, context: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    # saveSession copies a user message's content into editorState.
    return {"message": {"role": "user", "content": text}, "contextItems": context or [],
            "editorState": text}  # fmt: skip


def file_context(path: str, content: str) -> dict[str, Any]:
    return {"id": {"providerTitle": "file", "itemId": "4a1e"}, "content": content,
            "name": Path(path).name, "description": path,
            "uri": {"type": "file", "value": f"file://{path}"}}  # fmt: skip


def tool_state(call: str, name: str, args: dict[str, Any], status: str,
               output: str | None = None) -> dict[str, Any]:  # fmt: skip
    state: dict[str, Any] = {
        "toolCallId": call,
        "toolCall": {"id": call, "type": "function",
                     "function": {"name": name, "arguments": orjson.dumps(args).decode()}},
        "status": status,
        "parsedArgs": args,
    }  # fmt: skip
    if output is not None:  # addToolResult
        state["output"] = [{"content": output, "name": "Tool Result",
                            "description": "Tool execution result"}]  # fmt: skip
    return state


def assistant(text: str, *states: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    item: dict[str, Any] = {"message": message, "contextItems": []}
    if states:
        message["toolCalls"] = [s["toolCall"] for s in states]
        item["toolCallStates"] = list(states)
    return item


def main_history(*, running: bool = False) -> list[dict[str, Any]]:
    """The main session; ``running``: it stops while the terminal command runs."""
    agent_output = "Only the orders handler paginates nothing.\n<task_metadata>\nstatus: completed\n</task_metadata>"  # noqa: E501
    history = [
        user("Add pagination to the /orders endpoint",
             [file_context("/home/dev/orders/api/orders.py", "def list_orders(): ...")]),
        assistant("Looking at the handler first.",
                  tool_state("call_read_1", "Read", {"filepath": "api/orders.py"}, "done",
                             "def list_orders():\n    return db.all()")),
        assistant("", tool_state("call_sub_1", "Subagent",
                                 {"subagent_name": "explorer", "prompt": "Find other lists"},
                                 "done", agent_output)),
        assistant("", tool_state("call_bash_1", "Bash", {"command": "pytest -q"},
                                 "calling" if running else "errored",
                                 None if running else "Error executing tool Bash: exit 1")),
    ]  # fmt: skip
    if running:
        return history
    return [
        *history,
        {"message": {"role": "user", "content": [
            {"type": "text", "text": "This is the error page"},
            {"type": "imageUrl", "imageUrl": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]}, "contextItems": []},
        assistant("Done: /orders takes limit and offset now."),
    ]  # fmt: skip


def compacted_history(*, more: bool = True) -> list[dict[str, Any]]:
    """A session after /compact: the summary item, then what followed."""
    summary = "The user is adding a CSV export; writer.py has the draft."
    history = [
        {"message": {"role": "assistant", "content": summary}, "contextItems": [],
         "conversationSummary": summary},
        user("Go on with the export"),
    ]  # fmt: skip
    return [*history, assistant("The export writes a header row now.")] if more else history


def write_session(
    folder: Path, session_id: str, title: str, cwd: str, history: list[dict[str, Any]]
) -> Path:
    """The session file and its line in ``sessions.json`` (as ``save`` writes both)."""
    folder.mkdir(parents=True, exist_ok=True)
    usage = {"totalCost": 0.01, "promptTokens": 900, "completionTokens": 80}
    document = {"sessionId": session_id, "title": title, "workspaceDirectory": cwd,
                "history": history, "mode": "normal", "usage": usage}  # fmt: skip
    path = folder / f"{session_id}.json"
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    index = folder / "sessions.json"
    listed = orjson.loads(index.read_bytes()) if index.exists() else []
    count = sum(h["message"]["role"] == "assistant" for h in history)
    known = [entry for entry in listed if entry["sessionId"] == session_id]
    if known:  # save updates the title, workspace and count; dateCreated stays
        known[0] |= {"title": title, "workspaceDirectory": cwd, "messageCount": count}
    else:
        listed.append({"sessionId": session_id, "title": title,
                       "dateCreated": str(CREATED_MS + 60_000 * len(listed)),
                       "workspaceDirectory": cwd, "messageCount": count})  # fmt: skip
    index.write_bytes(orjson.dumps(listed, option=orjson.OPT_INDENT_2))
    return path


def write(home: Path) -> Path:
    """A home with two sessions (one compacted, its workspace a ``file://`` URI as the IDE
    extensions write it); returns the sessions folder."""
    folder = home / ".continue" / "sessions"
    write_session(folder, MAIN, "Orders pagination", CWD, main_history())
    write_session(folder, COMPACTED, "Untitled Session", "file:///home/dev/shop%20app",
                  compacted_history())  # fmt: skip
    return folder


# One history item of each message role and content part type Continue CLI 1.5.47 saves
# (its ChatMessage union, MessagePart types: skips.WRITER_KINDS), made-up content.
EVERY_KIND: Final = "4c3b2a19-0f8e-4d7c-9b6a-5e4d3c2b1a0f"
UNANSWERED: Final = "call_tool_message"


def every_writer_kind() -> list[dict[str, Any]]:
    image = {"type": "imageUrl", "imageUrl": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    return [
        {"message": {"role": "system", "content": "You are Continue."}, "contextItems": []},
        {"message": {"role": "user", "content": [{"type": "text", "text": "Why 500s?"}, image]},
         "contextItems": [file_context(f"{CWD}/orders.py", "def get(): ...")]},
        assistant("Reading it.", tool_state("call_1", "read_file", {"filepath": "orders.py"},
                                            "done", output="def get(): ...")),
        {"message": {"role": "tool", "content": "def get(): ...", "toolCallId": "call_1"},
         "contextItems": []},
        {"message": {"role": "assistant", "content": "",
                     "toolCalls": [{"id": UNANSWERED, "type": "function",
                                    "function": {"name": "ls", "arguments": "{}"}}]},
         "contextItems": []},
        {"message": {"role": "tool", "content": "orders.py", "toolCallId": UNANSWERED},
         "contextItems": []},
    ]  # fmt: skip


def write_every_writer_kind(home: Path) -> Path:
    return write_session(home / ".continue" / "sessions", EVERY_KIND, "Orders 500s", CWD,
                         every_writer_kind())  # fmt: skip
