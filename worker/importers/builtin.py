"""The built-in formats as importers (registered in ``pyproject.toml`` like any plug-in):
where each agent keeps its files, how a file is recognised, and its converter."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Final

from worker.importers import aider, claude_code, codex
from worker.importers.aider import AiderConverter
from worker.importers.base import Converter
from worker.importers.claude_code import ClaudeCodeConverter
from worker.importers.codex import CodexConverter
from worker.importers.events import EventsConverter
from worker.importers.plugin import ConvertOptions, Importer, json_objects

_CODEX_INDEXES: Final = frozenset({"session_index.jsonl", "history.jsonl"})
_EVENT_FIELDS: Final = frozenset({"session_id", "seq", "type", "surface"})


def home_dir(variable: str, default: str) -> Path:
    """``$variable`` when set, else ``~/<default>``: where an agent keeps its state."""
    return Path(os.environ.get(variable) or Path.home() / default)


class EventsImporter(Importer):
    name: ClassVar[str] = "events"
    help: ClassVar[str] = "our own session events, one JSON object per line"
    detect_order: ClassVar[int] = 0

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return any(record.keys() >= _EVENT_FIELDS for record in json_objects(head))

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return EventsConverter(path, max_event_bytes=options.max_event_bytes)


class CodexImporter(Importer):
    name: ClassVar[str] = "codex"
    help: ClassVar[str] = "OpenAI Codex CLI rollouts ($CODEX_HOME/sessions, archived_sessions)"
    env_vars: ClassVar[tuple[str, ...]] = ("CODEX_HOME",)
    detect_order: ClassVar[int] = 10

    def default_locations(self) -> list[Path]:
        # Archiving a thread moves its rollout from sessions/ to archived_sessions/.
        home = home_dir("CODEX_HOME", ".codex")
        return [home / "sessions", home / "archived_sessions"]

    def accepts(self, path: Path) -> bool:
        # $CODEX_HOME also holds the thread-name index and the prompt history.
        return path.name not in _CODEX_INDEXES

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return any(codex.looks_like(record) for record in json_objects(head))

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return CodexConverter(path, links=options.links)


class ClaudeCodeImporter(Importer):
    name: ClassVar[str] = "claude-code"
    help: ClassVar[str] = "Claude Code transcripts ($CLAUDE_CONFIG_DIR/projects)"
    env_vars: ClassVar[tuple[str, ...]] = ("CLAUDE_CONFIG_DIR",)
    detect_order: ClassVar[int] = 20

    def default_locations(self) -> list[Path]:
        return [home_dir("CLAUDE_CONFIG_DIR", ".claude") / "projects"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return any(claude_code.looks_like(record) for record in json_objects(head))

    def accepts(self, path: Path) -> bool:
        # Claude Code's internal context-compression agents repeat the main transcript; a
        # workflow run's journal is its runner's bookkeeping (each agent started, and its
        # result, which its own transcript ends with), no transcript.
        if path.name == "journal.jsonl" and path.parent.parent.name == "workflows":
            return False
        return not path.name.startswith("agent-acompact-")

    def files(self, root: Path) -> list[Path]:
        """A project's transcripts in the order their sessions started (a session may
        answer a call the one before it left open), each followed by its sub-agents'."""
        starts: dict[Path, str] = {}

        def order(path: Path) -> tuple[str, str, str]:
            main = path
            subagents = next((p for p in path.parents if p.name == "subagents"), None)
            if subagents is not None:  # a sub-agent's, or a workflow run's agent's
                main = subagents.parent.with_name(subagents.parent.name + ".jsonl")
            if main not in starts:
                starts[main] = claude_code.first_time(main)
            return (str(main.parent), starts[main], str(path))

        return sorted(super().files(root), key=order)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return ClaudeCodeConverter(path, links=options.links)


class AiderImporter(Importer):
    name: ClassVar[str] = "aider"
    help: ClassVar[str] = "Aider chat histories (.aider.chat.history.md; give the folders)"
    detect_order: ClassVar[int] = 30
    pattern: ClassVar[str] = aider.HISTORY_FILE

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.name == aider.HISTORY_FILE:
            return True
        return any(aider.looks_like(raw.decode("utf-8", "replace")) for raw in head)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return AiderConverter(path, assume_tz=options.assume_tz)
