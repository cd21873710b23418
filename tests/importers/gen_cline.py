"""Generated Cline and Roo Code task folders: ``tasks/<id>/`` with the files each writes.

Cline: ``api_conversation_history.json`` (Anthropic-style messages, no times; older
tasks in the XML tool mode, newer with native ``tool_use``/``tool_result``),
``ui_messages.json`` and ``task_metadata.json``. Roo Code adds ``ts`` to every message,
``isSummary`` to a condensed context's summary and a ``history_item.json`` with the
workspace and the parent task. The text is our own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import orjson

CLINE_TASK: Final = "1764000000000"  # Cline's task ids are the start in milliseconds
CLINE_XML_TASK: Final = "1764000100000"
CLINE_UI_TASK: Final = "1764000200000"  # a task with only the UI's log
ROO_TASK: Final = "5f0c3a52-8d1e-4b7a-9c2e-0a1b2c3d4e5f"
ROO_CHILD: Final = "6a1d4b63-9e2f-4c8b-8d3f-1b2c3d4e5f60"
CWD: Final = "/home/dev/weather"
T0: Final = 1_764_000_000_000


def environment(cwd: str = CWD) -> dict[str, Any]:
    return {
        "type": "text",
        "text": f"<environment_details>\n# Current Working Directory"
        f" ({cwd}) Files\napp.py\n</environment_details>",
    }


def cline_native() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<task>\nAdd a retry to the weather API client\n</task>"},
                environment(),
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the client first."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "client.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "def fetch(): return get(URL)"}],
                },
                environment(),
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "replace_in_file",
                    "input": {"path": "client.py", "diff": "+@retry(3)"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "denied",
                    "is_error": True,
                },
                {"type": "image", "source": {"type": "base64", "data": "AA=="}},
            ],
        },
        {"role": "assistant", "content": "The retry decorator needs your approval."},
    ]


def cline_xml() -> list[dict[str, Any]]:
    """The XML tool mode of older Cline versions: calls inside the assistant's text."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<task>\nWhy does the forecast show Kelvin?\n</task>"},
                environment("/home/dev/forecast"),
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "<read_file>\n<path>units.py</path>\n</read_file>"}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'units.py'] Result:"},
                {"type": "text", "text": "UNITS = 'standard'"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "The API defaults to standard units; pass units=metric."}
            ],
        },
    ]


def roo(child: bool = False) -> list[dict[str, Any]]:
    if child:
        return [
            {
                "role": "user",
                "ts": T0 + 60_000,
                "content": [{"type": "text", "text": "<task>\nWrite the retry test\n</task>"}],
            },
            {
                "role": "assistant",
                "ts": T0 + 61_000,
                "content": [{"type": "text", "text": "Added test_retry_gives_up_after_three."}],
            },
        ]
    return [
        {
            "role": "user",
            "ts": T0,
            "content": [
                {"type": "text", "text": "<task>\nPlan the caching layer\n</task>"},
                environment(),
            ],
        },
        {
            "role": "assistant",
            "ts": T0 + 1000,
            "content": [
                {"type": "reasoning", "text": "A TTL cache keyed by city fits."},
                {"type": "text", "text": "I suggest a TTL cache keyed by city."},
            ],
        },
        {
            "role": "user",
            "ts": T0 + 2000,
            "content": [{"type": "text", "text": "<feedback>\nUse Redis\n</feedback>"}],
        },
        {
            "role": "assistant",
            "ts": T0 + 3000,
            "isSummary": True,
            "content": [
                {"type": "text", "text": "Summary: a Redis TTL cache keyed by city was agreed."}
            ],
        },
        {
            "role": "user",
            "ts": T0 + 4000,
            "content": [{"type": "text", "text": "Delegate the tests"}],
        },
    ]


def ui_messages(task: str, first_ts: int) -> list[dict[str, Any]]:
    return [
        {"ts": first_ts, "type": "say", "say": "text", "text": task},
        {"ts": first_ts + 5, "type": "say", "say": "api_req_started", "text": "{}"},
    ]


def write_task(
    tasks: Path,
    task_id: str,
    conversation: list[dict[str, Any]],
    *,
    history: dict[str, Any] | None = None,
    first_ts: int = T0,
) -> Path:
    folder = tasks / task_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "api_conversation_history.json").write_bytes(orjson.dumps(conversation))
    (folder / "ui_messages.json").write_bytes(orjson.dumps(ui_messages("task", first_ts)))
    (folder / "task_metadata.json").write_bytes(orjson.dumps({"files_in_context": []}))
    if history is not None:
        (folder / "history_item.json").write_bytes(orjson.dumps(history))
    return folder


def write_cline(storage: Path) -> Path:
    """``saoudrizwan.claude-dev/tasks`` with a native-tools task, an XML-mode task and a
    task with only its UI log, and Cline's task list in ``state/taskHistory.json``."""
    tasks = storage / "saoudrizwan.claude-dev" / "tasks"
    write_task(tasks, CLINE_TASK, cline_native(), first_ts=int(CLINE_TASK))
    write_task(tasks, CLINE_XML_TASK, cline_xml(), first_ts=int(CLINE_XML_TASK))
    write_ui_task(tasks, CLINE_UI_TASK, ui_log(int(CLINE_UI_TASK)))
    write_task_history(tasks.parent, [
        history_item(CLINE_TASK, "Add a retry to the weather API client", CWD),
        history_item(CLINE_XML_TASK, "Why does the forecast show Kelvin?", "/home/dev/forecast"),
        history_item(CLINE_UI_TASK, "Add a retry with backoff to the client", UI_CWD),
    ])  # fmt: skip
    return tasks


UI_CWD: Final = "/home/dev/weather-ui"


