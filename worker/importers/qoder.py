"""Qoder CLI transcripts: ``$QODER_CONFIG_DIR/projects/<cwd slug>/<session>.jsonl`` (default
``~/.qoder``), sub-agents in ``<session>/subagents/agent-<id>.jsonl``.

Qoder CLI (``@qoder-ai/qodercli``) writes Claude Code's transcript format: the same
``user``/``assistant``/``system`` records linked by ``uuid``/``parentUuid`` with
``sessionId``, ``cwd``, ``version``, ``gitBranch``, ``isSidechain``/``agentId`` for a
sub-agent (its ``Agent`` tool), ``compact_boundary`` then the ``isCompactSummary`` record for
a compaction, ``custom-title`` for ``--name``/``/rename``. So the Claude Code converter reads
it (``claude_code.py``), under this format's name with ids prefixed ``qoder-``. Qoder adds
``ai-title`` (the title its model gave: a ``session/title`` unless a custom title names the
session; the metadata records are written again at the file's end as they change, so a
title is published when it changes) and bookkeeping records, skipped with their reason.

The files cannot be told from Claude Code's by their records: a file is Qoder's when it lies
under a ``.qoder`` folder or under ``$QODER_CONFIG_DIR``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Final

from worker.importers import claude_code
from worker.importers.base import Converter, SpawnLinks
from worker.importers.claude_code import ClaudeCodeConverter
from worker.importers.plugin import ConvertOptions, Importer, json_objects
from worker.importers.skips import BUILT_IN

NAME: Final = "qoder"
HOME_FOLDER: Final = ".qoder"


class QoderConverter(ClaudeCodeConverter):
    def __init__(self, path: Path, *, links: SpawnLinks | None = None) -> None:
        super().__init__(path, links=links, name=NAME, id_prefix="qoder-")


def _config_dir() -> Path:
    return Path(os.environ.get("QODER_CONFIG_DIR") or Path.home() / HOME_FOLDER)


class QoderImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Qoder CLI transcripts ($QODER_CONFIG_DIR/projects)"
    env_vars: ClassVar[tuple[str, ...]] = ("QODER_CONFIG_DIR",)
    # Before claude-code, which would claim these files by their records.
    detect_order: ClassVar[int] = 15
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        **BUILT_IN["claude-code"],
        "record:last-prompt": "the last prompt again, for the session list",
        "record:active-leaf": "which branch of the record tree is current",
        "record:tag": "the session's tag (bookkeeping)",
        "record:mode": "the permission mode",
        "record:relocated": "the session moved to another folder",
        "record:worktree-state": "the git worktree the session runs in",
        "record:workspace-directories": "the folders added to the workspace",
        "record:runtime-config": "the model and settings of the run",
        "record:token-stats": "the prompt's token count",
        "record:content-replacement": "large tool outputs moved out of the transcript",
        "record:ai-title:*": "a title already published, or one a custom title overrides",
    }

    def default_locations(self) -> list[Path]:
        return [_config_dir() / "projects"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if not _is_qoders(path):
            return False
        return any(claude_code.looks_like(record) for record in json_objects(head))

    def accepts(self, path: Path) -> bool:
        return not path.name.startswith("agent-acompact-")

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return QoderConverter(path, links=options.links)


def _is_qoders(path: Path) -> bool:
    """Whether ``path`` lies in Qoder's folder: its records are Claude Code's."""
    absolute = path.absolute()
    if HOME_FOLDER in absolute.parts:
        return True
    configured = os.environ.get("QODER_CONFIG_DIR")
    if not configured:
        return False
    return Path(configured).absolute() in absolute.parents
