"""The Gemini API dialect (``/v1beta/models/<model>:generateContent`` and
``:streamGenerateContent?alt=sse``), which Gemini CLI speaks with an API key: the
conversation is ``contents`` of ``user``/``model`` parts (text, ``thought`` text,
``functionCall``, ``functionResponse``), the reply one candidate, streamed as SSE
documents of the same shape, each carrying the next parts."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.recording.dialects import HttpReply, Route
from tests.recording.dialects.openai_chat import pieces
from tests.recording.script import Conversation, Reply, Script, ToolCall, Turn

MODELS = ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"]


def response_text(response: Any) -> tuple[str, bool]:
    """A function response's text and whether it reports an error (Gemini CLI answers
    ``{output: ...}`` or ``{error: ...}``)."""
    if isinstance(response, dict):
        if "error" in response:
            return str(response["error"]), True
        if "output" in response:
            value = response["output"]
            return (value if isinstance(value, str) else json.dumps(value)), False
    return json.dumps(response), False


def conversation(body: dict[str, Any], model: str) -> Conversation:
    system_parts = (body.get("systemInstruction") or {}).get("parts") or []
    system = "\n".join(str(part.get("text", "")) for part in system_parts if isinstance(part, dict))
    turns: list[Turn] = []
    pending: dict[str, list[str]] = {}  # call ids by name, for responses without an id
    for content in body.get("contents") or []:
        role = content.get("role", "user")
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[Turn] = []
        for part in content.get("parts") or []:
            if "functionCall" in part:
                call = part["functionCall"]
                name = str(call.get("name", ""))
                ident = str(call.get("id") or f"{name}-{len(pending.get(name, []))}")
                pending.setdefault(name, []).append(ident)
                calls.append(ToolCall(id=ident, name=name, arguments=dict(call.get("args") or {})))
            elif "functionResponse" in part:
                response = part["functionResponse"]
                name = str(response.get("name", ""))
                ident = response.get("id")
                waiting = pending.get(name, [])
                if not ident and waiting:
                    ident = waiting[0]
                if ident in waiting:
                    waiting.remove(ident)
                text, failed = response_text(response.get("response"))
                results.append(
                    Turn(role="tool", text=text, tool_result_for=str(ident or ""), is_error=failed)
                )
            elif "text" in part and not part.get("thought"):
                texts.append(str(part["text"]))
        if role == "model":
            turns.append(Turn(role="assistant", text="".join(texts), tool_calls=tuple(calls)))
        else:
            # Each text part its own turn: Gemini CLI sends its session context and the
            # prompt as two parts of one content.
            turns += results
            turns += [Turn(role="user", text=text) for text in texts]
            if not results and not texts:
                turns.append(Turn(role="user", text=""))
    tools = tuple(
        str(declaration.get("name", ""))
        for tool in body.get("tools") or []
        for declaration in tool.get("functionDeclarations") or []
    )
    return Conversation(system=system, turns=tuple(turns), tools=tools, model=model)


def usage(conv: Conversation, reply: Reply) -> dict[str, int]:
    prompt = max(1, (len(conv.system) + sum(len(turn.text) for turn in conv.turns)) // 4)
    completion = max(1, len(reply.text) // 4)
    thoughts = len(reply.reasoning) // 4
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + completion + thoughts,
    }


def parts(reply: Reply) -> list[list[dict[str, Any]]]:
    """The reply's parts, grouped as the stream sends them (one group per document)."""
    groups: list[list[dict[str, Any]]] = []
    # A thought in one part: the CLI keeps each streamed thought part as its own thought.
    if reply.reasoning:
        groups.append([{"text": reply.reasoning, "thought": True}])
    groups += [[{"text": piece}] for piece in pieces(reply.text)]
    calls = [
        {"functionCall": {"id": call.id, "name": call.name, "args": call.arguments}}
        for call in reply.tool_calls
    ]
    if calls:
        groups.append(calls)
    return groups or [[{"text": ""}]]


def document(
    group: list[dict[str, Any]], model: str, finish: bool, counts: dict[str, int]
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": group}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": counts,
        "modelVersion": model,
        "responseId": f"scripted-{time.time_ns()}",
    }


def generate(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    model, method = match.group("model"), match.group("method")
    conv = conversation(body, model)
    reply = script.reply(conv)
    counts = usage(conv, reply)
    groups = parts(reply)
    if method == "generateContent":
        # One part each: the thought, the text, each call.
        whole = [part for group in parts(Reply(reasoning=reply.reasoning)) for part in group]
        whole = whole if reply.reasoning else []
        whole += [{"text": reply.text}] if reply.text else []
        whole += [part for part in groups[-1] if "functionCall" in part]
        return HttpReply(
            200, "application/json", [json.dumps(document(whole, model, True, counts)).encode()]
        )
    last = len(groups) - 1
    chunks = [
        f"data: {json.dumps(document(group, model, index == last, counts))}\r\n\r\n".encode()
        for index, group in enumerate(groups)
    ]
    return HttpReply(200, "text/event-stream", chunks)


def count_tokens(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    # Counted as the usage figures are (text, 4 characters a token): a compressed history
    # then counts fewer tokens than the one it replaces, as with the real model.
    request = body.get("generateContentRequest") or body
    conv = conversation(request, match.group("model"))
    total = max(1, (len(conv.system) + sum(len(turn.text) for turn in conv.turns)) // 4)
    return HttpReply(200, "application/json", [json.dumps({"totalTokens": total}).encode()])


def embed(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    requests = body.get("requests") or [body]
    embeddings = [{"values": [0.0] * 8} for _ in requests]
    answer = {"embeddings": embeddings} if "requests" in body else {"embedding": embeddings[0]}
    return HttpReply(200, "application/json", [json.dumps(answer).encode()])


def models(match: re.Match[str], body: dict[str, Any], script: Script) -> HttpReply:
    listing = {
        "models": [
            {
                "name": f"models/{name}",
                "displayName": name,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
            for name in MODELS
        ]
    }
    return HttpReply(200, "application/json", [json.dumps(listing).encode()])


MODEL = r"^/(v1beta|v1|v1alpha)/models/(?P<model>[^/:]+)"
ROUTES = [
    Route("POST", MODEL + r":(?P<method>generateContent|streamGenerateContent)$", generate),
    Route("POST", MODEL + r":countTokens$", count_tokens),
    Route("POST", MODEL + r":(batchEmbedContents|embedContent)$", embed),
    Route("GET", r"^/(v1beta|v1|v1alpha)/models$", models),
]
