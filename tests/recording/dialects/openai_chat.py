"""The OpenAI Chat Completions dialect (``/v1/chat/completions``), which Qwen Code, Pi,
OpenCode and most OpenAI-compatible agents speak: a conversation in, one reply out, as one
JSON document or, when the request says ``stream``, as SSE chunks whose deltas carry the
text, the reasoning (``reasoning_content``, the field OpenAI-compatible servers use) and the
tool calls piece by piece."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.recording.dialects import HttpReply, Route
from tests.recording.script import Conversation, Reply, Script, ToolCall, Turn

MODELS = ["scripted-model"]


def text_of(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text")
        )
    return ""


def arguments_of(raw: Any) -> dict[str, Any]:
    """A call's arguments: the JSON string the model sent back, parsed."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def conversation(body: dict[str, Any]) -> Conversation:
    """The request's messages as the dialect-neutral conversation."""
    system: list[str] = []
    turns: list[Turn] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        text = text_of(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "user":
            # Each text part its own turn: agents send harness text (reminders, context) and
            # the prompt as parts of one message.
            content = message.get("content")
            if isinstance(content, list):
                turns += [
                    Turn(role="user", text=str(part.get("text", "")))
                    for part in content
                    if isinstance(part, dict) and part.get("type") in ("text", "input_text")
                ]
            else:
                turns.append(Turn(role="user", text=text))
        elif role == "assistant":
            calls = tuple(
                ToolCall(
                    id=str(call.get("id", "")),
                    name=str(call.get("function", {}).get("name", "")),
                    arguments=arguments_of(call.get("function", {}).get("arguments")),
                )
                for call in message.get("tool_calls") or []
            )
            turns.append(Turn(role="assistant", text=text, tool_calls=calls))
        elif role == "tool":
            turns.append(
                Turn(role="tool", text=text, tool_result_for=str(message.get("tool_call_id", "")))
            )
    tools = tuple(
        str(tool.get("function", {}).get("name", ""))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
    )
    return Conversation(
        system="\n\n".join(system),
        turns=tuple(turns),
        tools=tools,
        model=str(body.get("model", "")),
    )


def usage(conv: Conversation, reply: Reply) -> dict[str, int]:
    """Token counts of the right order of magnitude (4 characters a token)."""
    prompt = max(1, sum(len(turn.text) for turn in conv.turns) // 4)
    completion = max(1, (len(reply.text) + len(reply.reasoning)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def message(reply: Reply) -> dict[str, Any]:
    """The assistant message of a non-streaming reply."""
    out: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        out["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in reply.tool_calls
        ]
    return out


def sse(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def pieces(text: str, size: int = 40) -> list[str]:
    """Text cut into deltas, as a model streams it."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def completions(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    conv = conversation(body)
    reply = script.reply(conv)
    ident, created, model = f"chatcmpl-{time.time_ns()}", int(time.time()), conv.model
    finish = "tool_calls" if reply.tool_calls else "stop"
    if not body.get("stream"):
        document = {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message(reply), "finish_reason": finish}],
            "usage": usage(conv, reply),
        }
        return HttpReply(200, "application/json", [json.dumps(document).encode()])

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        return sse(
            {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
        )

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"reasoning_content": piece}) for piece in pieces(reply.reasoning)]
    chunks += [chunk({"content": piece}) for piece in pieces(reply.text)]
    for index, call in enumerate(reply.tool_calls):
        arguments = call.arguments_json
        head = {"index": index, "id": call.id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(arguments)
        ]
    chunks.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(
            sse(
                {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage(conv, reply),
                }
            )
        )
    chunks.append(sse("[DONE]"))
    return HttpReply(200, "text/event-stream", chunks)


def models(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    listing = {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "scripted"} for name in MODELS
        ],
    }
    return HttpReply(200, "application/json", [json.dumps(listing).encode()])


ROUTES = [
    Route("POST", r"^(/v1)?/chat/completions$", completions),
    Route("GET", r"^(/v1)?/models$", models),
]
