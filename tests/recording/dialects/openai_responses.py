"""The OpenAI Responses dialect (``/v1/responses``), which the Codex CLI speaks
(``wire_api = "responses"``): the conversation is a list of input items (messages,
function and custom tool calls with their outputs, reasoning), and the reply streams as
the typed SSE events Codex reads: ``response.created``, per output item
``response.output_item.added``, its deltas and ``response.output_item.done``, then
``response.completed`` with the usage."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.recording.dialects import HttpReply, Route
from tests.recording.dialects.openai_chat import arguments_of, models, pieces
from tests.recording.script import Conversation, Reply, Script, ToolCall, Turn


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", part.get("encrypted_content", "")))
            for part in content
            if isinstance(part, dict) and ("text" in part or "encrypted_content" in part)
        )
    return ""


def output_text(output: Any) -> tuple[str, bool]:
    """A tool output's text and whether it failed (Codex sends a string, or
    ``{content, success}``)."""
    if isinstance(output, dict):
        return content_text(output.get("content")), output.get("success") is False
    if isinstance(output, list):
        return content_text(output), False
    return str(output or ""), False


def conversation(body: dict[str, Any]) -> Conversation:
    system = [str(body.get("instructions") or "")]
    turns: list[Turn] = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message":
            role, text = item.get("role"), content_text(item.get("content"))
            if role in ("system", "developer"):
                system.append(text)
            elif role == "user":
                turns.append(Turn(role="user", text=text))
            elif role == "assistant":
                turns.append(Turn(role="assistant", text=text))
        elif kind == "agent_message":
            # A message between Codex's agents (a task for a sub-agent, its final answer):
            # a routing header, then the payload (plain here: "encrypted" only in name).
            turns.append(Turn(role="user", text=content_text(item.get("content"))))
        elif kind in ("function_call", "custom_tool_call"):
            arguments = (
                arguments_of(item.get("arguments"))
                if kind == "function_call"
                else {"input": str(item.get("input", ""))}
            )
            call = ToolCall(
                id=str(item.get("call_id", "")), name=str(item.get("name", "")), arguments=arguments
            )
            # Consecutive calls belong to one assistant turn.
            if turns and turns[-1].role == "assistant":
                last = turns[-1]
                turns[-1] = Turn(
                    role="assistant", text=last.text, tool_calls=(*last.tool_calls, call)
                )
            else:
                turns.append(Turn(role="assistant", text="", tool_calls=(call,)))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            text, failed = output_text(item.get("output"))
            turns.append(
                Turn(
                    role="tool",
                    text=text,
                    tool_result_for=str(item.get("call_id", "")),
                    is_error=failed,
                )
            )
    tools = tuple(name for name in namespaces(body)) + tuple(
        str(tool.get("name") or tool.get("type", ""))
        for tool in body.get("tools") or []
        if tool.get("type") != "namespace"
    )
    return Conversation(
        system="\n\n".join(part for part in system if part),
        turns=tuple(turns),
        tools=tools,
        model=str(body.get("model", "")),
    )


def namespaces(body: dict[str, Any]) -> dict[str, str]:
    """Tools offered inside a namespace (Codex's ``collaboration`` sub-agent tools), by name:
    their calls name the namespace."""
    return {
        str(inner.get("name")): str(tool.get("name"))
        for tool in body.get("tools") or []
        if tool.get("type") == "namespace"
        for inner in tool.get("tools") or []
    }


def custom_tools(body: dict[str, Any]) -> set[str]:
    """The freeform tools (Codex's ``apply_patch`` for some models): their calls carry one
    ``input`` string, not JSON arguments."""
    return {
        str(tool.get("name")) for tool in body.get("tools") or [] if tool.get("type") == "custom"
    }


def output_items(reply: Reply, body: dict[str, Any], stamp: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{stamp}",
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
            }
        )
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{stamp}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    custom, spaces = custom_tools(body), namespaces(body)
    for index, call in enumerate(reply.tool_calls):
        if call.name in custom:
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_{stamp}_{index}",
                    "status": "completed",
                    "call_id": call.id,
                    "name": call.name,
                    "input": str(call.arguments.get("input", "")),
                }
            )
        else:
            item = {
                "type": "function_call",
                "id": f"fc_{stamp}_{index}",
                "status": "completed",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments_json,
            }
            if call.name in spaces:
                item["namespace"] = spaces[call.name]
            items.append(item)
    return items


def usage(conv: Conversation, reply: Reply) -> dict[str, Any]:
    prompt = max(1, (len(conv.system) + sum(len(turn.text) for turn in conv.turns)) // 4)
    completion = max(1, (len(reply.text) + len(reply.reasoning)) // 4)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": len(reply.reasoning) // 4},
        "total_tokens": prompt + completion,
    }


def event(kind: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps({"type": kind, **payload})
    return f"event: {kind}\ndata: {data}\n\n".encode()


def responses(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    conv = conversation(body)
    reply = script.reply(conv)
    stamp = time.time_ns()
    ident = f"resp_{stamp}"
    items = output_items(reply, body, stamp)
    base = {"id": ident, "object": "response", "created_at": stamp // 10**9, "model": conv.model}
    done = {**base, "status": "completed", "output": items, "usage": usage(conv, reply)}
    if not body.get("stream"):
        return HttpReply(200, "application/json", [json.dumps(done).encode()])
    chunks = [
        event("response.created", {"response": {**base, "status": "in_progress", "output": []}})
    ]
    for index, item in enumerate(items):
        opened = {**item, "status": "in_progress"}
        if item["type"] == "message":
            opened["content"] = []
        elif item["type"] == "function_call":
            opened["arguments"] = ""  # as OpenAI streams it: the arguments follow as deltas
        chunks.append(event("response.output_item.added", {"output_index": index, "item": opened}))
        if item["type"] == "function_call":
            ids = {"item_id": item["id"], "output_index": index}
            delta = {**ids, "delta": item["arguments"]}
            chunks.append(event("response.function_call_arguments.delta", delta))
            done_args = {**ids, "arguments": item["arguments"]}
            chunks.append(event("response.function_call_arguments.done", done_args))
        if item["type"] == "reasoning":
            for piece in pieces(reply.reasoning):
                chunks.append(
                    event(
                        "response.reasoning_summary_text.delta",
                        {
                            "item_id": item["id"],
                            "output_index": index,
                            "summary_index": 0,
                            "delta": piece,
                        },
                    )
                )
        elif item["type"] == "message":
            for piece in pieces(reply.text):
                chunks.append(
                    event(
                        "response.output_text.delta",
                        {
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "delta": piece,
                        },
                    )
                )
        chunks.append(event("response.output_item.done", {"output_index": index, "item": item}))
    chunks.append(event("response.completed", {"response": done}))
    return HttpReply(200, "text/event-stream", chunks)


ROUTES = [
    Route("POST", r"^(/v1)?/responses$", responses),
    Route("GET", r"^(/v1)?/models$", models),
]
