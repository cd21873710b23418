"""The importers of whole sources: OpenCode, Kilo CLI, Goose, Cline, Roo Code, OpenHands,
VS Code Copilot Chat.

Each source (a database file, a session's folder) is one record per change: reading it
says "look again", and the converter (``source_reading.ReadingConverter``) publishes what
is new in it. The record's position is the source's last change in nanoseconds, which grows
as the agent writes; ``watch`` keeps the converter's resume token beside it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import ClassVar, Final

from worker.importers import cline, goose, opencode, openhands, vscode_copilot
from worker.importers.base import Converter
from worker.importers.plugin import SNIFF_LINES, ConvertOptions, Importer, Record, json_objects
from worker.importers.source_reading import ReadingConverter, SessionCache, SourceReading

# VS Code and the editors built on it keep an extension's storage under these names.
_EDITORS: Final = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


def data_home() -> Path:
    """``$XDG_DATA_HOME``, else ``~/.local/share`` (where OpenCode, Kilo, Goose write)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def editor_user_dirs() -> list[Path]:
    """Each editor's ``User`` folder on this OS (its global and workspace storage)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home())
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [base / editor / "User" for editor in _EDITORS]


def _newest_change(path: Path) -> float:
    """The newest modification time of a file and its WAL, or of any file in a folder."""
    if path.is_dir():
        times = [p.stat().st_mtime for p in path.rglob("*") if p.is_file()]
        return max(times, default=path.stat().st_mtime)
    wal = path.with_name(path.name + "-wal")
    return max(path.stat().st_mtime, wal.stat().st_mtime if wal.exists() else 0.0)


def sniffed(importer: Importer, path: Path) -> bool:
    """Whether a file is ``importer``'s, told from its first lines as auto-detection reads
    them (a folder of JSON files may hold other agents' too)."""
    try:
        with path.open("rb") as fh:
            return importer.detect(path, [fh.readline() for _ in range(SNIFF_LINES)])
    except OSError:
        return False


def sniffed_document(importer: Importer, path: Path) -> bool:
    """Whether a JSON document is ``importer``'s, told from its first 4 KiB (a document
    written on one line has no first lines to read)."""
    try:
        with path.open("rb") as fh:
            return importer.detect(path, [fh.read(4096)])
    except OSError:
        return False


def files_below(root: Path, pattern: str, keep: Callable[[Path], bool]) -> Iterator[Path]:
    """The file named (``root`` itself), else the files below ``root`` matching
    ``pattern`` that ``keep`` takes: the sources of a format kept as one file each."""
    if root.is_file():
        return iter([root])
    return (path for path in root.rglob(pattern) if keep(path))


def _folders_holding(root: Path, name: str) -> Iterator[Path]:
    """``root`` when it holds ``name`` (a session's own folder), else every folder below
    it that does."""
    if (root / name).exists():
        return iter([root])
    return (found.parent for found in root.rglob(name))


class ReadingImporter(Importer):
    """A source read whole on each change; subclasses say where and how to read it."""

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        """The source as it is now; ``cache`` (one per converter) keeps what a reader
        may reuse of its earlier readings."""
        raise NotImplementedError

    def sources(self, root: Path) -> Iterator[Path]:
        """The sources under ``root`` (or ``root`` itself), in any order."""
        raise NotImplementedError

    def files(self, root: Path) -> list[Path]:
        return sorted(set(self.sources(root)), key=str)

    def last_change(self, path: Path) -> float:
        return _newest_change(path)

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        changed = int(self.last_change(path) * 1e9)
        if changed > after:
            yield Record(number + 1, b"", changed)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        cache = SessionCache()
        read: Callable[[], SourceReading] = lambda: self.read(path, cache)  # noqa: E731
        return ReadingConverter(self.name, read, idle_s=options.idle_s)


class OpenCodeImporter(ReadingImporter):
    name: ClassVar[str] = "opencode"
    help: ClassVar[str] = "OpenCode's opencode.db and older storage/ tree ($XDG_DATA_HOME/opencode)"
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_DATA_HOME",)
    detect_order: ClassVar[int] = 50
    folder: ClassVar[str] = "opencode"

    def default_locations(self) -> list[Path]:
        return [data_home() / self.folder]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return path.name == f"{self.folder}.db" or (
            path.is_dir() and path.name == "storage" and path.parent.name == self.folder
        )

    def sources(self, root: Path) -> Iterator[Path]:
        if root.name == "storage" and (root / "session").is_dir():
            yield root
            return
        yield from root.rglob(f"{self.folder}.db")
        for storage in root.rglob("storage"):
            if (storage / "session").is_dir() and (storage / "message").is_dir():
                yield storage

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        if path.is_dir():
            return opencode.read_tree(path)
        return opencode.read_database(path, cache)


class KiloImporter(OpenCodeImporter):
    """Kilo CLI (read from its binary 7.7.9): ``kilo.db`` for the latest, beta and prod
    channels, ``kilo-<channel>.db`` for the others (or ``opencode-<channel>.db`` when
    only that exists), in its data folder; ``$KILO_DB`` (a path, or a name in the data
    folder; ``:memory:`` keeps nothing) wins."""

    name: ClassVar[str] = "kilo"
    help: ClassVar[str] = "Kilo CLI's kilo.db, OpenCode's schema ($XDG_DATA_HOME/kilo, $KILO_DB)"
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_DATA_HOME", "KILO_DB")
    detect_order: ClassVar[int] = 51
    folder: ClassVar[str] = "kilo"

    def default_locations(self) -> list[Path]:
        chosen = os.environ.get("KILO_DB")
        if not chosen or chosen == ":memory:":
            return super().default_locations()
        return [data_home() / self.folder / chosen]  # an absolute path replaces the folder

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return super().detect(path, head) or self._channel_database(path)

    def sources(self, root: Path) -> Iterator[Path]:
        yield from super().sources(root)
        yield from (path for path in root.rglob("*.db") if self._channel_database(path))

    def _channel_database(self, path: Path) -> bool:
        return path.parent.name == self.folder and path.suffix == ".db" and (
            path.name.startswith(("kilo-", "opencode-"))
        )  # fmt: skip


class GooseImporter(ReadingImporter):
    name: ClassVar[str] = "goose"
    help: ClassVar[str] = (
        "Goose's sessions.db and older sessions/*.jsonl ($GOOSE_PATH_ROOT or $XDG_DATA_HOME/goose)"
    )
    env_vars: ClassVar[tuple[str, ...]] = ("GOOSE_PATH_ROOT", "XDG_DATA_HOME")
    detect_order: ClassVar[int] = 52

    def default_locations(self) -> list[Path]:
        root = os.environ.get("GOOSE_PATH_ROOT")
        if root:
            return [Path(root) / "data" / "sessions"]
        return [data_home() / "goose" / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.name == "sessions.db":
            return True
        first = next(json_objects(head), None)
        return (
            path.suffix == ".jsonl" and first is not None and goose.looks_like_session_file(first)
        )

    def sources(self, root: Path) -> Iterator[Path]:
        yield from root.rglob("sessions.db")
        for file in root.rglob("*.jsonl"):  # the older one-file-per-session layout
            with file.open("rb") as fh:
                if self.detect(file, [fh.readline()]):
                    yield file

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        if path.suffix == ".jsonl":
            return goose.read_jsonl(path)
        return goose.read_database(path, cache)


class ClineImporter(ReadingImporter):
    name: ClassVar[str] = "cline"
    help: ClassVar[str] = "Cline task folders (the editor's globalStorage, ~/.cline/data)"
    detect_order: ClassVar[int] = 53
    flavour: ClassVar[str] = "cline"
    extensions: ClassVar[tuple[str, ...]] = ("saoudrizwan.claude-dev",)

    def default_locations(self) -> list[Path]:
        found = [user / "globalStorage" / ext / "tasks"
                 for ext in self.extensions for user in editor_user_dirs()]  # fmt: skip
        if self.flavour == "cline":
            found.append(Path.home() / ".cline" / "data" / "tasks")
        return found

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        held = (path / cline.CONVERSATION).is_file() or (path / cline.UI_MESSAGES).is_file()
        return held and cline.flavour(path) == self.flavour

    def sources(self, root: Path) -> Iterator[Path]:
        # A task folder holds its API history, or (older or interrupted tasks) only the
        # UI's log of it.
        found = chain(_folders_holding(root, cline.CONVERSATION),
                      _folders_holding(root, cline.UI_MESSAGES))  # fmt: skip
        return (task for task in found if cline.flavour(task) == self.flavour)

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return cline.read_task(path)


class RooCodeImporter(ClineImporter):
    name: ClassVar[str] = "roo-code"
    help: ClassVar[str] = "Roo Code and Kilo Code task folders (the editor's globalStorage)"
    detect_order: ClassVar[int] = 54
    flavour: ClassVar[str] = "roo"
    extensions: ClassVar[tuple[str, ...]] = ("rooveterinaryinc.roo-cline", "kilocode.kilo-code")


class OpenHandsImporter(ReadingImporter):
    name: ClassVar[str] = "openhands"
    help: ClassVar[str] = "OpenHands conversations, one JSON file per event (~/.openhands)"
    detect_order: ClassVar[int] = 55

    def default_locations(self) -> list[Path]:
        home = Path.home() / ".openhands"
        return [home / "conversations", home / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return (path / "events").is_dir()

    def sources(self, root: Path) -> Iterator[Path]:
        # A sub-agent's conversation is read with its parent's (``subagents/<id>/``).
        return (
            folder
            for folder in _folders_holding(root, "events")
            if folder == root or folder.parent.name != openhands.SUBAGENTS
        )

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return openhands.read_conversation(path)


class VSCodeCopilotImporter(ReadingImporter):
    name: ClassVar[str] = "vscode-copilot"
    help: ClassVar[str] = (
        "VS Code Copilot Chat sessions (the editor's workspaceStorage/*/chatSessions)"
    )
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_CONFIG_HOME", "APPDATA")
    detect_order: ClassVar[int] = 56
    folders: ClassVar[tuple[str, ...]] = ("chatSessions", "emptyWindowChatSessions")

    def default_locations(self) -> list[Path]:
        return [user / place for user in editor_user_dirs()
                for place in ("workspaceStorage", "globalStorage")]  # fmt: skip

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return path.parent.name in self.folders and path.suffix in (".json", ".jsonl")

    def sources(self, root: Path) -> Iterator[Path]:
        for folder in self.folders:
            for pattern in ("*.json", "*.jsonl"):
                yield from root.rglob(f"{folder}/{pattern}")

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return vscode_copilot.read_chat(path)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        # ``watch`` ends a quiet session after --idle-seconds: an unanswered last request
        # waits no longer than that.
        fresh_s = options.idle_s if options.idle_s is not None else vscode_copilot.FRESH_S
        read: Callable[[], SourceReading] = lambda: vscode_copilot.read_chat(path, fresh_s=fresh_s)  # noqa: E731
        return ReadingConverter(self.name, read, idle_s=options.idle_s)
