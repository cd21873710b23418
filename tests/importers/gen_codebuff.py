"""A generated Codebuff history (``~/.config/manicode/projects``), made-up content.

The shapes follow the Codebuff CLI's writer in CodebuffAI/codebuff (``cli/src/types/chat.ts``
``ChatMessage`` and its blocks, ``cli/src/utils/run-state-storage.ts`` writing
``chat-messages.json`` and ``run-state.json`` into ``chats/<chat id>/``,
``cli/src/project-files.ts`` naming the chat by its start time, ``message-history.ts``'s
``user-<ms>`` ids): a mode divider, a prompt with a file attachment, reasoning, a tool with
its output, a sub-agent (``agent`` block with its own blocks) that failed, an ``ask-user``
question answered, an error message, and a chat whose run state is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

PROJECT: Final = "orchard"
CWD: Final = "/home/dev/orchard"
CHAT: Final = "2026-11-03T10-15-00.000Z"
OLD_CHAT: Final = "2026-10-20T08-00-00.000Z"
MAIN: Final = "codebuff-2026-11-03T10-15-00-000Z"
CHILD: Final = f"{MAIN}-agent-file-picker-1"
OLD: Final = "codebuff-2026-10-20T08-00-00-000Z"
START_MS: Final = 1793700900000  # 2026-11-03T10:15:00Z
EVENTS: Final = {MAIN: 12, CHILD: 4, OLD: 3}
SKIPPED: Final = {"block:mode-divider": 1, "block:gate-state": 1}


def _id(prefix: str, seconds: int) -> str:
    return f"{prefix}-{START_MS + seconds * 1000}"


def messages() -> list[dict[str, Any]]:
    return [
        {"id": _id("divider", 0), "variant": "ai", "content": "", "timestamp": "10:15 AM",
         "blocks": [{"type": "mode-divider", "mode": "DEFAULT"}]},
        {"id": _id("user", 1), "variant": "user", "content": "why do apples rot in bin 3?",
         "timestamp": "10:15 AM",
         "fileAttachments": [{"path": "bins/bin3.py", "filename": "bin3.py",
                              "isDirectory": False}]},
        {"id": _id("ai", 2), "variant": "ai", "content": "", "timestamp": "10:15 AM",
         "isComplete": True, "credits": 12,
         "blocks": [
             {"type": "text", "content": "Humidity may be the cause.", "textType": "reasoning",
              "thinkingId": "t1", "isCollapsed": True},
             {"type": "text", "content": "Let me read the sensor log."},
             {"type": "tool", "toolCallId": "tc-read", "toolName": "read_files",
              "input": {"paths": ["logs/bin3.csv"]}, "output": "humidity,96"},
             {"type": "agent", "agentId": "file-picker-1", "agentName": "File Picker",
              "agentType": "file-picker", "status": "failed",
              "content": "Could not list the archive folder.",
              "initialPrompt": "Find the ventilation config.", "spawnToolCallId": "tc-spawn",
              "spawnIndex": 0,
              "blocks": [
                  {"type": "tool", "toolCallId": "tc-find", "toolName": "find_files",
                   "input": {"prompt": "ventilation"}, "output": "bins/vent.toml"},
              ]},
             {"type": "gate-state", "gate": "review", "gateStatus": "passed"},
             {"type": "ask-user", "toolCallId": "tc-ask",
              "questions": [{"question": "Raise the fan speed?",
                             "options": [{"label": "yes"}, {"label": "no"}]}],
              "answers": [{"questionIndex": 0, "selectedOption": "yes"}]},
             {"type": "text", "content": "Bin 3 sits at 96% humidity; I raised the fan speed."},
         ]},
        {"id": _id("error", 3), "variant": "error", "content": "Network timeout, retrying",
         "timestamp": "10:16 AM"},
    ]  # fmt: skip


def old_messages() -> list[dict[str, Any]]:
    return [
        {"id": "user-1792483200000", "variant": "user", "content": "list the orchard rows",
         "timestamp": "8:00 AM"},
        {"id": "ai-1792483205000", "variant": "ai", "content": "Rows A to F.",
         "timestamp": "8:00 AM"},
    ]  # fmt: skip


def run_state() -> dict[str, Any]:
    return {
        "sessionState": {
            "fileContext": {"projectRoot": CWD, "cwd": CWD, "fileTree": []},
            "mainAgentState": {"agentId": "main", "messageHistory": [], "stepsRemaining": 20},
        },
        "output": {"type": "lastMessage", "value": []},
    }


def write_chat(projects: Path, chat: str, listed: list[dict[str, Any]], *, state: bool) -> Path:
    folder = projects / PROJECT / "chats" / chat
    folder.mkdir(parents=True)
    if state:
        (folder / "run-state.json").write_bytes(
            orjson.dumps(run_state(), option=orjson.OPT_INDENT_2)
        )
    file = folder / "chat-messages.json"
    file.write_bytes(orjson.dumps(listed, option=orjson.OPT_INDENT_2))
    return file


def write(home: Path) -> Path:
    """The history under ``home/.config/manicode/projects``; returns that folder."""
    projects = home / ".config" / "manicode" / "projects"
    write_chat(projects, CHAT, messages(), state=True)
    write_chat(projects, OLD_CHAT, old_messages(), state=False)
    return projects