def history_item(task_id: str, task: str, cwd: str) -> dict[str, Any]:
    """An item of Cline's task list (``HistoryItem``)."""
    return {
        "id": task_id, "ulid": f"01JTASK{task_id[-6:]}", "ts": int(task_id), "task": task,
        "tokensIn": 1200, "tokensOut": 300, "totalCost": 0.01, "size": 4096,
        "cwdOnTaskInitialization": cwd, "isFavorited": False, "modelId": "model-x",
    }  # fmt: skip


def write_task_history(root: Path, items: list[dict[str, Any]]) -> Path:
    """``<root>/state/taskHistory.json`` beside ``<root>/tasks``, as Cline writes it."""
    path = root / "state" / "taskHistory.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(items, option=orjson.OPT_INDENT_2))
    return path


def say(ts: int, kind: str, text: str | None = None, **more: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"ts": ts, "type": "say", "say": kind, **more}
    if text is not None:
        message["text"] = text
    return message


def ask(ts: int, kind: str, text: str, **more: Any) -> dict[str, Any]:
    return {"ts": ts, "type": "ask", "ask": kind, "text": text, **more}


def api_request(ts: int, request: str) -> dict[str, Any]:
    """``api_req_started``: the request as Cline shows it (its blocks as markdown)."""
    info = {"request": request, "tokensIn": 900, "tokensOut": 80, "cacheWrites": 0,
            "cacheReads": 0, "cost": 0.002}  # fmt: skip
    return say(ts, "api_req_started", orjson.dumps(info).decode())


def read_file(path: str) -> str:
    """A ``tool`` message's text: ``ClineSayTool`` as JSON (``content``: the full path)."""
    said = {"tool": "readFile", "path": path, "content": f"/home/dev/weather/{path}",
            "operationIsLocatedInWorkspace": True}  # fmt: skip
    return orjson.dumps(said).decode()


def ui_log(t0: int) -> list[dict[str, Any]]:
    """A task's ``ui_messages.json`` (``ClineMessage``s): the task, reasoning, text, two
    file reads answered by one API request, a command and its output in chunks, a
    question, the user's answer, an error and the completion."""
    question = {"question": "Retry on timeouts too?", "options": ["Yes", "No"]}
    return [
        say(t0, "task", "Add a retry with backoff to the client", images=[], files=[]),
        say(t0 + 5, "checkpoint_created", lastCheckpointHash="a1", isCheckpointCheckedOut=False),
        api_request(t0 + 10, "<task>\nAdd a retry with backoff to the client\n</task>"),
        say(t0 + 900, "reasoning", "The client calls get() once; a helper may exist.",
            partial=False),
        say(t0 + 950, "text", "Reading the client and the helpers.", partial=False),
        say(t0 + 960, "tool", read_file("client.py"), partial=False),
        say(t0 + 970, "tool", read_file("helpers.py"), partial=False),
        say(t0 + 980, "task_progress", "- [ ] Read the client\n- [ ] Add the retry"),
        api_request(t0 + 1000, "[read_file for 'client.py'] Result:\ndef fetch(): return get(URL)"
                    "\n\n[read_file for 'helpers.py'] Result:\ndef backoff(n): return 2 ** n"
                    "\n\n<environment_details>\n# Current Time\nnow\n</environment_details>"),
        ask(t0 + 2000, "command", "pytest -q tests/test_client.py"),
        ask(t0 + 2500, "command_output", "3 passed"),
        ask(t0 + 2600, "command_output", "in 0.21s"),
        api_request(t0 + 3000, "[execute_command for 'pytest -q tests/test_client.py'] Result:"
                    "\nCommand executed.\nOutput:\n3 passed\nin 0.21s"),
        ask(t0 + 4000, "followup", orjson.dumps(question).decode()),
        say(t0 + 9000, "user_feedback", "Yes, timeouts too", images=[], files=[]),
        say(t0 + 9005, "checkpoint_created", lastCheckpointHash="b2", isCheckpointCheckedOut=False),
        api_request(t0 + 9010, "[ask_followup_question for 'Retry on timeouts too?'] Result:"
                    "\n<answer>\nYes, timeouts too\n</answer>"),
        say(t0 + 9500, "error", "Diff edit failed: SEARCH block not found in client.py"),
        say(t0 + 9900, "completion_result", "Retries with exponential backoff, timeouts included."),
        ask(t0 + 9950, "completion_result", ""),
    ]  # fmt: skip


def write_ui_task(tasks: Path, task_id: str, messages: list[dict[str, Any]]) -> Path:
    """A task folder holding only ``ui_messages.json`` (no API history), last written at
    its last message's time."""
    folder = tasks / task_id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ui_messages.json"
    path.write_bytes(orjson.dumps(messages))
    last = messages[-1]["ts"] / 1000
    os.utime(path, (last, last))
    return folder


def write_roo(storage: Path) -> Path:
    """``rooveterinaryinc.roo-cline/tasks`` with a task and the sub-task it delegated."""
    tasks = storage / "rooveterinaryinc.roo-cline" / "tasks"
    write_task(
        tasks,
        ROO_TASK,
        roo(),
        history={
            "id": ROO_TASK,
            "number": 1,
            "ts": T0,
            "task": "Plan the caching layer",
            "workspace": CWD,
            "mode": "architect",
            "childIds": [ROO_CHILD],
        },
    )
    write_task(
        tasks,
        ROO_CHILD,
        roo(child=True),
        history={
            "id": ROO_CHILD,
            "number": 2,
            "ts": T0 + 60_000,
            "task": "Write the retry test",
            "workspace": CWD,
            "mode": "code",
            "parentTaskId": ROO_TASK,
        },
    )
    return tasks
