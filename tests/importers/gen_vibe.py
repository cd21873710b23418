"""Generated Mistral Vibe session logs: a 2.x session folder (``meta.json`` as
``SessionLogger`` writes it, ``messages.jsonl`` of ``LLMMessage.model_dump(exclude_none=
True, mode="json")``) with a sub-agent under its ``agents/``, and a 1.x session document
(``InteractionLogger.save_interaction``); the text is our own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

MAIN: Final = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
CHILD: Final = "77aa88bb-1c2d-4e3f-9a8b-7c6d5e4f3a2b"
OLD: Final = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
CWD: Final = "/home/dev/billing"
TASK_CALL: Final = "call_task_1"


def _meta(session_id: str, start: str, end: str, title: str | None, **more: Any) -> dict[str, Any]:
    return {
        "session_id": session_id, "parent_session_id": more.pop("parent", None),
        "start_time": start, "end_time": end, "git_commit": "4f2a9c1", "git_branch": "main",
        "environment": {"working_directory": CWD}, "origin_directory": CWD,
        "username": "dev", "child_sessions": more.pop("children", []), "loops": [],
        "title": title, "title_source": "auto", "bumped_at": None, "pinned_at": None,
        "archived_at": None, "unseen_at": None, "seen_at": None, "experiments": None,
        "config": {"active_model": "devstral"}, "import_provenance": None,
        "created_worktree": None, "stats": {"steps": 4}, "total_messages": more.pop("total"),
        "last_message_fingerprint": "9e1c", "tools_available": [],
        "agent_profile": {"name": "default", "overrides": {}}, "system_prompt": None,
    }  # fmt: skip


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "index": 0, "type": "function",
            "function": {"name": name, "arguments": orjson.dumps(args).decode()}}  # fmt: skip


def user(text: str, n: int, **more: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, "injected": False, "message_id": f"u-{n}", **more}


def assistant(text: str, n: int, *calls: dict[str, Any], **more: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "injected": False,
                               "message_id": f"a-{n}", **more}  # fmt: skip
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool(call_id: str, name: str, text: str) -> dict[str, Any]:
    result = {"output": {"text": text}, "duration": 0.2, "cancelled": False}
    return {"role": "tool", "content": text, "injected": False, "name": name,
            "tool_call_id": call_id, "tool_result": result}  # fmt: skip


def main_messages() -> list[dict[str, Any]]:
    shell = {"operation_id": "op-1", "command": "git diff --stat", "cwd": CWD,
             "stdout": "1 file changed", "stderr": "", "output_text": "1 file changed",
             "exit_code": 0, "timed_out": False, "interrupted": False,
             "duration_ms": 40.0}  # fmt: skip
    image = {"source": {"kind": "file", "path": "/tmp/shot.png"}, "alias": "shot.png",
             "mime_type": "image/png"}  # fmt: skip
    return [
        user("Why does the invoice total drift by a cent?", 1),
        assistant("Let me look for round().", 2, call("call_grep_1", "grep", {"pattern": "round("}),
                  reasoning_content="Rounding, probably.", reasoning_message_id="r-2"),
        tool("call_grep_1", "grep", "billing/total.py:12: round(x, 2)"),
        assistant("", 3, call(TASK_CALL, "task", {"agent": "explore",
                                                  "task": "Find every rounding site"})),
        tool(TASK_CALL, "task", "Two sites: total.py and tax.py"),
        assistant("", 4, call("call_bash_1", "bash", {"command": "pytest -q"})),
        tool("call_bash_1", "bash", "<tool_error>Command failed with exit code 1</tool_error>"),
        user("Hook post-edit: lint passed", 5, injected=True),
        user("!git diff --stat", 6, injected=True, manual_shell=shell),
        user("Summary: total.py rounds floats; tax.py too.", 7, injected=True,
             context_boundary="compaction"),
        user("Now fix tax.py too", 8, images=[image]),
        assistant("Fixed: both use Decimal now.", 9),
    ]  # fmt: skip


def child_messages() -> list[dict[str, Any]]:
    return [user("Find every rounding site", 1), assistant("Two sites: total.py and tax.py", 2)]


def _lines(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(m) + b"\n" for m in messages)


def write_v2(root: Path, *, upto: int | None = None) -> Path:
    """The 2.x main session folder (its first ``upto`` messages) and its sub-agent's."""
    messages = main_messages()[:upto]
    folder = root / "session_20251124_160000_0b1c2d3e"
    child = folder / "agents" / "explore_20251124_160010_77aa88bb"
    link = {"session_id": CHILD, "tool_call_id": TASK_CALL, "agent": "explore",
            "relative_path": "agents/explore_20251124_160010_77aa88bb"}  # fmt: skip
    for path, meta, lines in (
        (folder, _meta(MAIN, "2025-11-24T16:00:00.250000+00:00",
                       "2025-11-24T16:04:30.000000+00:00", "Invoice cent drift",
                       children=[link], total=len(messages)), messages),
        (child, _meta(CHILD, "2025-11-24T16:00:10.000000+00:00",
                      "2025-11-24T16:00:20.000000+00:00", None, parent=MAIN, total=2),
         child_messages()),
    ):  # fmt: skip
        path.mkdir(parents=True, exist_ok=True)
        (path / "meta.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
        (path / "messages.jsonl").write_bytes(_lines(lines))
    return folder


def write_v1(root: Path) -> Path:
    """A 1.x session document: metadata and every message, the system prompt first."""
    root.mkdir(parents=True, exist_ok=True)
    metadata: dict[str, Any] = {"session_id": OLD, "start_time": "2025-09-01T12:15:00.123456",
                "end_time": "2025-09-01T12:16:30.000000", "git_commit": None,
                "git_branch": None, "auto_approve": False, "username": "dev",
                "environment": {"working_directory": CWD}, "stats": {"steps": 2},
                "total_messages": 5, "tools_available": [], "agent_config": {}}  # fmt: skip
    messages = [
        {"role": "system", "content": "You are Vibe."},
        {"role": "user", "content": "List the CSV exports"},
        {"role": "assistant", "content": "",
         "tool_calls": [call("call_ls_1", "bash", {"command": "ls exports"})]},
        {"role": "tool", "content": "jan.csv feb.csv", "name": "bash",
         "tool_call_id": "call_ls_1"},
        {"role": "assistant", "content": "Two exports: jan.csv and feb.csv."},
    ]  # fmt: skip
    path = root / "session_20250901_121500_1a2b3c4d.json"
    document = {"metadata": metadata, "messages": messages}
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    return path


def write(home: Path) -> Path:
    """A home with both layouts in ``~/.vibe/logs/session``; returns that folder."""
    root = home / ".vibe" / "logs" / "session"
    write_v2(root)
    write_v1(root)
    return root


def write_unified(root: Path, session_id: str = "f364bc49-cae5-a98c-4103-603d640b0c0a") -> Path:
    """The shape of a unified-store session (3.x; 2.x's --experimental-harness), as seen
    in one recorded offline: a pointer, the meta.json, a journal and content chunks."""
    folder = root / "unified" / session_id
    for sub in ("journal", "chunks", "generations/0000000000000044"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    current = {"generation": "0000000000000044", "session_id": session_id,
               "store_format": "mistral.vibe.unified-session-store/v1",
               "store_format_minor": 8}  # fmt: skip
    (folder / "CURRENT").write_bytes(orjson.dumps(current))
    meta = _meta(session_id, "2026-12-07T14:35:07+00:00", "2026-12-07T14:35:14+00:00", None,
                 total=0)  # fmt: skip
    (folder / "meta.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    record = {"payload": {"method": "turn/start"}, "sequence": 37, "type": "command_reserved"}
    (folder / "journal" / "0000000000000037.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    (folder / "chunks" / "e00b.json").write_bytes(b'[{"type": "message", "role": "user"}]')
    return folder
