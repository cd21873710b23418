"""Generated Kimi CLI sessions: ``~/.kimi/sessions/<md5 of the work dir>/<session>/`` with
``wire.jsonl`` as ``WireFile`` writes it (a metadata header, then ``{"timestamp",
"message": {"type", "payload"}}`` records of merged wire messages), ``state.json``, a
sub-agent's ``subagents/<agent id>/`` (its own ``wire.jsonl`` and ``meta.json``), and
``kimi.json``'s ``work_dirs``; the text is our own."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Final

import orjson

MAIN: Final = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a9f"
OTHER: Final = "5e4d3c2b-1a09-4f8e-8d7c-6b5a4e3d2c1b"
AGENT: Final = "a1b2c3d4"
AGENT_CALL: Final = "tool_agent_1"
CWD: Final = "/home/dev/fetcher"
T0: Final = 1_764_000_000.25  # seconds, as time.time() gives


def record(n: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": T0 + n, "message": {"type": kind, "payload": payload}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "id": call_id,
            "function": {"name": name, "arguments": orjson.dumps(args).decode()},
            "extras": None}  # fmt: skip


def result(call_id: str, output: str, *, error: str = "") -> dict[str, Any]:
    brief = [{"type": "brief", "text": error}] if error else []
    value = {"is_error": bool(error), "output": output, "message": error, "display": brief,
             "extras": None}  # fmt: skip
    return {"tool_call_id": call_id, "return_value": value}


def sub_event(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"parent_tool_call_id": AGENT_CALL, "agent_id": AGENT, "subagent_type": "explore",
            "event": {"type": kind, "payload": payload}}  # fmt: skip


def main_records() -> list[tuple[str, dict[str, Any]]]:
    agent_args = {"description": "Find retry sites", "prompt": "List every retry() caller",
                  "subagent_type": "explore"}  # fmt: skip
    notice = {"id": "n1", "category": "task", "type": "done", "source_kind": "background",
              "source_id": "b1", "title": "Background task done", "body": "build finished",
              "severity": "info", "created_at": T0 + 20, "payload": {}}  # fmt: skip
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO", "id": None}}
    return [
        ("TurnBegin", {"user_input": "Why is test_retry flaky?"}),
        ("StepBegin", {"n": 1}),
        ("ContentPart", {"type": "think", "think": "Check the retry helper.", "encrypted": None}),
        ("ContentPart", text("Reading the helper.")),
        ("ToolCall", call("tool_read_1", "ReadFile", {"path": "retry.py"})),
        ("StatusUpdate", {"context_usage": 0.1, "context_tokens": 900,
                          "max_context_tokens": 262144, "token_usage": None,
                          "message_id": "m1", "plan_mode": False, "mcp_status": None}),
        ("ToolResult", result("tool_read_1", "def retry(): sleep(random())")),
        ("StepBegin", {"n": 2}),
        ("ToolCall", call(AGENT_CALL, "Agent", agent_args)),
        ("SubagentEvent", sub_event("TurnBegin", {"user_input": "List every retry() caller"})),
        ("SubagentEvent", sub_event("ContentPart", text("retry() in net.py and db.py"))),
        ("ToolResult", result(AGENT_CALL, "retry() in net.py and db.py")),
        ("ToolCall", call("tool_shell_1", "Shell", {"command": "pytest -q"})),
        ("ToolResult", result("tool_shell_1", "", error="Command failed with exit code 1")),
        ("TurnEnd", {}),
        ("TurnBegin", {"user_input": "/compact"}),
        ("CompactionBegin", {}),
        ("CompactionEnd", {}),
        ("ContentPart", text("The context has been compacted.")),
        ("TurnEnd", {}),
        ("Notification", notice),
        ("SteerInput", {"user_input": [text("Also check db.py"), image]}),
        ("ContentPart", text("Both callers now seed the jitter.")),
        ("TurnEnd", {}),
    ]  # fmt: skip


def child_records() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("TurnBegin", {"user_input": "List every retry() caller"}),
        ("StepBegin", {"n": 1}),
        ("ContentPart", text("retry() in net.py and db.py")),
        ("TurnEnd", {}),
    ]


def other_records() -> list[tuple[str, dict[str, Any]]]:
    return [("TurnBegin", {"user_input": "What does make lint run?"}),
            ("ContentPart", text("ruff and mypy.")), ("TurnEnd", {})]  # fmt: skip


def wire_lines(records: list[tuple[str, dict[str, Any]]], *, start: int = 0) -> bytes:
    header = {"type": "metadata", "protocol_version": "1.10"}
    lines = [header] if start == 0 else []
    lines += [record(start + n, kind, payload) for n, (kind, payload) in enumerate(records)]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def sessions_dir(home: Path, cwd: str) -> Path:
    return home / ".kimi" / "sessions" / hashlib.md5(cwd.encode("utf-8")).hexdigest()


def write(home: Path, *, upto: int | None = None) -> Path:
    """A home where Kimi ran in ``CWD`` (listed in ``kimi.json``) and in a folder no longer
    listed; returns the sessions folder. ``upto``: the main log's first records only."""
    main = sessions_dir(home, CWD) / MAIN
    agent = main / "subagents" / AGENT
    other = sessions_dir(home, "/home/dev/gone") / OTHER
    for folder in (main, agent, other):
        folder.mkdir(parents=True, exist_ok=True)
    (main / "wire.jsonl").write_bytes(wire_lines(main_records()[:upto]))
    (main / "context.jsonl").write_bytes(
        b'{"role": "_system_prompt", "content": "You are Kimi."}\n'
    )
    state = {"version": 1, "custom_title": "Flaky retry test", "title_generated": True,
             "title_generate_attempts": 1, "plan_mode": False, "archived": False,
             "todos": []}  # fmt: skip
    (main / "state.json").write_bytes(orjson.dumps(state))
    (agent / "wire.jsonl").write_bytes(wire_lines(child_records(), start=9))
    spec = {"agent_id": AGENT, "subagent_type": "explore", "model_override": None,
            "effective_model": "kimi-k2", "created_at": T0 + 9}  # fmt: skip
    meta = {"agent_id": AGENT, "subagent_type": "explore", "status": "completed",
            "description": "Find retry sites", "created_at": T0 + 9, "updated_at": T0 + 11,
            "last_task_id": None, "launch_spec": spec}  # fmt: skip
    (agent / "meta.json").write_bytes(orjson.dumps(meta))
    (other / "wire.jsonl").write_bytes(wire_lines(other_records(), start=100))
    listed = {"work_dirs": [{"path": CWD, "kaos": "local", "last_session_id": MAIN}]}
    (home / ".kimi" / "kimi.json").write_bytes(orjson.dumps(listed))
    return home / ".kimi" / "sessions"


