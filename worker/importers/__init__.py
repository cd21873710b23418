"""Importers: agent session files (ours, Claude Code, Codex, Aider, plug-ins) in, session
events out.

Each format is an importer (``plugin.py``: the contract; ``registry.py``: the registered
ones) with a converter: source records in, event bodies out, no NATS. ``pipeline`` drives
a converter over a file and ``publish`` sends what it produced: the importers are
publishers on the SESSIONS stream, like any agent runtime.
"""

from __future__ import annotations

from datetime import tzinfo
from pathlib import Path

from contracts.limits import MAX_EVENT_BYTES
from worker.importers.base import Converter, SpawnLinks


def make_converter(
    fmt: str,
    path: Path,
    *,
    max_event_bytes: int = MAX_EVENT_BYTES,
    assume_tz: tzinfo | None = None,
    links: SpawnLinks | None = None,
) -> Converter:
    from worker.importers import registry
    from worker.importers.plugin import ConvertOptions

    options = ConvertOptions(max_event_bytes=max_event_bytes, assume_tz=assume_tz, links=links)
    return registry.get(fmt).converter(path, options)
