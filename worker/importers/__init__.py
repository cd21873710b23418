"""Importers: agent session files (ours, Claude Code, Codex, Aider) in, session events out.

Each format is one module with a converter: source lines in, event bodies out, no NATS.
``pipeline`` drives a converter over a file and ``publish`` sends what it produced: the
importers are publishers on the SESSIONS stream, like any agent runtime.
"""

from __future__ import annotations

from datetime import tzinfo
from pathlib import Path

from contracts.limits import MAX_EVENT_BYTES
from worker.importers.aider import AiderConverter
from worker.importers.base import Converter, SpawnLinks
from worker.importers.claude_code import ClaudeCodeConverter
from worker.importers.codex import CodexConverter
from worker.importers.events import EventsConverter


def make_converter(
    fmt: str,
    path: Path,
    *,
    max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None,
    links: SpawnLinks | None = None,
) -> Converter:
    if fmt == "events":
        return EventsConverter(path, max_event_bytes=max_event_bytes)
    if fmt == "claude-code":
        return ClaudeCodeConverter(path, links=links)
    if fmt == "codex":
        return CodexConverter(path)
    if fmt == "aider":
        return AiderConverter(path, assume_tz=assume_tz)
    raise ValueError(f"unknown format {fmt!r}")