LEGACY: Final = "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2918"
TASK_CALL: Final = "Task:0"


def legacy_records() -> list[tuple[str, dict[str, Any]]]:
    """A 0.8x log: no header, and a Task sub-agent whose events exist only as the parent's
    ``SubagentEvent`` copies (``task_tool_call_id``, no ``agent_id``, no own log)."""
    task = {"description": "Scan the logs", "subagent_name": "coder", "prompt": "Scan logs/"}

    def sub(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"task_tool_call_id": TASK_CALL, "event": {"type": kind, "payload": payload}}

    return [
        ("TurnBegin", {"user_input": "Any errors in the logs?"}),
        ("ToolCall", call(TASK_CALL, "Task", task)),
        ("SubagentEvent", sub("TurnBegin", {"user_input": "Scan logs/"})),
        ("SubagentEvent", sub("StepBegin", {"n": 1})),
        ("SubagentEvent", sub("ToolCall", call("Shell:1", "Shell", {"command": "grep ERROR"}))),
        ("SubagentEvent", sub("ToolResult", result("Shell:1", "logs/a.log: ERROR disk full"))),
        ("SubagentEvent", sub("ContentPart", text("One error: disk full."))),
        ("ToolResult", result(TASK_CALL, "One error: disk full.")),
        ("ContentPart", text("The logs show one error: the disk was full.")),
    ]  # fmt: skip


def write_legacy(home: Path) -> Path:
    folder = sessions_dir(home, CWD) / LEGACY
    folder.mkdir(parents=True, exist_ok=True)
    lines = [record(n, kind, payload) for n, (kind, payload) in enumerate(legacy_records())]
    (folder / "wire.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return folder / "wire.jsonl"


# One wire message of each type Kimi CLI 1.52.0 writes to wire.jsonl (its WireMessage
# union, wire/types.py: skips.WRITER_KINDS), made-up content.
EVERY_KIND: Final = "7d6c5b4a-3928-4f1e-8d0c-1b2a3c4d5e6f"


def every_writer_kind() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("TurnBegin", {"user_input": "Why is test_retry flaky?"}),
        ("SteerInput", {"user_input": "look at the helper first"}),
        ("StepBegin", {"n": 1}),
        ("ContentPart", text("Reading the helper.")),
        ("ToolCall", call("tool_1", "ReadFile", {"path": "retry.py"})),
        ("ToolCallPart", {"arguments_part": ""}),
        ("ApprovalRequest", {"id": "a1", "tool_call_id": "tool_1", "sender": "ReadFile",
                             "action": "read", "description": "read retry.py"}),
        ("ApprovalResponse", {"request_id": "a1", "response": "approve"}),
        ("ToolResult", result("tool_1", "def retry(): ...")),
        ("HookTriggered", {"event": "PreToolUse", "target": "ReadFile", "hook_count": 1}),
        ("HookRequest", {"id": "h1", "subscription_id": "s1", "event": "PreToolUse"}),
        ("HookResolved", {"event": "PreToolUse", "target": "ReadFile", "action": "allow"}),
        ("ToolCallRequest", {"id": "t2", "name": "browser", "arguments": "{}"}),
        ("QuestionRequest", {"id": "q1", "tool_call_id": "tool_q", "questions": []}),
        ("StepRetry", {"n": 1, "attempt": 2}),
        ("StepInterrupted", {}),
        ("StatusUpdate", {"context_usage": 0.2}),
        ("MCPLoadingBegin", {}),
        ("MCPLoadingEnd", {}),
        ("Notification", {"id": "n1", "category": "task", "type": "done", "title": "Done",
                          "body": "build finished", "severity": "info"}),
        ("PlanDisplay", {"content": "1. read\n2. fix", "file_path": "plan.md"}),
        ("BtwBegin", {"id": "b1", "question": "what is retry?"}),
        ("BtwEnd", {"id": "b1", "response": "a helper"}),
        ("SubagentEvent", sub_event("StepBegin", {"n": 1})),
        ("CompactionBegin", {}),
        ("CompactionEnd", {}),
        ("TurnEnd", {}),
    ]  # fmt: skip


def write_every_writer_kind(home: Path) -> Path:
    folder = sessions_dir(home, CWD) / EVERY_KIND
    folder.mkdir(parents=True)
    path = folder / "wire.jsonl"
    path.write_bytes(wire_lines(every_writer_kind()))
    return path
