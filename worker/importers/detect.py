"""Which format a file is in (``--format auto``), and which files a path stands for: the
registered importers (``registry.py``) answer, in their detection order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from worker.importers import registry
from worker.importers.plugin import SNIFF_LINES

AUTO = "auto"


def detect(path: Path) -> str | None:
    """The format of ``path`` (from its name and first lines), or None when none fits."""
    try:
        with path.open("rb") as fh:
            head = [fh.readline() for _ in range(SNIFF_LINES)]
    except OSError:  # a folder source, or unreadable: only its name can tell
        head = []
    for name, importer in registry.importers().items():
        if importer.detect(path, head):
            return name
    return None


def default_paths(fmt: str) -> list[Path]:
    """Where the agent keeps its sessions when no path is given."""
    return registry.get(fmt).default_locations()


def expand(paths: list[Path], fmt: str) -> Iterator[Path]:
    """Sources under ``paths``, in an order that puts a transcript before its sub-agents'
    (``auto``: the sources any importer finds)."""
    seen: set[Path] = set()
    chosen = list(registry.importers().values()) if fmt == AUTO else [registry.get(fmt)]
    for path in paths:
        if path.is_file():
            found = [path]
        elif len(chosen) == 1:
            found = chosen[0].files(path) if path.is_dir() else []
        else:  # any format's sources: by path
            found = sorted({f for imp in chosen if path.is_dir() for f in imp.files(path)}, key=str)
        for file in found:
            if file not in seen:
                seen.add(file)
                yield file


def discover() -> list[tuple[str, list[Path]]]:
    """Each importer that knows where its agent keeps sessions, with those folders (moved
    by the agent's environment variables; they may not exist on this machine)."""
    found = []
    for name, importer in registry.importers().items():
        locations = importer.default_locations()
        if locations:
            found.append((name, locations))
    return found
