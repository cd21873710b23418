"""A generated Gemini CLI history (``~/.gemini/tmp``), made-up content in the format's shapes.

The shapes follow Gemini CLI's own chat recording (``chatRecordingService.ts`` and
``chatRecordingTypes.ts`` of google-gemini/gemini-cli, 2025–2026): the newer JSON Lines
layout (a header record; messages appended again whole when they change; ``$set`` and
``$rewindTo`` records; sub-agent chats in a folder named by the parent session; the
project folder's ``.project_root`` marker) and the older one-JSON-document-per-session
layout in a folder named by a digest of the project path, with no marker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/espresso-app"
MAIN: Final = "6e1f0000-0000-4000-8000-00000000a001"
SUB: Final = "6e1f0000-0000-4000-8000-00000000b002"
LEGACY: Final = "6e1f0000-0000-4000-8000-00000000c003"
SUMMARY: Final = "Quieter espresso pump"
SUB_TASK: Final = "investigate the pump configuration"
PROJECT_HASH: Final = "9c1d" * 16  # older versions' folder: a digest of the project path
# Events per session as the converter makes them (the sub-agent's title included).
MAIN_EVENTS: Final = 13
SUB_EVENTS: Final = 6
LEGACY_EVENTS: Final = 6
# Records the converter skips, counted by kind.
MAIN_SKIPPED: Final = {"record:$rewindTo": 1, "record:unknown": 1}


def _time(minute: int) -> str:
    return f"2025-06-01T09:{minute:02d}:00.000Z"


def _lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def _read_call(status: str, result: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": "read_file-1", "name": "read_file", "args": {"absolute_path": f"{CWD}/pump.yaml"},
        "status": status, "timestamp": _time(3), "displayName": "ReadFile",
        "description": "Reads a file", "renderOutputAsMarkdown": True,
    }  # fmt: skip
    if result:
        call["result"] = [{"functionResponse": {
            "id": "read_file-1", "name": "read_file",
            "response": {"output": "pump:\n  pressure_bar: 15\n  profile: standard"}}}]  # fmt: skip
        call["resultDisplay"] = "pump.yaml (3 lines)"
    return call


def main_session() -> list[dict[str, Any]]:
    """A JSONL session: its messages in the order the CLI appends them."""
    thinking = [{"subject": "Checking pump", "description": "The pressure may be too high.",
                 "timestamp": _time(2)}]  # fmt: skip
    first_reply = {
        "id": "g-1", "timestamp": _time(2), "type": "gemini", "model": "gemini-2.5-pro",
        "content": "Let me look at the pump settings.", "thoughts": thinking,
    }  # fmt: skip
    return [
        {"sessionId": MAIN, "projectHash": PROJECT_HASH, "startTime": _time(0),
         "lastUpdated": _time(0), "kind": "main"},
        {"id": "u-1", "timestamp": _time(1), "type": "user",
         "content": [{"text": "the espresso machine pump is loud, can we make it quieter?"}]},
        first_reply,
        {"$set": {"lastUpdated": _time(2)}},
        # The same message again: its tool call scheduled, then again with the result.
        {**first_reply, "toolCalls": [_read_call("executing", result=False)]},
        {**first_reply, "toolCalls": [_read_call("success", result=True)],
         "tokens": {"input": 900, "output": 40, "cached": 0, "total": 940}},
        {"id": "g-2", "timestamp": _time(4), "type": "gemini", "content": "",
         "toolCalls": [{"id": "agent-1", "name": "codebase_investigator", "agentId": SUB,
                        "args": {"objective": SUB_TASK}, "status": "success",
                        "timestamp": _time(4), "description": SUB_TASK,
                        "result": [{"text": "profile 'quiet' lowers pressure to 9 bar"}]}]},
        {"id": "i-1", "timestamp": _time(5), "type": "info", "content": "Request cancelled."},
        {"$set": {"summary": SUMMARY}},
        {"$checkpoint": {"tag": "before-profile"}},  # a record type this importer does not know
        {"id": "u-2", "timestamp": _time(6), "type": "user", "content": "switch to the quiet one"},
        {"$rewindTo": "u-2"},
        {"id": "u-3", "timestamp": _time(7), "type": "user",
         "content": "use the quiet pump profile from now on"},
        {"id": "g-3", "timestamp": _time(8), "type": "gemini",
         "content": [{"text": "Done: profile set to quiet (9 bar)."}]},
    ]  # fmt: skip


def sub_session() -> list[dict[str, Any]]:
    return [
        {"sessionId": SUB, "projectHash": PROJECT_HASH, "startTime": _time(4),
         "lastUpdated": _time(4), "kind": "subagent", "directories": [CWD]},
        {"id": "s-1", "timestamp": _time(4), "type": "user", "content": SUB_TASK},
        {"id": "s-2", "timestamp": _time(4), "type": "gemini", "content": "",
         "toolCalls": [{"id": "grep-1", "name": "search_file_content",
                        "args": {"pattern": "profile"}, "status": "error", "timestamp": _time(4),
                        "result": [{"functionResponse": {"id": "grep-1", "name": "grep",
                                    "response": {"error": "pattern matched 0 files"}}}]}]},
        {"id": "s-3", "timestamp": _time(5), "type": "gemini",
         "content": "profile 'quiet' lowers pressure to 9 bar"},
    ]  # fmt: skip


def legacy_session() -> dict[str, Any]:
    """An older CLI's whole-document session: string contents, no kind, no marker."""
    return {
        "sessionId": LEGACY, "projectHash": PROJECT_HASH, "startTime": "2025-05-02T10:00:00.000Z",
        "lastUpdated": "2025-05-02T10:03:00.000Z",
        "messages": [
            {"id": "l-1", "timestamp": "2025-05-02T10:00:00.000Z", "type": "user",
             "content": "grinder burrs squeak at fine settings"},
            {"id": "l-2", "timestamp": "2025-05-02T10:01:00.000Z", "type": "gemini",
             "content": "Checking the grinder calibration.",
             "toolCalls": [{"id": "shell-1", "name": "run_shell_command",
                            "args": {"command": "grinder --calibrate"}, "status": "success",
                            "timestamp": "2025-05-02T10:01:00.000Z",
                            "resultDisplay": "calibrated: burr gap 0.2 mm"}]},
            {"id": "l-3", "timestamp": "2025-05-02T10:03:00.000Z", "type": "error",
             "content": "API quota exceeded"},
        ],
    }  # fmt: skip


def write(home: Path) -> Path:
    """The history under ``home/.gemini/tmp``; returns that folder."""
    tmp = home / ".gemini" / "tmp"
    project = tmp / "espresso-app"
    chats = project / "chats"
    (chats / MAIN).mkdir(parents=True)
    (project / ".project_root").write_text(CWD)
    (chats / f"session-2025-06-01T09-00-{MAIN[:8]}.jsonl").write_bytes(_lines(main_session()))
    (chats / MAIN / f"{SUB}.jsonl").write_bytes(_lines(sub_session()))
    old = tmp / PROJECT_HASH / "chats"
    old.mkdir(parents=True)
    document = orjson.dumps(legacy_session(), option=orjson.OPT_INDENT_2)
    (old / f"session-2025-05-02T10-00-{LEGACY[:8]}.json").write_bytes(document)
    return tmp
