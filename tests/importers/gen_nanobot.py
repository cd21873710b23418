"""Generated nanobot sessions, in the shapes ``nanobot-ai`` 0.3.5 writes
(``session/manager.py`` ``_save_unlocked`` and ``save_runtime_checkpoint``, ``agent/loop.py``
``_save_turn``, ``session/recovery.py``, ``agent/subagent.py``): under
``~/.nanobot/sessions/<workspace id>/`` a ``.workspace`` marker and one JSON Lines file per
chat key (base64url, no padding): the metadata line, a provider state line, the messages
with local times (a failing command, a missing file, a spawned sub-agent and its report, an
image, a working-memory summary's hidden marker, a call an interrupt stopped as the next run
restores it); a scheduled job's turn; a second chat with its turn in flight in a runtime
checkpoint. The text is
our own."""

from __future__ import annotations

import base64
import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

T0: Final = datetime(2026, 11, 30, 9, 15, 0, 250000)  # local, as datetime.now() writes it
WORKSPACE: Final = "/work/shop"
SPACE_ID: Final = "3f2a9c0d41b7e6a85c1d2e3f4a5b6c7d"
DIRECT: Final = "cli:direct"
OTHER: Final = "telegram:4242"
CRON: Final = "cron:7f3e9a10"
CRON_PROMPT: Final = (
    "The scheduled time has arrived. Execute this scheduled cron job now and report the result"
    " to the user in the same session.\n\nCron job: check the nightly build"
)
TITLE: Final = "Discount codes"
SUMMARY_MARK: Final = "Continue the active task from the working-memory checkpoint above."
INTERRUPTED: Final = "Error: Task interrupted before this tool finished."


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


def file_name(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=") + ".jsonl"


def header(key: str, start: float, end: float, **metadata: Any) -> dict[str, Any]:
    return {"_type": "metadata", "key": key, "created_at": at(start), "updated_at": at(end),
            "metadata": metadata, "last_archived": 0, "last_consolidated": 0}  # fmt: skip


def user(text: object, t: float) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": at(t)}


def call(call_id: str, name: str, **arguments: object) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip


def assistant(text: str, t: float, *calls: dict[str, Any], thinking: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "timestamp": at(t)}
    if calls:
        message["tool_calls"] = list(calls)
    if thinking:
        message["reasoning_content"] = thinking
    return message


def tool(call_id: str, name: str, text: str, t: float) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": text,
            "timestamp": at(t)}  # fmt: skip


def direct_messages() -> list[dict[str, Any]]:
    return [
        user("The checkout total ignores discount codes.", 1),
        assistant(
            "Run the tests first.",
            3,
            call("call_1", "exec", command="pytest -q"),
            thinking="Start from the tests.",
        ),
        tool("call_1", "exec", "STDERR:\n1 failed\n\n\nExit code: 1", 3),
        assistant("", 3, call("call_2", "read_file", path=f"{WORKSPACE}/NOTES.md")),
        tool("call_2", "read_file", f"Error: File not found: {WORKSPACE}/NOTES.md", 3),
        assistant(
            "A helper will check the coupons.",
            3,
            call("call_3", "spawn", task="Find where coupons are parsed.", label="coupons"),
        ),
        tool(
            "call_3",
            "spawn",
            "Subagent [coupons] started (id: 5e1f0a2b). I'll notify you when it completes.",
            3,
        ),
        assistant("Waiting for the helper.", 3, thinking=""),
        # The sub-agent's report, injected for the model when it finished.
        {
            "role": "assistant",
            "content": "[Subagent 'coupons' completed]\n\nTask: Find where "
            "coupons are parsed.\n\nResult:\ncart.parse_codes()",
            "timestamp": at(9),
            "sender_id": "subagent",
            "injected_event": "subagent_result",
            "subagent_task_id": "5e1f0a2b",
        },
        assistant("Fixed: total() applies parse_codes().", 10, thinking="Call it in total()."),
        user(
            [
                {"type": "text", "text": "Does the receipt look right?"},
                {"type": "image_url", "image_url": {"url": "https://example.invalid/r.png"}},
            ],
            20,
        ),
        # The working-memory summary's marker, inserted before the turn it was made for.
        {"role": "user", "content": SUMMARY_MARK, "_hidden_history": True, "timestamp": at(21)},
        assistant("Yes: the discount line is there.", 22),
        user("Run the slow checks too.", 30),
        # Interrupted; the next run restored the turn from its checkpoint.
        assistant("Running the slow checks.", 31, call("call_4", "exec", command="make slow")),
        tool("call_4", "exec", INTERRUPTED, 60),
        user("What did we change?", 61),
        assistant("total() applies the discount codes.", 62),
    ]


def inflight(*, saved: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The second chat: a prompt whose turn is in flight (its checkpoint: the model's message
    with two calls, one finished), or (``saved``) the same turn saved."""
    messages = [user("Ship the fix to staging.", 100)]
    calls = [call("call_8", "exec", command="make deploy"),
             call("call_9", "exec", command="make smoke")]  # fmt: skip
    said = {"role": "assistant", "content": "Deploying now.", "tool_calls": calls,
            "reasoning_content": "Deploy, then smoke-test."}  # fmt: skip
    if saved:
        messages += [
            {**said, "timestamp": at(130)},
            tool("call_8", "exec", "deployed\n\n\nExit code: 0", 130),
            tool("call_9", "exec", "smoke ok\n\n\nExit code: 0", 130),
            assistant("Staging is up.", 130),
        ]
        return messages, None
    checkpoint = {
        "version": 1, "session_key": OTHER, "base_updated_at": at(100),
        "base_message_count": len(messages),
        "checkpoint": {
            "phase": "awaiting_tools", "iteration": 0, "model": "gpt-5",
            "assistant_message": said,
            "completed_tool_results": [
                {"role": "tool", "tool_call_id": "call_8", "name": "exec",
                 "content": "deployed\n\n\nExit code: 0"}],
            "pending_tool_calls": [calls[1]],
        },
        "provider_state": None,
    }  # fmt: skip
    return messages, checkpoint


def write_file(path: Path, key: str, messages: list[dict[str, Any]], **metadata: Any) -> None:
    state = {"_type": "provider_state", "state": {"response_id": "resp_1"}}
    lines = [header(key, 0, 200, **metadata), state, *messages]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))


def write(home: Path, *, saved: bool = False) -> Path:
    """The sessions folder ``<home>/.nanobot/sessions``; ``saved``: the second chat's turn
    saved (its checkpoint gone)."""
    root = home / ".nanobot" / "sessions"
    space = root / SPACE_ID
    space.mkdir(parents=True, exist_ok=True)
    (space / ".workspace").write_text(WORKSPACE + "\n")
    summary = {"text": "We looked at discount codes.", "last_active": at(20)}
    write_file(space / file_name(DIRECT), DIRECT, direct_messages(), title=TITLE,
               _last_summary=summary)  # fmt: skip
    cron = [user(CRON_PROMPT, 300), assistant("The nightly build is green.", 302)]
    write_file(space / file_name(CRON), CRON, cron)
    messages, checkpoint = inflight(saved=saved)
    other = space / file_name(OTHER)
    write_file(other, OTHER, messages)
    pending = other.with_name(other.name.removesuffix(".jsonl") + ".checkpoint.json")
    if checkpoint is None:
        pending.unlink(missing_ok=True)
    else:
        pending.write_text(json.dumps(checkpoint))
        # Written after the file (nanobot ignores an older one): the file a second before.
        stamp = pending.stat().st_mtime - 1
        os.utime(other, (stamp, stamp))
    return root
