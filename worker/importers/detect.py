"""Which format a file is in (``--format auto``), and which files a path stands for."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import orjson

from worker.importers import aider, claude_code, codex

FORMATS: Final = ("events", "claude-code", "codex", "aider")
AIDER_FILE: Final = ".aider.chat.history.md"
# Lines read to decide: the first records of a Claude Code file may be snapshots or titles.
SNIFF_LINES: Final = 20


def detect(path: Path) -> str | None:
    """The format of ``path`` from its first lines, or None when none fits."""
    if path.name == AIDER_FILE:
        return "aider"
    try:
        with path.open("rb") as fh:
            head = [fh.readline() for _ in range(SNIFF_LINES)]
    except OSError:
        return None
    for raw in head:
        line = raw.strip()
        if not line:
            continue
        if aider.looks_like(line.decode("utf-8", "replace")):
            return "aider"
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if {"session_id", "seq", "type", "surface"} <= record.keys():
            return "events"
        if codex.looks_like(record):
            return "codex"
        if claude_code.looks_like(record):
            return "claude-code"
    return None


def default_paths(fmt: str) -> list[Path]:
    """Where the agent keeps its sessions when no path is given."""
    if fmt == "claude-code":
        base = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
        return [Path(base) / "projects"]
    if fmt == "codex":
        base = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        return [Path(base) / "sessions"]
    return []


def expand(paths: list[Path], fmt: str) -> Iterator[Path]:
    """Files under ``paths``, in an order that puts a transcript before its sub-agents'."""
    seen: set[Path] = set()
    for path in paths:
        files = [path] if path.is_file() else sorted(_files_under(path, fmt), key=str)
        for file in files:
            if file not in seen:
                seen.add(file)
                yield file


def _files_under(root: Path, fmt: str) -> Iterator[Path]:
    if not root.is_dir():
        return
    if fmt == "aider":
        yield from root.rglob(AIDER_FILE)
        return
    for file in root.rglob("*.jsonl"):
        # Claude Code's internal context-compression agents repeat the main transcript.
        if fmt in ("claude-code", "auto") and file.name.startswith("agent-acompact-"):
            continue
        yield file
    if fmt == "auto":
        yield from root.rglob(AIDER_FILE)
