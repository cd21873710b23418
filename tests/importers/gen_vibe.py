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


def _entry(n: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"{kind}-{n}", "createdAt": 1_764_000_000_000 + 1000 * n, "type": kind,
            "generationStatus": "completed", "sessionId": UNIFIED, "turnId": "turn-1",
            "inputEntryId": None, "relatedEntryId": None, **fields}  # fmt: skip


def _effect(n: int, tool: str, args: dict[str, Any], status: str, **state: Any) -> dict[str, Any]:
    display = {"message": tool, "settledMessage": tool, "verb": "Running"}
    return _entry(n, "effect", title=tool,
                  detail={"display": display, "input": args, "kind": "tool", "toolName": tool},
                  state={"approvalSource": "bypass", "decision": "execute", "status": status,
                         "outputText": "", **state})  # fmt: skip


def unified_entries() -> list[dict[str, Any]]:
    """A projection's history: the entry shapes a recorded unified-store session holds."""
    missing = "File not found at: /home/dev/billing/rates.csv"
    return [
        _entry(1, "message", role="user", source="turn_start",
               content=[{"type": "text", "text": "Why is the invoice off by a cent?"}]),
        _entry(2, "reasoning", text="Check the rounding.", summary=[],
               outcome={"type": "committed"}),
        _entry(3, "message", role="assistant", source="harness",
               content=[{"type": "text", "text": "Reading total.py."}]),
        _effect(4, "file_system.read_file", {"path": "total.py"}, "completed",
                output={"content": [], "type": "success",
                        "structured_content": {"content": "round(x, 2)", "path": "total.py"}}),
        _effect(5, "file_system.read_file", {"path": "rates.csv"}, "failed",
                error={"code": "tool_failed", "message": missing},
                output={"content": [], "type": "failure", "error": {"message": missing}}),
        _entry(6, "plan", text="a kind this importer does not know"),
        _entry(7, "message", role="assistant", source="harness",
               content=[{"type": "text", "text": "total.py rounds floats."}]),
    ]  # fmt: skip


UNIFIED: Final = "dcab7bce-0f7b-e812-69ad-e262f6c84a62"


def write_unified(root: Path, *, truncated: bool = False) -> Path:
    """A unified-store session (3.x; 2.x's --experimental-harness) as recorded: CURRENT
    names the generation, whose manifest lists the projection's chunk (its history's
    entries); the journal and the other chunks are not read."""
    folder = root / "unified" / UNIFIED
    generation = "0000000000000071"
    chunk = "ac4e5b8be8c7ac8449a3b52733962c368e1bcc3f9416e4962df263cb68027c19"
    for sub in ("journal", "chunks", f"generations/{generation}"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    current = {"generation": generation, "session_id": UNIFIED, "snapshot_sequence": 71,
               "store_format": "mistral.vibe.unified-session-store/v1",
               "store_format_minor": 8}  # fmt: skip
    (folder / "CURRENT").write_bytes(orjson.dumps(current))
    manifest = {"generation": generation, "manifest_version": 1, "session_id": UNIFIED,
                "projection_state": {"chunks": [chunk], "path": "projection-state.json"},
                "checkpoint": {"chunks": ["0" * 64], "path": "checkpoint.json"}}  # fmt: skip
    (folder / "generations" / generation / "manifest.json").write_bytes(orjson.dumps(manifest))
    cursor = {"after": None, "before": "entry-0" if truncated else None}
    state = {"projection_state_version": 1, "session_id": UNIFIED, "snapshot": {
        "format": "harness.public-session-state/v1",
        "history": {"cursor": cursor, "entries": [], "range": "latest"}}}  # fmt: skip
    (folder / "generations" / generation / "projection-state.json").write_bytes(orjson.dumps(state))
    (folder / "chunks" / f"{chunk}.json").write_bytes(orjson.dumps(unified_entries()))
    meta = _meta(UNIFIED, "2025-11-24T16:00:00+00:00", "2025-11-24T16:00:07+00:00",
                 "Invoice cent", total=0)  # fmt: skip
    (folder / "meta.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    record = {"payload": {"method": "turn/start"}, "sequence": 37, "type": "command_reserved"}
    (folder / "journal" / "0000000000000072.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    return folder
