"""The Anthropic Messages API (``POST /v1/messages``, streamed or not, and ``count_tokens``).

Requests: ``system`` is a string or text blocks; user content carries ``text``, ``image`` and
``tool_result`` blocks (a result becomes a ``tool`` turn, in order); a message of role
``system`` among them adds to the system text; assistant content carries
``text``, ``thinking`` and ``tool_use``. Replies: thinking (with a fixed fake signature), text,
then the tool uses, with ``stop_reason`` ``tool_use`` or ``end_turn``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.recording.dialects import HttpReply, Route, json_reply, sse_reply
from tests.recording.script import Conversation, Reply, Script, ToolCall, Turn, estimate_tokens

# Claude Code wraps context it adds to a user message in these; they are not the user's words.
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
SIGNATURE = "c2NyaXB0ZWQtc2lnbmF0dXJl"  # base64 of "scripted-signature": not a real one


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "\n".join(p for p in parts if p)
    return ""


def _strip_reminder(found: re.Match[str]) -> str:
    # A background task's notification comes inside a reminder: it is news the model answers.
    text = found.group(0)
    start = text.find("<task-notification>")
    return text[start : text.rfind("</task-notification>") + 20] if start >= 0 else ""


def _user_text(blocks: list[Any]) -> str:
    texts = [
        _REMINDER.sub(_strip_reminder, b.get("text", "")).strip()
        for b in blocks
        if b.get("type") == "text"
    ]
    return "\n".join(t for t in texts if t)


def conversation(body: dict[str, Any]) -> Conversation:
    turns: list[Turn] = []
    system = [_text_of(body.get("system"))]
    for message in body.get("messages", []):
        role, content = message.get("role"), message.get("content")
        if role == "system":  # system text between the turns (Claude Code's context)
            system.append(_text_of(content))
            continue
        blocks: list[Any] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        if role == "assistant":
            calls = tuple(
                ToolCall(b["id"], b["name"], dict(b.get("input") or {}))
                for b in blocks
                if b.get("type") == "tool_use"
            )
            text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            turns.append(Turn("assistant", text, calls))
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                turns.append(
                    Turn(
                        "tool",
                        _text_of(b.get("content")),
                        tool_result_for=b.get("tool_use_id"),
                        is_error=bool(b.get("is_error")),
                    )
                )
        text = _user_text(blocks)
        if text:
            turns.append(Turn("user", text))
    tools = tuple(t.get("name", "") for t in body.get("tools", []) if isinstance(t, dict))
    return Conversation("\n".join(system), tuple(turns), tools, body.get("model", ""))


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning:
        blocks.append({"type": "thinking", "thinking": reply.reasoning, "signature": SIGNATURE})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in reply.tool_calls
    ]
    return blocks


def _message_id(conv: Conversation) -> str:
    return f"msg_scripted_{len(conv.turns):04d}_{estimate_tokens(conv):08d}"


def _usage(conv: Conversation, reply: Reply) -> dict[str, int]:
    out = max(1, (len(reply.text) + len(reply.reasoning)) // 4 + 20 * len(reply.tool_calls))
    return {
        "input_tokens": estimate_tokens(conv),
        "output_tokens": out,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _stream(conv: Conversation, reply: Reply, model: str) -> HttpReply:
    usage = _usage(conv, reply)
    start: dict[str, Any] = {
        "id": _message_id(conv),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(_blocks(reply)):
        kind = block["type"]
        if kind == "thinking":
            empty: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": SIGNATURE},
            ]
        elif kind == "text":
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse_reply(events)


def messages(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    conv = conversation(body)
    reply = script.reply(conv)
    model = body.get("model", "claude-scripted")
    if body.get("stream"):
        return _stream(conv, reply, model)
    return json_reply(
        {
            "id": _message_id(conv),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": _blocks(reply),
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": _usage(conv, reply),
        }
    )


def count_tokens(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    return json_reply({"input_tokens": estimate_tokens(conversation(body))})


ROUTES = [
    Route("POST", r"/v1/messages", messages),
    Route("POST", r"/v1/messages/count_tokens", count_tokens),
]
