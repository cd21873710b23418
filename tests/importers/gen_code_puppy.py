"""Generated Code Puppy sessions, in the shapes ``code-puppy`` 0.0.946 writes
(``session_storage.build_envelope``: a versioned envelope of pydantic-ai 2.51 messages,
``json.dumps(indent=2)``): ``autosaves/<name>.json`` with its ``<name>_meta.json``, and a
sub-agent's ``subagent_sessions/<session id>.json`` with its ``.txt``. The text is our own.

- ``FIX``: an autosave (no title): thinking, a failing command, a read and an
  ``invoke_agent`` call in one response, their returns, a call whose arguments failed
  validation (a ``retry-prompt``), a prompt with an image;
- ``REVIEW``: a session named by the user, compacted: the summary (a ``system-prompt`` part
  of a request with no time), a kept prompt, a tool-availability change, the answer;
  ``review(compacted=False)`` is the same session before its compaction;
- ``AGENT``: the sub-agent the ``invoke_agent`` call ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

FIX: Final = "auto_session_20261130_091500_123456_4242"
REVIEW: Final = "checkout-review"
AGENT: Final = "qa-kitten-session-1a2b3c"
CWD: Final = "/home/dev/shop"
SUMMARY: Final = "We fixed the discount codes in pricing.py; the tests pass."


def _at(second: int) -> str:
    return f"2026-11-30T09:15:{second:02d}.000000Z"


def request(second: int | None, *parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "parts": list(parts),
        "timestamp": None if second is None else _at(second),
        "instructions": "Our own system prompt." if second is not None else None,
        "kind": "request",
        "run_id": "run-1",
        "metadata": None,
        "state": "complete",
    } | extra


def response(second: int, *parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "parts": list(parts),
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "model_name": "some-model",
        "timestamp": _at(second),
        "kind": "response",
        "provider_name": "openai",
        "finish_reason": "stop",
        "run_id": "run-1",
        "state": "complete",
    }


def prompt(text: Any, second: int) -> dict[str, Any]:
    return {"content": text, "timestamp": _at(second), "part_kind": "user-prompt"}


def text(content: str) -> dict[str, Any]:
    return {"content": content, "id": None, "part_kind": "text"}


def thinking(content: str) -> dict[str, Any]:
    return {"content": content, "id": "reasoning", "signature": None, "part_kind": "thinking"}


def call(tool: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"tool_name": tool, "args": json.dumps(args), "tool_call_id": call_id,
            "tool_kind": None, "part_kind": "tool-call"}  # fmt: skip


def returned(tool: str, content: Any, call_id: str, second: int, **extra: Any) -> dict[str, Any]:
    part = {"tool_name": tool, "content": content, "tool_call_id": call_id, "metadata": None,
            "timestamp": _at(second), "outcome": "success", "part_kind": "tool-return"}  # fmt: skip
    return part | extra


def fix() -> list[dict[str, Any]]:
    return [
        request(1, prompt("Fix the checkout total: discount codes are ignored.", 1)),
        response(
            2,
            thinking("Run the tests first."),
            text("Let me run the tests."),
            call("shell", {"command": "pytest -q"}, "call_1"),
        ),
        request(
            3,
            returned(
                "shell",
                {
                    "success": False,
                    "command": "pytest -q",
                    "exit_code": 1,
                    "stdout": "1 failed, 3 passed\n",
                    "stderr": "",
                    "error": "exited 1",
                },
                "call_1",
                3,
            ),
        ),
        response(
            4,
            call("read_file", {"file_path": f"{CWD}/pricing.py"}, "call_2"),
            call(
                "invoke_agent",
                {"agent_name": "qa-kitten", "prompt": "Check the discount rules."},
                "call_3",
            ),
        ),
        request(
            9,
            returned(
                "read_file",
                {"content": "def apply_codes(cart):\n    ...\n", "num_tokens": 9, "error": None},
                "call_2",
                5,
            ),
            returned(
                "invoke_agent",
                {
                    "response": "Discounts are never applied.",
                    "agent_name": "qa-kitten",
                    "session_id": AGENT,
                    "error": None,
                },
                "call_3",
                9,
            ),
        ),
        response(10, call("replace_in_file", {"file_path": f"{CWD}/pricing.py"}, "call_4")),
        request(
            11,
            {
                "tool_name": "replace_in_file",
                "tool_call_id": "call_4",
                "timestamp": _at(11),
                "content": [{"type": "missing", "loc": ["replacements"], "msg": "Field required"}],
                "part_kind": "retry-prompt",
            },
        ),
        response(12, text("total() never calls apply_codes(); patched it.")),
        request(
            13,
            prompt(
                [
                    "What is in this screenshot?",
                    {"data": "iVBORw0KGgo=", "media_type": "image/png", "kind": "binary"},
                ],
                13,
            ),
        ),
        response(14, text("An error dialog about the discount.")),
    ]


def review(*, compacted: bool = True) -> list[dict[str, Any]]:
    asked = request(30, prompt("Review the checkout change.", 30))
    before = [
        request(20, prompt("Summarise pricing.py.", 20)),
        response(21, text("It applies discount codes to a cart.")),
    ]
    if not compacted:
        return [*before, asked, response(31, text("It looks right."))]
    summary = {"content": f"Summary of previous conversation:\n\n{SUMMARY}",
               "timestamp": _at(29), "part_kind": "system-prompt"}  # fmt: skip
    delta = {"tools_added": ["grep"], "tool_call_id": None, "part_kind": "tool-availability-delta"}
    return [
        request(None, summary),
        before[0],  # the first prompt, kept
        asked,
        request(32, delta),
        response(33, text("It looks right, and the summary agrees.")),
    ]


def agent() -> list[dict[str, Any]]:
    return [
        request(6, prompt("Check the discount rules.", 6)),
        response(7, call("grep", {"search_string": "discount"}, "call_9")),
        request(8, returned("grep", {"matches": ["pricing.py:3"]}, "call_9", 8)),
        response(8, text("Discounts are never applied")),
        # The answer failed the agent's output check: the model is asked again.
        request(
            8,
            {
                "content": "End the answer with a full stop.",
                "tool_name": None,
                "tool_call_id": "retry-1",
                "timestamp": _at(8),
                "part_kind": "retry-prompt",
            },
        ),
        response(8, text("Discounts are never applied.")),
    ]


def envelope(messages: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"format": 2, "code_puppy": "0.0.946", "pydantic_ai": "2.51.0",
         "encoding": "pydantic-ai-messages", "messages": messages},
        indent=2,
    )  # fmt: skip


def write_review(home: Path, *, compacted: bool = True) -> Path:
    folder = home / ".code_puppy" / "autosaves"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{REVIEW}.json"
    path.write_text(envelope(review(compacted=compacted)))
    meta = {"session_name": REVIEW, "timestamp": "2026-11-30T10:15:33", "message_count": 5,
            "auto_saved": True, "scope_key": CWD}  # fmt: skip
    (folder / f"{REVIEW}_meta.json").write_text(json.dumps(meta, indent=2))
    return path


def write(home: Path) -> Path:
    """Both sessions and the sub-agent under ``<home>/.code_puppy``; that folder."""
    root = home / ".code_puppy"
    autosaves, agents = root / "autosaves", root / "subagent_sessions"
    autosaves.mkdir(parents=True, exist_ok=True)
    agents.mkdir(parents=True, exist_ok=True)
    (autosaves / f"{FIX}.json").write_text(envelope(fix()))
    meta = {"session_name": FIX, "timestamp": "2026-11-30T10:15:14", "message_count": 10,
            "auto_saved": True, "scope_key": CWD}  # fmt: skip
    (autosaves / f"{FIX}_meta.json").write_text(json.dumps(meta, indent=2))
    write_review(home)
    (agents / f"{AGENT}.json").write_text(envelope(agent()))
    info = {"session_id": AGENT, "agent_name": "qa-kitten",
            "initial_prompt": "Check the discount rules.",
            "created_at": "2026-11-30T10:15:09", "message_count": 4}  # fmt: skip
    (agents / f"{AGENT}.txt").write_text(json.dumps(info, indent=2))
    return root


EVERY: Final = "every-kind"
PLUGIN: Final = "plugin-history"


def every_writer_kind() -> list[dict[str, Any]]:
    """One of each part kind and user content kind pydantic-ai 2.51 serialises
    (``skips.WRITER_KINDS``), in one session."""
    media = [
        {"data": "iVBORw0KGgo=", "media_type": "image/png", "kind": "binary"},
        *({"url": f"https://example.invalid/a.{ext}", "kind": f"{kind}-url"}
          for kind, ext in (("image", "png"), ("audio", "mp3"), ("document", "pdf"),
                            ("video", "mp4"))),
        {"file_id": "file-1", "provider_name": "openai", "kind": "uploaded-file"},
        {"kind": "cache-point"},
    ]  # fmt: skip
    builtin = {"tool_name": "web_search", "tool_call_id": "b-1", "provider_name": "openai"}
    return [
        request(1, {"content": "Our own system prompt.", "timestamp": _at(1),
                    "part_kind": "system-prompt"},
                prompt(["Look these over.", *media], 1),
                {"content": "Hello", "transcript": "Hello", "part_kind": "speech"},
                {"tools_added": ["grep"], "part_kind": "tool-availability-delta"}),
        response(2, thinking("Plan the search."),
                 {"content": "", "id": "r-1", "signature": "sig", "part_kind": "thinking"},
                 text("Searching."),
                 builtin | {"args": {"query": "ledger"}, "part_kind": "builtin-tool-call"},
                 builtin | {"content": {"results": ["a page"]},
                            "part_kind": "builtin-tool-return"},
                 call("read_file", {"file_path": "a.py"}, "call_1"),
                 {"content": "Earlier turns, summarised.", "provider_name": "anthropic",
                  "part_kind": "compaction"},
                 {"content": "", "id": "c-1", "provider_name": "openai",
                  "part_kind": "compaction"},
                 {"content": {"data": "iVBORw0KGgo=", "media_type": "image/png",
                              "kind": "binary"}, "part_kind": "file"},
                 {"content": "Hi", "transcript": "Hi", "part_kind": "speech"}),
        request(3, returned("read_file", {"content": "x = 1\n"}, "call_1", 3)),
        response(4, call("read_file", {}, "call_2")),
        request(5, {"tool_name": "read_file", "tool_call_id": "call_2", "timestamp": _at(5),
                    "content": "file_path is required", "part_kind": "retry-prompt"}),
        response(6, text("Done.")),
    ]  # fmt: skip


def write_every_writer_kind(home: Path) -> Path:
    """``EVERY`` and a plug-in's plain JSON history under ``<home>/.code_puppy/autosaves``."""
    folder = home / ".code_puppy" / "autosaves"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{EVERY}.json").write_text(envelope(every_writer_kind()))
    plain = {"format": 2, "code_puppy": "0.0.946", "encoding": "json",
             "messages": [{"role": "user", "content": "a plug-in's own shape"}]}  # fmt: skip
    (folder / f"{PLUGIN}.json").write_text(json.dumps(plain, indent=2))
    return folder
