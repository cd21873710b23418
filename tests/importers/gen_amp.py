"""A generated Amp history (``~/.local/share/amp/threads``), made-up content.

The shapes follow the thread store and reducer bundled in ``@sourcegraph/amp``
0.0.1767830505 and 0.0.1774569934: one pretty-printed ``T-<id>.json`` per thread with
``v``, ``id``, ``created``, ``messages`` (``messageId``, ``content`` blocks, the user's
``meta.sentAt``, the assistant's ``state``), ``env.initial.trees``, ``title``,
``agentMode``; a Task tool
whose run names the sub-agent's thread (``progress.threadID``), the sub-agent's thread
naming its caller (``mainThreadID``), a handoff thread linked by ``relationships``, a tool
error, an ``info`` summary, a ``$`` shell command and an image; and a thread of
0.0.1774569934 whose Task runs its sub-agent inside the call (the turns in ``progress``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/tide tables"
MAIN: Final = "T-5b1f0c7e-3a9d-4e21-8f6a-2c4d6e8fa001"
SUB: Final = "T-5b1f0c7e-3a9d-4e21-8f6a-2c4d6e8fa002"
HANDOFF: Final = "T-5b1f0c7e-3a9d-4e21-8f6a-2c4d6e8fa003"
TITLE: Final = "Tide table parser"
SUB_TITLE: Final = "Find the station list"
T0: Final = 1_764_000_000_000  # milliseconds
TASK_CALL: Final = "toolu_01TaskStations"
LATER: Final = "T-5b1f0c7e-3a9d-4e21-8f6a-2c4d6e8fa004"
LATER_TASK: Final = "toolu_01TaskGauges"
LATER_TASK_TITLE: Final = "List the gauges"


def _user(n: int, *content: dict[str, Any], minute: int, **more: Any) -> dict[str, Any]:
    return {"role": "user", "messageId": n, "content": list(content),
            "meta": {"sentAt": T0 + minute * 60_000}, "agentMode": "smart", **more}  # fmt: skip


def _assistant(n: int, *content: dict[str, Any], stop: str = "tool_use") -> dict[str, Any]:
    return {"role": "assistant", "messageId": n, "content": list(content),
            "state": {"type": "complete", "stopReason": stop},
            "usage": {"model": "claude-sonnet-4-5", "maxInputTokens": 168000,
                      "inputTokens": 12, "outputTokens": 40, "cacheCreationInputTokens": 0,
                      "cacheReadInputTokens": 0, "totalInputTokens": 12}}  # fmt: skip


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "complete": True, "id": call, "name": name, "input": args}


def tool_result(call: str, run: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_result", "toolUseID": call, "run": run}


def env(cwd: str | None) -> dict[str, Any]:
    trees = [] if cwd is None else [{
        "displayName": Path(cwd).name, "uri": Path(cwd).as_uri(),
        "repository": {"type": "git", "url": "https://example.com/dev/tides",
                       "ref": "refs/heads/main", "sha": "0" * 40},
    }]  # fmt: skip
    platform = {"os": "linux", "cpuArchitecture": "x64", "client": "CLI"}
    return {"initial": {"trees": trees, "platform": platform, "tags": ["model:claude"]}}


def main_messages() -> list[dict[str, Any]]:
    image = {"type": "image", "source": {"type": "base64", "mediaType": "image/png",
                                         "data": "iVBORw0KGgo="}}  # fmt: skip
    # fmt: off
    return [
        _user(0, text("Parse the harbour tide tables into JSON"), image, minute=0),
        _assistant(1,
            {"type": "thinking", "thinking": "Look at the raw file first.", "signature": "s1",
             "provider": "anthropic"},
            text("I will look at the raw table."),
            tool_use("toolu_01Head", "Bash", {"cmd": "head tides.txt"}),
        ),
        _user(2, tool_result("toolu_01Head", {
            "status": "done", "result": {"output": "HW 06:12 4.1m\nLW 12:30 0.8m", "exitCode": 0},
        }), minute=1),
        _assistant(3, tool_use(TASK_CALL, "Task", {
            "prompt": "List the stations named in stations.csv", "description": SUB_TITLE,
        })),
        _user(4, tool_result(TASK_CALL, {
            "status": "done", "progress": {"threadID": SUB},
            "result": "Three stations: Dover, Harwich, Ramsgate",
            "~debug": {"threadID": SUB, "inferences": []},
        }), minute=3),
        _assistant(5, tool_use("toolu_01Edit", "edit_file", {
            "path": "parse.py", "old_str": "pass", "new_str": "return rows",
        })),
        _user(6, tool_result("toolu_01Edit", {
            "status": "error", "error": {"message": "old_str not found in parse.py"},
        }), minute=4),
        {"role": "info", "messageId": 7, "content": [{"type": "summary", "summary": {
            "type": "message", "summary": "Parsed the tide table header; editing parse.py.",
        }}]},
        _user(8, text("Now add the low water heights"), minute=10),
        _assistant(9, text("Low water heights are parsed as metres."), stop="end_turn"),
        {"role": "info", "messageId": 10, "content": [{
            "type": "manual_bash_invocation", "args": {"cmd": "wc -l tides.txt", "cwd": CWD},
            "toolRun": {"status": "done", "result": {"output": "730 tides.txt", "exitCode": 0}},
            "hidden": False,
        }]},
    ]
    # fmt: on


def main_thread(upto: int | None = None) -> dict[str, Any]:
    messages = main_messages()[:upto]
    return {"v": 41, "id": MAIN, "created": T0, "messages": messages, "agentMode": "smart",
            "nextMessageId": len(messages), "env": env(CWD), "title": TITLE,
            "relationships": [{"threadID": HANDOFF, "type": "handoff", "role": "parent",
                               "messageIndex": 9, "createdAt": T0 + 720_000}]}  # fmt: skip


def sub_thread() -> dict[str, Any]:
    messages = [
        _user(0, text("List the stations named in stations.csv"), minute=2),
        _assistant(1, text("Three stations: Dover, Harwich, Ramsgate"), stop="end_turn"),
    ]
    return {"v": 7, "id": SUB, "created": T0 + 120_000, "messages": messages,
            "agentMode": "smart", "nextMessageId": 2, "env": env(CWD), "title": SUB_TITLE,
            "mainThreadID": MAIN}  # fmt: skip


def handoff_thread() -> dict[str, Any]:
    """A handoff started in execute mode: no workspace tree, so no cwd."""
    messages = [
        _user(0, text("Continue: export the parsed tides as CSV"), minute=12),
        _assistant(1, text("Exported tides.csv with 730 rows."), stop="end_turn"),
    ]
    return {"v": 5, "id": HANDOFF, "created": T0 + 720_000, "messages": messages,
            "agentMode": "smart", "nextMessageId": 2, "env": env(None),
            "relationships": [{"threadID": MAIN, "type": "handoff", "role": "child",
                               "messageIndex": 9, "createdAt": T0 + 720_000,
                               "comment": "export"}]}  # fmt: skip


def later_thread(*, running: bool = False) -> dict[str, Any]:
    """A thread of a later version (0.0.1774569934): the Task's sub-agent runs inside the
    call, its turns kept in the run's ``progress``."""
    turns = [
        {"message": "Reading the gauge list.", "tool_uses": [
            {"id": "toolu_01Gauges", "tool_name": "Read", "status": "done",
             "input": {"path": "gauges.csv"}, "result": "Dover,Harwich"}]},
        {"message": "Two gauges: Dover and Harwich.", "tool_uses": []},
    ]  # fmt: skip
    run: dict[str, Any] = {"status": "done", "result": "Two gauges: Dover and Harwich.",
                           "progress": turns, "~debug": {"inferences": []}}  # fmt: skip
    if running:
        run = {"status": "in-progress", "progress": turns[:1]}
    messages = [
        _user(0, text("Which tide gauges do we read?"), minute=20),
        _assistant(1, tool_use(LATER_TASK, "Task", {
            "prompt": "List the gauges in gauges.csv", "description": LATER_TASK_TITLE})),
        _user(2, tool_result(LATER_TASK, run), minute=21),
    ]  # fmt: skip
    return {"v": 9, "id": LATER, "created": T0 + 1_200_000, "messages": messages,
            "agentMode": "smart", "nextMessageId": 3, "env": env(CWD),
            "title": "Gauges"}  # fmt: skip


def write_thread(folder: Path, thread: dict[str, Any]) -> Path:
    """As Amp writes it: pretty JSON to ``.amptmp``, renamed over the thread's file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{thread['id']}.json"
    temporary = path.with_name(path.name + ".amptmp")
    temporary.write_bytes(orjson.dumps(thread, option=orjson.OPT_INDENT_2))
    temporary.replace(path)
    return path


def write(home: Path, *, upto: int | None = None) -> Path:
    """The threads folder under ``home`` (``upto``: the main thread's first messages)."""
    folder = home / ".local" / "share" / "amp" / "threads"
    for thread in (main_thread(upto), sub_thread(), handoff_thread(), later_thread()):
        write_thread(folder, thread)
    return folder
