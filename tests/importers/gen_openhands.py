"""Generated OpenHands conversations: one JSON file per event, in both layouts.

The agent SDK's (CLI 1.x): ``conversations/<id>/base_state.json`` and
``events/event-<n>-<uuid>.json`` whose events carry ``kind``. The older server's:
``sessions/<id>/metadata.json`` and ``events/<n>.json`` with ``action``/``observation``.
The event shapes follow the studied sources; the text is our own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

SDK_ID: Final = "3f2a1b0c4d5e6f708192a3b4c5d6e7f8"
SERVER_ID: Final = "c0ffee00-1111-4222-8333-444455556666"
CWD: Final = "/home/dev/scraper"


def _time(n: int) -> str:
    return f"2025-11-24T16:{n // 60:02d}:{n % 60:02d}.000000"


def sdk_events() -> list[dict[str, Any]]:
    def text(value: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": value}]

    return [
        {"kind": "SystemPromptEvent", "source": "agent", "system_prompt": text("You are...")},
        {
            "kind": "MessageEvent",
            "source": "user",
            "llm_message": {"role": "user", "content": text("Make the scraper respect robots.txt")},
        },
        {
            "kind": "ActionEvent",
            "source": "agent",
            "thought": text("Check how pages are fetched"),
            "tool_name": "terminal",
            "tool_call_id": "call_a",
            "action": {"command": "grep -rn get("},
            "reasoning_content": "Fetching happens in one module.",
        },
        {
            "kind": "ObservationEvent",
            "source": "environment",
            "tool_name": "terminal",
            "tool_call_id": "call_a",
            "observation": {
                "content": text("fetch.py:12: requests.get(url)"),
                "metadata": {"working_dir": "/workspace"},
            },
        },
        {
            "kind": "ActionEvent",
            "source": "agent",
            "thought": [],
            "tool_name": "file_editor",
            "tool_call_id": "call_b",
            "action": {"command": "str_replace", "path": "fetch.py"},
        },
        {
            "kind": "UserRejectObservation",
            "source": "user",
            "tool_call_id": "call_b",
            "rejection_reason": "Use urllib.robotparser instead",
        },
        {
            "kind": "Condensation",
            "source": "environment",
            "forgotten_event_ids": ["x"],
            "summary": "Summary: robots.txt must be honoured via urllib.robotparser.",
        },
        {"kind": "ConversationStateUpdateEvent", "source": "environment", "key": "status"},
        {
            "kind": "MessageEvent",
            "source": "agent",
            "llm_message": {
                "role": "assistant",
                "content": text("Switched to urllib.robotparser."),
            },
        },
    ]


def server_events() -> list[dict[str, Any]]:
    return [
        {"action": "system", "source": "agent", "args": {"content": "You are..."}},
        {
            "action": "message",
            "source": "user",
            "message": "Count the 404s in access.log",
            "args": {"content": "Count the 404s in access.log"},
        },
        # The memory's recall of the workspace, answered by a recall observation (citing
        # it): neither is a tool call.
        {
            "action": "recall",
            "source": "user",
            "args": {"recall_type": "workspace_context", "query": "Count the 404s"},
        },
        {
            "observation": "recall",
            "source": "environment",
            "content": "Added workspace context",
            "cause": 2,
            "extras": {"recall_type": "workspace_context", "repo_name": ""},
        },
        # The controller's error after a reply it could not parse: caused by no action.
        {
            "observation": "error",
            "source": "agent",
            "content": "LLMNoActionError: the model returned no action, retrying",
            "extras": {"error_id": ""},
        },
        # The state change that follows the first prompt, caused by nothing and empty.
        {
            "observation": "agent_state_changed",
            "source": "environment",
            "content": "",
            "extras": {"agent_state": "running"},
        },
        {
            "action": "run",
            "source": "agent",
            "args": {"command": "grep -c ' 404 ' access.log"},
            "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1"},
        },
        {
            "observation": "run",
            "source": "agent",
            "content": "17",
            "cause": 6,
            "extras": {"metadata": {"working_dir": "/workspace/logs", "exit_code": 0}},
        },
        {"observation": "agent_state_changed", "source": "environment", "content": ""},
        {"action": "message", "source": "agent", "args": {"content": "There are 17 404s."}},
    ]


def write_sdk(root: Path, events: list[dict[str, Any]] | None = None) -> Path:
    """``conversations/<id>``: base state, then the events (each with id and time)."""
    folder = root / "conversations" / SDK_ID
    (folder / "events").mkdir(parents=True, exist_ok=True)
    state = {
        "id": SDK_ID,
        "title": "Respect robots.txt",
        "agent": {"llm": {"model": "m"}},
        "workspace": {"working_dir": CWD},
    }
    (folder / "base_state.json").write_bytes(orjson.dumps(state))
    for n, event in enumerate(sdk_events() if events is None else events):
        write_sdk_event(folder, n, event)
    return folder


def write_sdk_event(folder: Path, n: int, event: dict[str, Any]) -> None:
    uid = f"{n:08x}-0000-4000-8000-{n:012x}"
    body = {"id": uid, "timestamp": _time(n), **event}
    (folder / "events" / f"event-{n:05d}-{uid}.json").write_bytes(orjson.dumps(body))


def write_server(root: Path, events: list[dict[str, Any]] | None = None) -> Path:
    folder = root / "sessions" / SERVER_ID
    (folder / "events").mkdir(parents=True, exist_ok=True)
    meta = {
        "conversation_id": SERVER_ID,
        "title": "404 count",
        "created_at": "2025-11-24T15:00:00Z",
    }
    (folder / "metadata.json").write_bytes(orjson.dumps(meta))
    for n, event in enumerate(server_events() if events is None else events):
        body = {"id": n, "timestamp": _time(n), **event}
        (folder / "events" / f"{n}.json").write_bytes(orjson.dumps(body))
    return folder


def server_turn() -> list[dict[str, Any]]:
    """The older server's events as real conversations have them: the agent's words in
    ``args.thought`` beside each tool call, a recall answered by an empty ``null``
    observation, and ``finish`` (no observation follows it) carrying its last words."""
    return [
        {"action": "message", "source": "user", "args": {"content": "Rotate the logs"}},
        {"action": "recall", "source": "user", "args": {"recall_type": "knowledge"}},
        {"observation": "null", "source": "environment", "content": "", "cause": 1,
         "message": "No observation", "extras": {}},
        {"action": "run", "source": "agent",
         "args": {"command": "logrotate -f app.conf", "thought": "Forcing a rotation first."},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1"}},
        {"observation": "run", "source": "agent", "content": "rotated", "cause": 3,
         "extras": {"metadata": {"working_dir": "/workspace/app", "exit_code": 0}}},
        {"action": "finish", "source": "agent", "message": "All done!",
         "args": {"final_thought": "The logs rotate daily now.", "outputs": {}, "thought": ""},
         "tool_call_metadata": {"function_name": "finish", "tool_call_id": "t2"}},
    ]  # fmt: skip


# One event of each kind the OpenHands SDK (openhands-sdk 1.21.0, pinned by openhands
# 1.16.0) persists (skips.WRITER_KINDS), in its shapes, made-up content.
ACP_CALL: Final = "acp_call_1"
ACP_OUTPUT: Final = "robots.txt allows /docs"


def every_writer_kind() -> list[dict[str, Any]]:
    def text(value: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": value}]

    acp = {
        "kind": "ACPToolCallEvent",
        "source": "agent",
        "tool_call_id": ACP_CALL,
        "title": "fetch robots.txt",
        "tool_kind": "fetch",
        "raw_input": {"url": "/robots"},
    }
    return [
        {"kind": "SystemPromptEvent", "source": "agent", "system_prompt": text("You are...")},
        {"kind": "ConversationStateUpdateEvent", "source": "environment", "key": "status",
         "value": "running"},
        {"kind": "MessageEvent", "source": "user",
         "llm_message": {"role": "user", "content": text("Respect robots.txt")}},
        {"kind": "ActionEvent", "source": "agent", "thought": text("Grep the fetcher"),
         "tool_name": "terminal", "tool_call_id": "call_a", "action": {"command": "grep"}},
        {"kind": "HookExecutionEvent", "source": "hook", "hook_event_type": "PreToolUse"},
        {"kind": "ObservationEvent", "source": "environment", "tool_name": "terminal",
         "tool_call_id": "call_a", "observation": {"content": text("fetch.py:12")}},
        {"kind": "ActionEvent", "source": "agent", "thought": [], "tool_name": "terminal",
         "tool_call_id": "call_b", "action": {"command": "rm -rf /"}},
        {"kind": "UserRejectObservation", "source": "user", "tool_name": "terminal",
         "tool_call_id": "call_b", "rejection_reason": "no"},
        {"kind": "ActionEvent", "source": "agent", "thought": [], "tool_name": "browser",
         "tool_call_id": "call_c", "action": {"url": "x"}},
        {"kind": "AgentErrorEvent", "source": "agent", "tool_name": "browser",
         "tool_call_id": "call_c", "error": "no browser"},
        acp | {"status": "in_progress"},
        acp | {"status": "completed", "raw_output": ACP_OUTPUT},
        acp | {"status": "completed", "raw_output": ACP_OUTPUT},
        {"kind": "TokenEvent", "source": "agent", "prompt_token_ids": [1],
         "response_token_ids": [2]},
        {"kind": "LLMCompletionLogEvent", "source": "environment", "filename": "a.json",
         "log_data": "{}", "model_name": "m", "usage_id": "agent"},
        {"kind": "CondensationRequest", "source": "environment"},
        {"kind": "Condensation", "source": "environment", "forgotten_event_ids": [],
         "summary": "Fetcher found; robots honoured.", "llm_response_id": "r1"},
        {"kind": "CondensationSummaryEvent", "source": "environment",
         "summary": "Fetcher found; robots honoured."},
        {"kind": "ConversationErrorEvent", "source": "environment", "code": "LLMError",
         "detail": "rate limited"},
        {"kind": "PauseEvent", "source": "user"},
    ]  # fmt: skip
