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
# A workspace of many small sessions, so a search has more than one page of results.
MANY: Final = "/work/history-many"
MANY_SESSIONS: Final = 27
MANY_WORD: Final = "rollout"
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


def _event(
    sid: str, seq: int, kind: str, surface: str, payload: dict[str, Any], day: int = 0
) -> dict[str, Any]:
    return {
        "session_id": sid,
        "seq": seq,
        "event_id": f"e-{sid}-{seq}",
        "type": kind,
        "surface": surface,
        "time": f"2026-11-{20 + day:02d}T09:{seq:02d}:00.000Z",
        "payload": {**payload, "source_type": "generated"},
    }


def history_events() -> list[dict[str, Any]]:
    rng = random.Random(33)
    events: list[dict[str, Any]] = []
    for number in range(MANY_SESSIONS):
        sid = f"s-many-{number:02d}"
        start = {"cwd": MANY, "parent_session_id": None, "source": "aider"}
        prompt = f"plan the {MANY_WORD} of service {number} to the staging cluster"
        events += [
            _event(sid, 1, "session/start", "system", start, day=number % 9),
            _event(sid, 2, "message/user", "user", {"text": prompt}, day=number % 9),
        ]
    for number, sid in enumerate(SESSIONS):
        parent = SESSIONS[0] if sid == CHILD else None
        prompt = f"{FIRST_PROMPT} session {number} " + "with more context. " * 30
        start = {"cwd": HISTORY, "parent_session_id": parent, "source": "claude-code"}
        plan = (
            f"Plan:\n- [X] read the {BRACKET_WORD} code\n- [ ] run the tests\n"
            "\nThe checkbox above is markdown, [X] is not a match."
        )
        command = {"command": "pytest -q tests/test_hooks.py", "description": "Run"}
        output = _output(rng, 5_000 + number * 37_000, deep=True)
        done = "The hook ran twice.\nFixed it by checking the marker file first."
        kinds: list[tuple[str, str, dict[str, Any]]] = [
            ("session/start", "system", start),
            ("message/user", "user", {"text": HARNESS}),
            ("message/user", "user", {"text": prompt}),
            ("message/assistant", "assistant", {"text": plan}),
            ("tool/call", "assistant", {"tool": "Bash", "input": command}),
            ("tool/result", "tool", {"tool": "Bash", "output": output}),
            ("message/assistant", "assistant", {"text": done}),
        ]
        events += [
            _event(sid, seq, kind, surface, payload, day=number)
            for seq, (kind, surface, payload) in enumerate(kinds, start=1)
        ]
    return events
