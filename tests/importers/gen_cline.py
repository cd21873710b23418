"""Generated Cline and Roo Code task folders: ``tasks/<id>/`` with the files each writes.

Cline: ``api_conversation_history.json`` (Anthropic-style messages, no times; older
tasks in the XML tool mode, newer with native ``tool_use``/``tool_result``),
``ui_messages.json`` and ``task_metadata.json``. Roo Code adds ``ts`` to every message,
``isSummary`` to a condensed context's summary and a ``history_item.json`` with the
workspace and the parent task. The text is our own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CLINE_TASK: Final = "1764000000000"  # Cline's task ids are the start in milliseconds
CLINE_XML_TASK: Final = "1764000100000"
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
    """``saoudrizwan.claude-dev/tasks`` with a native-tools task and an XML-mode task."""
    tasks = storage / "saoudrizwan.claude-dev" / "tasks"
    write_task(tasks, CLINE_TASK, cline_native(), first_ts=int(CLINE_TASK))
    write_task(tasks, CLINE_XML_TASK, cline_xml(), first_ts=int(CLINE_XML_TASK))
    return tasks


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
