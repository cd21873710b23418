"""A generated workspace that looks like imported agent histories (what real Claude Code
and Aider imports look like to the UI, written by our own code): sessions nobody titled
whose first prompt is long and follows harness text, tool calls with a command, tool
results of 5 to 80 KB with many lines, a match far past any preview cut, and literal
brackets (markdown checkboxes, pip's ``[end of output]``) next to the words searched."""

from __future__ import annotations

import random
from typing import Any, Final

HISTORY: Final = "/work/history-app"
SESSIONS: Final = ("s-hist-one", "s-hist-two", "s-hist-three")
CHILD: Final = "s-hist-two"  # forked from the first
# A word only in tool output, past the first 3,000 characters of its event.
DEEP_WORD: Final = "zebrafishtimeout"
DEEP_SEQ: Final = 6
# A word next to literal brackets in an assistant message.
BRACKET_WORD: Final = "ledger"
FIRST_PROMPT: Final = (
    "the stop hook is a bust: it fires twice when the agent ends its turn and then the"
    " second run clobbers the transcript file, please find out why the hook runs twice and"
    " make it idempotent, and while you are at it check whether the retry logic in"
)
HARNESS: Final = "<system-reminder>The user opened the file src/hooks.py</system-reminder>"


def _output(rng: random.Random, size: int, deep: bool) -> str:
    """Tool output of about ``size`` characters, one log line each; ``deep``: the searched
    word stands on a line past the first 3,000 characters."""
    lines: list[str] = []
    length = 0
    while length < size:
        number = len(lines)
        line = (
            f"tests/test_hooks.py::test_case_{number:04d} PASSED"
            f" [{rng.randint(1, 99):3d}%] duration={rng.random():.4f}s"
        )
        if deep and number == 60:
            line = f"E   RuntimeError: {DEEP_WORD} in stop hook after 30s (hook ran twice)"
        lines.append(line)
        length += len(line) + 1
    lines.append("[end of output]")
    return "\n".join(lines)


def _event(sid: str, seq: int, kind: str, surface: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": sid,
        "seq": seq,
        "event_id": f"e-{sid}-{seq}",
        "type": kind,
        "surface": surface,
        "time": f"2026-11-2{SESSIONS.index(sid)}T09:{seq:02d}:00.000Z",
        "payload": {**payload, "source_type": "generated"},
    }


def history_events() -> list[dict[str, Any]]:
    rng = random.Random(33)
    events: list[dict[str, Any]] = []
    for number, sid in enumerate(SESSIONS):
        parent = SESSIONS[0] if sid == CHILD else None
        prompt = f"{FIRST_PROMPT} session {number} " + "with more context. " * 30
        start = {"cwd": HISTORY, "parent_session_id": parent, "source": "claude-code"}
        events += [
            _event(sid, 1, "session/start", "system", start),
            _event(sid, 2, "message/user", "user", {"text": HARNESS}),
            _event(sid, 3, "message/user", "user", {"text": prompt}),
            _event(
                sid,
                4,
                "message/assistant",
                "assistant",
                {
                    "text": f"Plan:\n- [X] read the {BRACKET_WORD} code\n- [ ] run the tests\n"
                    "\nThe checkbox above is markdown, [X] is not a match."
                },
            ),
            _event(
                sid,
                5,
                "tool/call",
                "assistant",
                {
                    "tool": "Bash",
                    "input": {"command": "pytest -q tests/test_hooks.py", "description": "Run"},
                },
            ),
            _event(
                sid,
                DEEP_SEQ,
                "tool/result",
                "tool",
                {"tool": "Bash", "output": _output(rng, 5_000 + number * 37_000, deep=True)},
            ),
            _event(
                sid,
                7,
                "message/assistant",
                "assistant",
                {"text": "The hook ran twice.\nFixed it by checking the marker file first."},
            ),
        ]
    return events
