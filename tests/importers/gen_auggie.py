"""Generated Auggie sessions, made-up content, in the shapes ``@augmentcode/auggie``
0.36.0 writes (``~/.augment/sessions/<sessionId>.json``, two-space indented): exchange
states with request and response nodes, a tool error, a sub-agent session naming its
parent, a history summary exchange, an exchange still running, a title, and a backup
copy that is not a session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

MAIN: Final = "5a000000-0000-4000-8000-00000000a001"
CHILD: Final = "5a000000-0000-4000-8000-00000000b002"
CWD: Final = "/home/dev/login"
TITLE: Final = "Fix the flaky login test"


def _text(node_id: int, text: str) -> dict[str, Any]:
    return {"id": node_id, "type": 0, "text_node": {"content": text}}


def _ide_state(node_id: int) -> dict[str, Any]:
    folder = {"repository_root": "/home/dev", "folder_root": CWD}
    return {"id": node_id, "type": 4, "ide_state_node": {"workspace_folders": [folder],
            "workspace_folders_unchanged": False}}  # fmt: skip


def _result(node_id: int, call: str, content: str, *, error: bool = False) -> dict[str, Any]:
    return {"id": node_id, "type": 1, "tool_result_node": {"tool_use_id": call,
            "content": content, "is_error": error}}  # fmt: skip


def _say(node_id: int, text: str) -> dict[str, Any]:
    return {"id": node_id, "type": 0, "content": text}


def _use(node_id: int, call: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": node_id, "type": 5, "content": "", "tool_use": {"tool_use_id": call,
            "tool_name": tool, "input_json": json.dumps(arguments)}}  # fmt: skip


def _partial(node_id: int, call: str, tool: str) -> dict[str, Any]:
    return {"id": node_id, "type": 5, "content": "", "tool_use": {"tool_use_id": call,
            "tool_name": tool, "input_json": "{\"pa", "is_partial": True}}  # fmt: skip


def _state(n: int, request: str, requests: list[dict[str, Any]], responses: list[dict[str, Any]],
           *, completed: bool = True, summary: bool = False) -> dict[str, Any]:  # fmt: skip
    """One exchange state as ``addExchangeToHistory`` keeps it."""
    text = "".join(node["content"] for node in responses if node["type"] == 0)
    return {
        "exchange": {"request_message": request, "response_text": text,
                     "request_id": f"req-{n}", "request_nodes": requests,
                     "response_nodes": responses},
        "completed": completed, "sequenceId": n,
        "finishedAt": f"2025-09-01T10:{n:02d}:00.000Z", "changedFiles": [],
        "changedFilesSkipped": [], "changedFilesSkippedCount": 0,
        "isHistorySummary": summary, "historySummaryVersion": 1 if summary else 0,
        "source": "local",
    }  # fmt: skip


def main_history() -> list[dict[str, Any]]:
    billing = {"id": 9, "type": 9, "billing_metadata": {"transaction_id": "t1"}}
    summary = {"summary_text": "The login test waits on a fixed sleep.",
               "summarization_request_id": "sum-1", "history_beginning_dropped_num_exchanges": 0,
               "history_middle_abridged_text": "", "history_end": [],
               "message_template": "", "session_file_path": ""}  # fmt: skip
    return [
        _state(1, "the login test fails one run in five",
               [_text(1, "the login test fails one run in five"), _ide_state(2)],
               # The text streamed in pieces; the tool use arrived partial, then whole.
               [{"id": 3, "type": 8, "content": "", "thinking": {"summary": "Timing, likely."}},
                _say(4, "Reading "), _partial(5, "tu-1", "view"), _say(6, "the test."),
                _use(7, "tu-1", "view", {"path": "tests/test_login.py"}), billing]),
        _state(2, "", [_result(1, "tu-1", "time.sleep(0.5)\nassert page.ready")],
               [_use(2, "tu-2", "launch-process", {"command": "pytest -x"})]),
        _state(3, "", [_result(1, "tu-2", "pytest: not found", error=True)],
               [_use(2, "tu-3", "sub-agent-explorer", {"action": "run", "name": "explorer",
                                                       "instruction": "find other sleeps"})]),
        _state(4, "", [_result(1, "tu-3", "two more sleeps in tests/helpers.py")],
               [_say(2, "Replacing the sleeps with a wait for the page.")]),
        _state(5, "", [{"id": 1, "type": 10, "history_summary_node": summary}], [],
               summary=True),
        _state(6, "add a regression test", [_text(1, "add a regression test")],
               [_say(2, "Added test_login_waits_for_ready.")]),
        _state(7, "and run it", [_text(1, "and run it")], [], completed=False),
    ]  # fmt: skip


def document(session: str, history: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A session file as ``SessionManager.saveSession`` writes it."""
    return {"sessionId": session, "created": "2025-09-01T10:00:00.000Z",
            "modified": "2025-09-01T10:07:00.000Z", "chatHistory": history,
            "agentState": {"userGuidelines": "", "workspaceGuidelines": "", "modelId": "m1"},
            **fields}  # fmt: skip


def write(home: Path, *, upto: int | None = None) -> Path:
    """``~/.augment/sessions`` under ``home`` (the main session's first ``upto``
    exchanges); returns that folder."""
    folder = home / ".augment" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    main = document(MAIN, main_history()[:upto], title="Login test", customTitle=TITLE)
    child = document(CHILD, [_state(1, "find other sleeps", [_text(1, "find other sleeps"),
                                                             _ide_state(2)],
                                    [_say(2, "two more sleeps in tests/helpers.py")])],
                     parentConversationId=MAIN)  # fmt: skip
    (folder / f"{MAIN}.json").write_text(json.dumps(main, indent=2))
    (folder / f"{CHILD}.json").write_text(json.dumps(child, indent=2))
    (folder / f"{MAIN}-backup1.json").write_text(json.dumps(main, indent=2))
    return folder
