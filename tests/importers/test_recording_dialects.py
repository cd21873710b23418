"""The OpenAI Chat Completions, OpenAI Responses and Gemini dialects of the scripted server,
without an agent: each request read as a conversation (tool results as tool turns citing
their calls, harness parts as turns of their own), and each reply, streamed or whole,
reassembled into the text, reasoning and calls the script gave."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.recording.dialects import gemini, openai_chat, openai_responses
from tests.recording.script import Conversation, Reply, ToolCall
from tests.recording.server import FAKE_KEY, ScriptedModelServer

CALL = ToolCall("call_9", "shell", {"cmd": "ls -la", "note": "x" * 90})


class Fixed:
    def __init__(self) -> None:
        self.seen: list[Conversation] = []

    def reply(self, conv: Conversation) -> Reply:
        self.seen.append(conv)
        return Reply(text="done: " + "y" * 70, reasoning="think first", tool_calls=(CALL,))


@pytest.fixture
def served() -> Iterator[tuple[ScriptedModelServer, Fixed]]:
    script = Fixed()
    with ScriptedModelServer(script) as server:
        yield server, script


def _post(url: str, body: dict[str, Any]) -> bytes:
    headers = {"Authorization": f"Bearer {FAKE_KEY}", "x-goog-api-key": FAKE_KEY}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        data: bytes = response.read()
        return data


def _events(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in data.decode().splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


CHAT = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "<reminder>"}, {"type": "text", "text": "fix it"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "contents"},
    ],
    "tools": [{"type": "function", "function": {"name": "read"}}],
}


def test_chat_completions_reads_the_conversation_and_streams_deltas_back(
    served: tuple[ScriptedModelServer, Fixed],
) -> None:
    server, script = served
    conv = openai_chat.conversation(CHAT)
    assert conv.system == "be brief" and conv.tools == ("read",)
    assert [t.text for t in conv.turns if t.role == "user"] == ["<reminder>", "fix it"]
    assert conv.turns[2].tool_calls == (ToolCall("c1", "read", {"path": "a"}),)
    assert (conv.turns[3].role, conv.turns[3].tool_result_for) == ("tool", "c1")
    chunks = _events(_post(f"{server.url}/v1/chat/completions", {**CHAT, "stream": True}))
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "done: " + "y" * 70
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "think first"
    pieces = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert pieces[0]["id"] == "call_9" and pieces[0]["function"]["name"] == "shell"
    arguments = "".join(p["function"].get("arguments", "") for p in pieces)
    assert json.loads(arguments) == CALL.arguments and len(pieces) > 2  # streamed in pieces
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    whole = json.loads(_post(f"{server.url}/v1/chat/completions", CHAT))
    message = whole["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["arguments"] == CALL.arguments_json
    assert script.seen[0].turns == conv.turns


RESPONSES = {
    "model": "m",
    "instructions": "base",
    "input": [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "dev"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd": "ls"}',
            "call_id": "a",
        },
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "input": "*** Begin Patch",
            "call_id": "b",
        },
        {"type": "function_call_output", "call_id": "a", "output": "out"},
        {
            "type": "custom_tool_call_output",
            "call_id": "b",
            "output": {"content": "no", "success": False},
        },
        {
            "type": "agent_message",
            "content": [
                {"type": "input_text", "text": "Message Type: NEW_TASK\nPayload:\n"},
                {"type": "encrypted_content", "encrypted_content": "check refunds"},
            ],
        },
    ],
    "tools": [
        {"type": "function", "name": "shell"},
        {"type": "custom", "name": "apply_patch"},
        {
            "type": "namespace",
            "name": "collaboration",
            "tools": [{"type": "function", "name": "spawn_agent"}],
        },
    ],
}


def test_responses_reads_codex_items_and_streams_the_event_sequence(
    served: tuple[ScriptedModelServer, Fixed],
) -> None:
    server, _ = served
    conv = openai_responses.conversation(RESPONSES)
    assert conv.system == "base\n\ndev"
    assert set(conv.tools) == {"shell", "apply_patch", "spawn_agent"}
    calls = conv.turns[1].tool_calls
    assert [(c.id, c.name) for c in calls] == [("a", "exec_command"), ("b", "apply_patch")]
    assert calls[1].arguments == {"input": "*** Begin Patch"}
    results = conv.tool_results()
    assert [(r.tool_result_for, r.is_error) for r in results] == [("a", False), ("b", True)]
    assert conv.last_user_text.endswith("check refunds")
    events = _events(_post(f"{server.url}/v1/responses", {**RESPONSES, "stream": True}))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "message", "function_call"]
    assert done[0]["summary"][0]["text"] == "think first"
    assert json.loads(done[2]["arguments"]) == CALL.arguments
    # A function call's arguments stream as deltas, as OpenAI's do (LLM keeps only those).
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert added[2]["arguments"] == ""
    streamed = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert [e["item_id"] for e in streamed] == [done[2]["id"]]
    assert json.loads("".join(e["delta"] for e in streamed)) == CALL.arguments
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "done: " + "y" * 70
    usage = events[-1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    # A call of a custom or namespaced tool comes back in that tool's shape.
    custom = openai_responses.output_items(
        Reply(
            tool_calls=(
                ToolCall("p", "apply_patch", {"input": "patch"}),
                ToolCall("s", "spawn_agent", {"task_name": "t"}),
            )
        ),
        RESPONSES,
        1,
    )
    assert custom[0] == {**custom[0], "type": "custom_tool_call", "input": "patch"}
    assert custom[1]["namespace"] == "collaboration"


GEMINI = {
    "systemInstruction": {"parts": [{"text": "be brief"}]},
    "contents": [
        {"role": "user", "parts": [{"text": "<session_context>"}, {"text": "fix it"}]},
        {
            "role": "model",
            "parts": [
                {"text": "hm", "thought": True},
                {"functionCall": {"name": "read_file", "args": {"p": 1}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "read_file", "response": {"error": "gone"}}}],
        },
    ],
    "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "run_shell_command"}]}],
}


def test_gemini_reads_contents_and_streams_candidates(
    served: tuple[ScriptedModelServer, Fixed],
) -> None:
    server, _ = served
    conv = gemini.conversation(GEMINI, "gemini-x")
    assert conv.tools == ("read_file", "run_shell_command")
    assert [t.text for t in conv.turns if t.role == "user"] == ["<session_context>", "fix it"]
    (call,) = conv.turns[2].tool_calls
    assert conv.turns[2].text == ""  # a thought is not the model's text
    (result,) = conv.tool_results()
    assert (result.tool_result_for, result.is_error, result.text) == (call.id, True, "gone")
    url = f"{server.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    documents = _events(_post(url, GEMINI))
    parts = [p for d in documents for p in d["candidates"][0]["content"]["parts"]]
    assert parts[0] == {"text": "think first", "thought": True}
    assert "".join(p.get("text", "") for p in parts[1:]) == "done: " + "y" * 70
    assert parts[-1]["functionCall"] == {"id": "call_9", "name": "shell", "args": CALL.arguments}
    assert documents[-1]["candidates"][0]["finishReason"] == "STOP"
    whole = json.loads(_post(f"{server.url}/v1beta/models/gemini-x:generateContent", GEMINI))
    assert len(whole["candidates"][0]["content"]["parts"]) == 3
    counted = json.loads(_post(f"{server.url}/v1beta/models/gemini-x:countTokens", GEMINI))
    assert counted["totalTokens"] == (len("be brief") + sum(len(t.text) for t in conv.turns)) // 4
