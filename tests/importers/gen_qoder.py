"""A generated Qoder CLI history (``~/.qoder/projects``), made-up content.

The shapes follow Qoder CLI 1.1.52's writer (``bundle/qodercli.js`` of
``@qoder-ai/qodercli``): Claude Code's transcript records (``fixture_gen._Transcript``) with
Qoder's ``version`` and ``entrypoint``, its ``Agent`` tool and the sub-agent's
``<session>/subagents/agent-<id>.jsonl``, ``compact_boundary`` with the compact summary, a
failing tool, ``ai-title`` written again with the metadata at the tail, and Qoder's
bookkeeping records (``last-prompt``, ``active-leaf``, ``mode``, ``token-stats``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from tests.importers.fixture_gen import _Transcript, render

CWD: Final = "/home/dev/kiln"
SLUG: Final = "-home-dev-kiln"
RAW: Final = "9d000000-0000-4000-8000-00000000a001"
AGENT: Final = "a7c1"
MAIN: Final = f"qoder-{RAW}"
CHILD: Final = f"qoder-{RAW}-agent-{AGENT}"
TITLE: Final = "Kiln temperature ramp fix"
PROMPT: Final = "the kiln ramp overshoots at 600 degrees"
EVENTS: Final = {MAIN: 11, CHILD: 6}
SKIPPED: Final = {
    "record:last-prompt": 2, "record:active-leaf": 1, "record:mode": 1, "record:token-stats": 1,
    "record:ai-title:repeated": 1, "system:compact_boundary (folded into the compaction)": 1,
    "record:hologram": 1,
}  # fmt: skip


def _qoder(t: _Transcript) -> _Transcript:
    """Qoder's own stamp on every record: its version, its entrypoint, its cwd."""
    for record in t.records:
        if "uuid" in record:
            record.update({"version": "1.1.52", "entrypoint": "cli", "cwd": CWD})
    return t


def main_session() -> list[dict[str, Any]]:
    t = _Transcript(RAW, "2026-11-02T09", "0d0d0d0d-0000-4000-8000")
    t.raw({"type": "mode", "sessionId": RAW, "mode": "default"})
    t.user(PROMPT)
    t.assistant([{"type": "text", "text": "Running the ramp test."},
                 {"type": "tool_use", "id": "call_ramp", "name": "Bash",
                  "input": {"command": "pytest tests/test_ramp.py"}}])  # fmt: skip
    t.user([{"type": "tool_result", "tool_use_id": "call_ramp", "is_error": True,
             "content": "FAILED test_ramp_600 - overshoot 14 C"}])  # fmt: skip
    t.assistant([{"type": "tool_use", "id": "call_agent", "name": "Agent", "input": {
        "subagent_type": "general-purpose", "description": "Read the PID gains",
        "prompt": "Find the PID gains used above 500 C."}}])  # fmt: skip
    t.user([{"type": "tool_result", "tool_use_id": "call_agent", "content": "Kp 8, Ki 0.4."}],
           toolUseResult={"agentId": AGENT, "status": "completed"})  # fmt: skip
    t.raw({"type": "ai-title", "sessionId": RAW, "aiTitle": TITLE})
    t.raw({"type": "last-prompt", "sessionId": RAW, "lastPrompt": PROMPT})
    boundary = t.system("compact_boundary", content="Conversation compacted",
                        compactMetadata={"trigger": "auto", "preTokens": 91000})  # fmt: skip
    t.user("This session is being continued from a previous conversation that ran out of "
           "context. Summary: the ramp overshoots; Ki is too high above 500 C.",
           isCompactSummary=True, logicalParentUuid=boundary)  # fmt: skip
    t.user("lower Ki above 500 C")
    t.assistant([{"type": "text", "text": "Ki is now 0.25 above 500 C; the ramp test passes."}])
    # The metadata again at the tail, as Qoder writes it when it changes.
    t.raw({"type": "ai-title", "sessionId": RAW, "aiTitle": TITLE})
    t.raw({"type": "last-prompt", "sessionId": RAW, "lastPrompt": "lower Ki above 500 C"})
    t.raw({"type": "active-leaf", "sessionId": RAW, "leafUuid": t.parent, "explicit": False})
    t.raw({"type": "token-stats", "sessionId": RAW, "promptTokenCount": 5120,
           "timestamp": 1793610000000})  # fmt: skip
    t.raw({"type": "hologram", "sessionId": RAW})  # a kind no version writes: drift
    return _qoder(t).records


def agent_session() -> list[dict[str, Any]]:
    a = _Transcript(RAW, "2026-11-02T09", "0d0d0d0d-0000-4000-9000", agent=AGENT)
    a.minute = 4
    a.user("Find the PID gains used above 500 C.")
    a.assistant([{"type": "tool_use", "id": "call_grep", "name": "Grep",
                  "input": {"pattern": "Ki", "path": "kiln/pid.py"}}])  # fmt: skip
    a.user([{"type": "tool_result", "tool_use_id": "call_grep", "content": "Kp = 8\nKi = 0.4"}])
    a.assistant([{"type": "text", "text": "Kp 8, Ki 0.4."}])
    return _qoder(a).records


def write(home: Path) -> Path:
    """The history under ``home/.qoder/projects``; returns that folder."""
    projects = home / ".qoder" / "projects"
    folder = projects / SLUG
    (folder / RAW / "subagents").mkdir(parents=True)
    (folder / f"{RAW}.jsonl").write_bytes(render(main_session()))
    (folder / RAW / "subagents" / f"agent-{AGENT}.jsonl").write_bytes(render(agent_session()))
    return projects
