"""The recording framework's core without an agent: the scripted server answers the Anthropic
dialect (streamed and not) from a script, refuses a wrong key, logs what it does not know, and
the namespace runner leaves a command nothing but the loopback."""

from __future__ import annotations

import json
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.recording.dialects.anthropic import conversation
from tests.recording.netns import run_isolated
from tests.recording.script import Conversation, Reply, ToolCall
from tests.recording.server import FAKE_KEY, ScriptedModelServer


class Echo:
    """Answers with the last user text, a thought, and one call when tools are offered."""

    def __init__(self) -> None:
        self.seen: list[Conversation] = []

    def reply(self, conv: Conversation) -> Reply:
        self.seen.append(conv)
        calls = (ToolCall("toolu_1", "Read", {"file_path": "/x"}),) if conv.tools else ()
        return Reply(text=f"echo: {conv.last_user_text}", reasoning="hm", tool_calls=calls)


def _post(url: str, body: dict[str, Any], key: str = FAKE_KEY) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"x-api-key": key}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


BODY = {
    "model": "claude-x",
    "system": [{"type": "text", "text": "be brief"}],
    "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "first"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t0", "name": "Read", "input": {"file_path": "/a"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t0", "content": "nope", "is_error": True},
                {"type": "text", "text": "<system-reminder>context</system-reminder>"},
            ],
        },
        {"role": "system", "content": [{"type": "text", "text": "more system"}]},
    ],
}


def test_the_anthropic_request_as_a_conversation() -> None:
    conv = conversation(BODY)
    assert [t.role for t in conv.turns] == ["user", "assistant", "tool"]
    assert conv.turns[2].tool_result_for == "t0" and conv.turns[2].is_error
    assert conv.tools == ("Read",) and "more system" in conv.system
    # The reminder is the harness's, not the user's: the prompt is still the first text.
    assert conv.last_user_text == "first"


def test_streamed_and_whole_replies_carry_thinking_text_and_the_call(tmp_path: Path) -> None:
    script, log = Echo(), tmp_path / "server.jsonl"
    with ScriptedModelServer(script, log_path=log) as server:
        status, raw = _post(f"{server.url}/v1/messages?beta=true", {**BODY, "stream": True})
        assert status == 200
        events = [json.loads(line[6:]) for line in raw.decode().splitlines()
                  if line.startswith("data: ")]  # fmt: skip
        starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
        assert starts == ["thinking", "text", "tool_use"]
        call_json = next(e["delta"]["partial_json"] for e in events
                         if e["type"] == "content_block_delta"
                         and e["delta"]["type"] == "input_json_delta")  # fmt: skip
        assert json.loads(call_json) == {"file_path": "/x"}
        stop = next(e for e in events if e["type"] == "message_delta")
        assert stop["delta"]["stop_reason"] == "tool_use"
        status, raw = _post(f"{server.url}/v1/messages", {**BODY, "tools": []})
        whole = json.loads(raw)
        assert [b["type"] for b in whole["content"]] == ["thinking", "text"]
        assert whole["content"][1]["text"] == "echo: first"
        assert whole["stop_reason"] == "end_turn"
    assert len(log.read_text().splitlines()) == 2


def test_a_wrong_key_is_refused_and_an_unknown_path_logged(tmp_path: Path) -> None:
    with ScriptedModelServer(Echo(), log_path=tmp_path / "log.jsonl") as server:
        assert _post(f"{server.url}/v1/messages", BODY, key="sk-real-looking")[0] == 401
        assert _post(f"{server.url}/v9/unheard-of", {})[0] == 404
        assert server.unknown == ["POST /v9/unheard-of"]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_command_in_the_namespace_sees_only_the_loopback() -> None:
    probe = (
        "from tests.recording.netns import assert_isolated, interfaces;"
        "assert_isolated(); print(','.join(interfaces()))"
    )
    root = Path(__file__).parents[2]
    done = run_isolated([sys.executable, "-c", probe], cwd=root, timeout=60)
    if done.returncode != 0 and b"Operation not permitted" in (done.stderr or b""):
        pytest.skip("user namespaces are not allowed here")
    assert done.returncode == 0
