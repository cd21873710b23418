"""Generated Nanocoder sessions: ``sessions/<uuid>.json`` under its data folder, beside the
``sessions.json`` index, each the document ``SessionManager.saveSession`` writes (indented,
the header's keys first, then ``messages``: the OpenAI-style history without the system
prompt): a fix with reasoning, tool calls and their results (a failing command, a refused
read, a sub-agent, an edit), a nudge Nanocoder adds itself, a ``!command``'s output and an
image; a session renamed over ACP (``titleManuallySet``) with a cancelled command; and the
fix as a compaction leaves it (``compacted``: the summary, the kept messages, a new turn),
which autosave titles by the summary. The text is our own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

FIX: Final = "0b5e7c1a-2f3d-4e6a-9b8c-1d2e3f4a5b6c"
RENAMED: Final = "7c9d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
CWD: Final = "/home/dev/checkout"
PROMPT: Final = "The checkout total ignores discount codes. Fix it, please."
SUMMARY: Final = (
    "<conversation-summary>\nThe user asked to fix discount codes in the checkout total; "
    "total() now calls apply_codes() and the tests pass.\n</conversation-summary>\n\n(The "
    "above is an automated summary of earlier conversation. Continue from the most recent "
    "message.)"
)


def call(call_id: str, name: str, **arguments: object) -> dict[str, Any]:
    return {"id": call_id, "function": {"name": name, "arguments": arguments}}


def tool(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "name": name}


def fix() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": "Running the tests first.",
            "tool_calls": [call("call_tests", "execute_bash", command="pytest -q")],
            "reasoning": "Start from the failing test.",
        },
        tool("call_tests", "execute_bash", "EXIT_CODE: 1\nSTDOUT:\n1 failed, 3 passed\n"),
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [call("call_notes", "read_file", path=f"{CWD}/NOTES.md")],
        },
        tool(
            "call_notes", "read_file", f'⚒ Validation failed: File "{CWD}/NOTES.md" does not exist'
        ),
        {
            "role": "assistant",
            "content": "I'll have a helper look at pricing.py.",
            "tool_calls": [
                call(
                    "call_helper",
                    "agent",
                    subagent_type="explore",
                    description="Where are discount codes applied?",
                )
            ],
        },
        tool("call_helper", "agent", "apply_codes() in pricing.py; total() never calls it."),
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Please continue with the task."},
        {
            "role": "assistant",
            "content": "Patching total().",
            "tool_calls": [
                call(
                    "call_edit",
                    "string_replace",
                    path=f"{CWD}/pricing.py",
                    old_str="return sum(cart)",
                    new_str="return sum(apply_codes(cart))",
                ),
            ],
        },
        {
            **tool("call_edit", "string_replace", "Successfully replaced content at line 9."),
            "structuredContent": {"path": f"{CWD}/pricing.py", "line": 9},
        },
        {"role": "assistant", "content": "Fixed: total() applies discount codes."},
        {"role": "user", "content": "Bash command output:\n```\n$ git status\nM pricing.py\n```"},
        {
            "role": "user",
            "content": "Does this screenshot match?",
            "images": [{"data": "iVBORw0KGgo=", "mediaType": "image/png", "source": "cli"}],
        },
        {"role": "assistant", "content": "Yes, the total shows the discount."},
    ]


def compacted() -> list[dict[str, Any]]:
    """The fix after an auto-compaction: the summary, the last two messages kept, a turn."""
    return [
        {"role": "user", "content": SUMMARY},
        *fix()[-2:],
        {"role": "user", "content": "Add a test for expired codes."},
        {"role": "assistant", "content": "Added test_expired_codes."},
    ]


def renamed() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Run the slow integration suite."},
        {
            "role": "assistant",
            "content": "Starting it.",
            "tool_calls": [call("call_slow", "execute_bash", command="make integration")],
        },
        tool("call_slow", "execute_bash", "Error: Cancelled via AbortSignal\n"),
        {
            "role": "assistant",
            "content": "Again, with a shorter timeout.",
            "tool_calls": [call("call_again", "execute_bash", command="make integration-fast")],
        },
        tool("call_again", "execute_bash", "Tool execution was cancelled by the user."),
        {"role": "user", "content": "Never mind, what's left to do?"},
        {"role": "assistant", "content": "Only the release notes."},
    ]


def document(
    session_id: str, messages: list[dict[str, Any]], *, created: str, accessed: str,
    title: str | None = None, manual: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """A session as saveSession writes it (autosave titles by the last user message)."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    auto = users[-1][:50] + ("..." if len(users[-1]) > 50 else "")
    doc: dict[str, Any] = {
        "id": session_id,
        "title": title or auto,
        "createdAt": created,
        "lastAccessedAt": accessed,
        "messageCount": len(messages),
        "provider": "local",
        "model": "qwen3-coder",
        "workingDirectory": CWD,
    }
    if manual:
        doc["titleManuallySet"] = True
    return doc | {"messages": messages}


def write(home: Path, *, upto: int | None = None, compact: bool = False) -> Path:
    """The sessions under ``<home>/.local/share/nanocoder/sessions``; ``upto``: only that
    many messages of the fix (``watch``: a later call writes the rest); ``compact``: the
    fix as its compaction rewrote it."""
    folder = home / ".local" / "share" / "nanocoder" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    messages = compacted() if compact else fix()[:upto]
    docs = [
        document(FIX, messages, created="2026-11-30T09:15:00.000Z",
                 accessed="2026-11-30T09:21:30.000Z" if compact else "2026-11-30T09:18:00.000Z"),
        document(RENAMED, renamed(), created="2026-11-30T10:00:00.000Z",
                 accessed="2026-11-30T10:04:00.000Z", title="Integration run", manual=True),
    ]  # fmt: skip
    for doc in docs:
        (folder / f"{doc['id']}.json").write_text(json.dumps(doc, indent=2))
    index = [{k: v for k, v in doc.items() if k != "messages"} for doc in docs]
    (folder / "sessions.json").write_text(json.dumps(index, indent=2))
    return folder
