"""Paths and ids of the hand-written fixtures (no real transcript is copied here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.base import Outgoing

FIXTURES: Final = Path(__file__).parent / "fixtures"
CLAUDE_DIR: Final = FIXTURES / "claude-code"
CLAUDE_SESSION: Final = "1c0e6a52-7f3b-4d1e-9a2b-3c4d5e6f7a81"
CLAUDE_MAIN: Final = CLAUDE_DIR / "-home-dev-shop" / f"{CLAUDE_SESSION}.jsonl"
CLAUDE_AGENT: Final = f"{CLAUDE_SESSION}-agent-a1b2c3d"
CLAUDE_AGENT_FILE: Final = (
    CLAUDE_DIR / "-home-dev-shop" / CLAUDE_SESSION / "subagents" / "agent-a1b2c3d.jsonl"
)
CLAUDE_SIDE: Final = f"{CLAUDE_SESSION}-side-0000aaaa-0000-4000-8000-0000000000b1"
CODEX_SESSION: Final = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
CODEX_DIR: Final = FIXTURES / "codex"
CODEX_FILE: Final = (
    CODEX_DIR / "2026" / "11" / "30" / f"rollout-2026-11-30T11-00-00-{CODEX_SESSION}.jsonl"
)
AIDER_FILE: Final = FIXTURES / "aider" / "shop" / ".aider.chat.history.md"
WORKSPACE: Final = "/home/dev/shop"


def bodies(outs: list[Outgoing]) -> list[dict[str, Any]]:
    return [orjson.loads(out.body) for out in outs]


def by_session(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        grouped.setdefault(event["session_id"], []).append(event)
    return grouped
