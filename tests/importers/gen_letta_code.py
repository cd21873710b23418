"""A generated Letta Code local-backend history (``~/.letta/lc-local-backend``), made-up content.

The shapes follow Letta Code 0.32.18's writer (``letta.js`` of ``@letta-ai/letta-code``:
``createLocalTranscriptSessionHeader``, ``appendConversationSessionMessageEntry``,
``appendConversationSessionCompactionEntry``, ``appendToolResultMessage``,
``createLocalConversationRecord``, folders named by ``encodePathSegment`` of the
conversation key): a conversation with a title, a tool call and a failing result, a
compaction, and an agent's default conversation without a title.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/greenhouse"
AGENT: Final = "agent-local-7f3a"
KEY: Final = "conversation:local-conv-2"
DEFAULT_KEY: Final = f"default:{AGENT}"
MAIN: Final = "letta-conversation-local-conv-2"
DEFAULT: Final = f"letta-default-{AGENT}"
TITLE: Final = "Greenhouse vent schedule"
EVENTS: Final = {MAIN: 12, DEFAULT: 3}
SKIPPED: Final = {"record:model_change": 1}


def folder_name(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _time(minute: int) -> str:
    return f"2026-11-04T07:{minute:02d}:00.000Z"


def _meta(minute: int, conversation: str) -> dict[str, Any]:
    return {"created_at": _time(minute), "updated_at": _time(minute), "agent_id": AGENT,
            "conversation_id": conversation}  # fmt: skip


def _entry(n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": f"e{n:07d}", "parentId": f"e{n - 1:07d}" if n > 1 else None,
            "timestamp": _time(n), "message": message}  # fmt: skip


def _user(n: int, text: str, conversation: str, *before: str) -> dict[str, Any]:
    blocks = [{"type": "text", "text": t} for t in (*before, text)]
    return _entry(n, {"id": f"letta-msg-{n}", "role": "user", "content": blocks, "timestamp": 1,
                      "metadata": _meta(n, conversation)})  # fmt: skip


# What Letta Code writes before the first prompt of a conversation.
REMINDER: Final = (
    "<system-reminder>\nThis is an automated message providing context about the user's "
    "environment.\n</system-reminder>"
)


def _assistant(n: int, *blocks: dict[str, Any], conversation: str) -> dict[str, Any]:
    return _entry(n, {"id": f"letta-msg-{n}", "role": "assistant", "content": list(blocks),
                      "api": "openai-completions", "provider": "openai", "model": "gpt-5",
                      "stopReason": "toolUse", "timestamp": 2,
                      "metadata": _meta(n, conversation)})  # fmt: skip


def conversation() -> list[dict[str, Any]]:
    conv = "local-conv-2"
    return [
        {"type": "session", "version": 3, "id": conv, "timestamp": _time(0), "cwd": CWD},
        _user(1, "open the vents at 28 degrees, not 32", conv, REMINDER),
        _assistant(2, {"type": "thinking", "thinking": "The threshold lives in vents.yaml."},
                   {"type": "toolCall", "id": "call_vent", "name": "Read",
                    "arguments": {"file_path": "vents.yaml"}}, conversation=conv),
        _entry(3, {"id": "letta-msg-3", "role": "toolResult", "toolCallId": "call_vent",
                   "toolName": "Read", "isError": True,
                   "content": [{"type": "text", "text": "ENOENT: vents.yaml"}], "timestamp": 3,
                   "metadata": _meta(3, conv)}),
        _assistant(4, {"type": "text", "text": "vents.yaml is missing; the threshold is in "
                                               "config/vents.toml."}, conversation=conv),
        {"type": "compaction", "id": "e0000005", "parentId": "e0000004", "timestamp": _time(5),
         "summary": "Vent threshold to move from 32 to 28; config/vents.toml holds it.",
         "firstKeptEntryId": "e0000004", "tokensBefore": 61000,
         "message": {"id": "letta-msg-5", "role": "user",
                     "content": [{"type": "text", "text": "Summary of the conversation so far"}],
                     "timestamp": 5},
         "details": {"stats": {"context_tokens_before": 61000}}},
        _user(6, "go ahead", conv),
        _assistant(7, {"type": "text", "text": "Set open_at = 28 in config/vents.toml."},
                   conversation=conv),
        _entry(8, {"id": "letta-msg-8", "role": "custom", "content": "checkpoint saved",
                   "timestamp": 8}),
    ]  # fmt: skip


def default_conversation() -> list[dict[str, Any]]:
    return [
        {"type": "session", "version": 3, "id": "default", "timestamp": _time(30), "cwd": CWD},
        {"type": "model_change", "id": "e0000031", "parentId": None, "timestamp": _time(31),
         "provider": "openai", "modelId": "gpt-5"},
        _user(32, "what is the humidity target?", "default"),
        _assistant(33, {"type": "text", "text": "Seventy percent."}, conversation="default"),
    ]  # fmt: skip


def record(agent: str, conversation_id: str, summary: str | None) -> dict[str, Any]:
    return {"id": conversation_id, "agent_id": agent, "archived": False, "archived_at": None,
            "created_at": _time(0), "updated_at": _time(9), "last_message_at": _time(8),
            "summary": summary, "in_context_message_ids": []}  # fmt: skip


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_conversation(
    conversations: Path, key: str, entries: list[dict[str, Any]], conv: dict[str, Any]
) -> Path:
    folder = conversations / folder_name(key)
    folder.mkdir(parents=True)
    (folder / "conversation.json").write_bytes(orjson.dumps(conv, option=orjson.OPT_INDENT_2))
    (folder / "messages.jsonl").write_bytes(lines(entries))
    return folder / "messages.jsonl"


def write(home: Path) -> Path:
    """The history under ``home/.letta/lc-local-backend/conversations``; returns that folder."""
    conversations = home / ".letta" / "lc-local-backend" / "conversations"
    write_conversation(conversations, KEY, conversation(), record(AGENT, "local-conv-2", TITLE))
    write_conversation(conversations, DEFAULT_KEY, default_conversation(),
                       record(AGENT, "default", None))  # fmt: skip
    return conversations


# A sub-agent (the Agent tool, always run in the background): its own agent, whose default
# conversation holds its turns; the call's result names that agent and conversation.
SUB_AGENT: Final = "agent-local-9c1e"
PARENT_KEY: Final = "conversation:local-conv-3"
SUB_KEY: Final = f"default:{SUB_AGENT}"
PARENT: Final = "letta-conversation-local-conv-3"
SUB: Final = f"letta-default-{SUB_AGENT}"
SUB_TITLE: Final = "Check the vent log"


def spawning_conversation() -> list[dict[str, Any]]:
    conv = "local-conv-3"
    launched = (
        f"Task running in background with task ID: task_1\nAgent ID: {SUB_AGENT}\n"
        "Conversation ID: default\nOutput file: /tmp/letta-background-x/task_1.log\n\n"
        "You will be notified automatically when this task completes."
    )
    return [
        {"type": "session", "version": 3, "id": conv, "timestamp": _time(40), "cwd": CWD},
        _user(41, "why did the vents stay shut?", conv, REMINDER),
        _assistant(42, {"type": "toolCall", "id": "call_sub", "name": "Agent",
                        "arguments": {"description": SUB_TITLE, "prompt": "Read vents.log",
                                      "subagent_type": "general-purpose"}}, conversation=conv),
        _entry(43, {"id": "letta-msg-43", "role": "toolResult", "toolCallId": "call_sub",
                    "toolName": "Agent", "isError": False,
                    "content": [{"type": "text", "text": launched}], "timestamp": 43,
                    "metadata": _meta(43, conv)}),
        _assistant(44, {"type": "text", "text": "A helper is reading the log."},
                   conversation=conv),
    ]  # fmt: skip


def sub_conversation() -> list[dict[str, Any]]:
    told = (
        f"<system-reminder>\nThis message is from agent {AGENT}, conversation local-conv-3.\n"
        "</system-reminder>"
    )
    return [
        {"type": "session", "version": 3, "id": "default", "timestamp": _time(45), "cwd": CWD},
        _user(46, "Read vents.log", "default", told),
        _assistant(47, {"type": "text", "text": "The sensor read 12 degrees all day."},
                   conversation="default"),
    ]  # fmt: skip


def write_with_subagent(home: Path) -> Path:
    """A conversation whose Agent call ran a sub-agent, and the sub-agent's conversation."""
    conversations = home / ".letta" / "lc-local-backend" / "conversations"
    write_conversation(conversations, PARENT_KEY, spawning_conversation(),
                       record(AGENT, "local-conv-3", None))  # fmt: skip
    write_conversation(conversations, SUB_KEY, sub_conversation(),
                       record(SUB_AGENT, "default", None))  # fmt: skip
    return conversations
