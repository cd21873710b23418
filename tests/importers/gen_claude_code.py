"""Generated Claude Code transcripts of shapes seen in real homes, made-up content.

Plan mode's "clear context and implement" (2.1.2x): the planning session ends on an
``ExitPlanMode`` call it never answers; Claude Code starts a new session whose file opens
with that call's rejected result (under the new ``sessionId``, its ``parentUuid`` the
planning session's record), "[Request interrupted by user for tool use]", then the plan
as the user's prompt. The new session's id sorts before the planning one's here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/kiln"
PLANNING: Final = "e7000000-0000-4000-8000-00000000a001"
IMPLEMENTING: Final = "2b000000-0000-4000-8000-00000000b002"
CALL: Final = "call_5e1f00000000000000000001"
REJECTED: Final = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if"
    " it was a file edit, the new_string was NOT written to the file). STOP what you are"
    " doing and wait for the user to tell you how to proceed."
)


def _record(session: str, n: int, parent: str | None, kind: str, minute: int) -> dict[str, Any]:
    return {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
        "sessionId": session, "version": "2.1.22", "gitBranch": "", "type": kind,
        "uuid": f"{session[:8]}-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-01-29T04:{minute:02d}:00.000Z",
    }  # fmt: skip


def planning() -> list[dict[str, Any]]:
    ask = _record(PLANNING, 1, None, "user", 30)
    ask["message"] = {"role": "user", "content": "plan a firing schedule for cone 6"}
    plan = _record(PLANNING, 2, ask["uuid"], "assistant", 31)
    exit_plan = {"type": "tool_use", "id": CALL, "name": "ExitPlanMode",
                 "input": {"plan": "# Firing schedule\n1. candle\n2. ramp"}}  # fmt: skip
    content = [{"type": "text", "text": "Here is the plan."}, exit_plan]
    plan["message"] = {"id": "msg_1", "type": "message", "role": "assistant",
                       "model": "glm-4.7", "content": content}  # fmt: skip
    return [ask, plan]


def implementing() -> list[dict[str, Any]]:
    result = _record(IMPLEMENTING, 1, f"{PLANNING[:8]}-0000-4000-8000-{2:012d}", "user", 38)
    block = {"type": "tool_result", "content": REJECTED, "is_error": True, "tool_use_id": CALL}
    result["message"] = {"role": "user", "content": [block]}
    result["toolUseResult"] = "Error: " + REJECTED
    stop = _record(IMPLEMENTING, 2, result["uuid"], "user", 38)
    stop["message"] = {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}  # fmt: skip
    prompt = _record(IMPLEMENTING, 3, stop["uuid"], "user", 38)
    prompt["message"] = {"role": "user", "content": "Implement the following plan:\n\n"
                         "# Firing schedule\n1. candle\n2. ramp"}  # fmt: skip
    answer = _record(IMPLEMENTING, 4, prompt["uuid"], "assistant", 39)
    done = [{"type": "text", "text": "Done."}]
    answer["message"] = {"id": "msg_2", "type": "message", "role": "assistant",
                         "model": "glm-4.7", "content": done}  # fmt: skip
    return [result, stop, prompt, answer]


def write_plan_then_implement(projects: Path) -> Path:
    """Both sessions' files in one project folder under ``projects``; returns it."""
    project = projects / "-home-dev-kiln"
    project.mkdir(parents=True)
    for session, records in ((PLANNING, planning()), (IMPLEMENTING, implementing())):
        (project / f"{session}.jsonl").write_bytes(
            b"".join(orjson.dumps(r) + b"\n" for r in records)
        )
    return projects


# Seen in real 2.1.x homes: thinking Claude Code keeps without its text (an empty
# ``thinking`` and the signature), and a text block that is only a newline.
HIDDEN: Final = "4c000000-0000-4000-8000-00000000c003"


def hidden_thinking() -> list[dict[str, Any]]:
    ask = _record(HIDDEN, 1, None, "user", 10)
    ask["message"] = {"role": "user", "content": "why does the kiln stall at 900?"}
    reply = _record(HIDDEN, 2, ask["uuid"], "assistant", 11)
    blocks = [{"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgC"},
              {"type": "text", "text": "\n"},
              {"type": "text", "text": "The thermocouple is failing."}]  # fmt: skip
    reply["message"] = {"id": "msg_3", "type": "message", "role": "assistant",
                        "model": "claude-opus-4-6", "content": blocks}  # fmt: skip
    return [ask, reply]


def write_hidden_thinking(projects: Path) -> Path:
    project = projects / "-home-dev-kiln"
    project.mkdir(parents=True, exist_ok=True)
    (project / f"{HIDDEN}.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in hidden_thinking())
    )
    return projects
