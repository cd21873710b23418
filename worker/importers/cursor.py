"""Cursor agent transcripts: ``~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl``
(older versions: ``agent-transcripts/<id>.jsonl``; plain-text ``.txt`` ones are not read).

One record per line, ``{"role": "user" | "assistant", "message": {"content": [...]}}``
with Anthropic-style blocks (``text``; ``tool_use`` with ``id``, ``name``, ``input``;
``tool_result`` with ``tool_use_id`` and ``content``; ``thinking`` when present), and
marker lines without a role (``turn_ended``). What the format does not say is not
invented:

- no times: every event of a file carries the time the file was last modified when it
  was read (so ``--idle-seconds`` ends a session whose file has been quiet that long);
- no cwd: the project folder's name is the workspace path with every character but
  letters and digits made ``-``, which cannot be read back by itself (``my-app`` or
  ``my/app``). The cwd is the one folder on this machine whose path gives that name,
  else (another machine's transcripts, a folder since removed) the one folder giving
  it among the paths the transcript shows (attached files and images; older versions
  keep the tool calls only in the ``.txt`` beside it), else among those the project
  folder's other transcripts show; when none or several do, the session has no cwd:
  the no-cwd workspace, and the import summary says how many;
- no ids for tool calls in some versions: a result without ``tool_use_id`` answers the
  oldest call still unanswered.

The user's words are inside ``<user_query>``; what Cursor wraps around them (attached
files, rules, user info) is ``message/context``. A sub-agent's transcript,
``<id>/subagents/<child id>.jsonl``, is the child session ``<child id>`` of ``<id>`` (the
call that spawned it does not name the child, so its start cites nothing). Marker lines
and new shapes are skipped and counted.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    cut,
    file_time,
    safe_id,
)
from worker.importers.blocks import Blocks
from worker.importers.plugin import ConvertOptions, Importer, json_objects

NAME: Final = "cursor"
TRANSCRIPTS: Final = "agent-transcripts"
_QUERY: Final = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_NOT_ALNUM: Final = re.compile(r"[^A-Za-z0-9]")
# Folder listings a cwd lookup may make: a name that matches nothing fails fast.
_MAX_LISTINGS: Final = 200
# A transcript's first bytes read for the paths it shows, and what an absolute path is.
_SHOWN_BYTES: Final = 4 << 20
# All a project folder's transcripts read for them, at most (a session that shows none).
_PROJECT_BYTES: Final = 64 << 20
_ABSOLUTE: Final = re.compile(r"(?:/|\b[A-Za-z]:\\)[^\s\"'`<>|*?]+")


def split_query(text: str) -> tuple[str, str]:
    """(the user's words inside ``<user_query>``, the context around them)."""
    found = _QUERY.search(text)
    if found is None:
        return text, ""
    context = (text[: found.start()] + text[found.end() :]).strip()
    return found.group(1), context


def slug(path: str) -> str:
    """A path as Cursor names its project folder."""
    return _NOT_ALNUM.sub("-", path.lstrip("/\\"))


@functools.lru_cache(maxsize=256)
def folder_of(name: str) -> str | None:
    """The one existing folder whose path gives the project folder ``name``, else None.

    Walks down from the root matching each folder's own name against the next words of
    ``name``; gives up (None) past ``_MAX_LISTINGS`` listings or on a second match."""
    found: list[str] = []
    listings = 0
    pending = [(Path("/"), name)]
    while pending and len(found) < 2:
        folder, rest = pending.pop()
        listings += 1
        if listings > _MAX_LISTINGS:
            return None
        try:
            children = [c for c in folder.iterdir() if c.is_dir()]
        except OSError:
            continue
        for child in children:
            part = _NOT_ALNUM.sub("-", child.name)
            if rest == part:
                found.append(str(child))
            elif part and rest.startswith(part + "-"):
                pending.append((child, rest[len(part) + 1 :]))
    return found[0] if len(found) == 1 else None


def shown_folder(transcript: Path, name: str) -> str | None:
    """The one folder whose path gives the project folder ``name`` among the paths the
    transcript itself shows (attached files and images, tool inputs; older versions keep
    the tool calls only in the plain-text ``.txt`` beside it), else among those every
    transcript of the project folder shows (a session that showed none ran in the same
    workspace); else None: another machine's workspace, named by what was seen, never
    guessed."""
    own = _shown(transcript, name) | _shown(transcript.with_suffix(".txt"), name)
    if not own:
        folder = next((p for p in transcript.parents if p.name == TRANSCRIPTS), None)
        try:
            changed = folder.stat().st_mtime_ns if folder is not None else 0
        except OSError:
            changed = 0
        own = set(_project_shown(folder, name, changed)) if folder is not None else set()
    return own.pop() if len(own) == 1 else None


@functools.lru_cache(maxsize=64)
def _project_shown(folder: Path, name: str, changed: int) -> frozenset[str]:  # changed: key
    found: set[str] = set()
    budget = _PROJECT_BYTES
    for path in sorted(folder.rglob("*")):
        if budget <= 0:
            break
        if path.suffix in (".jsonl", ".txt") and path.is_file():
            found |= _shown(path, name)
            budget -= min(_size(path), _SHOWN_BYTES)
    return frozenset(found)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _shown(path: Path, name: str) -> set[str]:
    """The folders giving ``name`` among the absolute paths in the file's first bytes."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_SHOWN_BYTES)
    except OSError:
        return set()
    if path.suffix == ".txt":
        texts: Iterator[str] = iter([head.decode("utf-8", "replace")])
    else:
        texts = (
            t for line in head.splitlines() for t in _strings(next(json_objects([line]), None))
        )
    found: set[str] = set()
    for text in texts:
        for match in _ABSOLUTE.finditer(text):
            path_ = match.group(0)
            sep = "/" if path_.startswith("/") else "\\"
            parts = path_.split(sep)
            found.update(
                sep.join(parts[:end])
                for end in range(2, len(parts) + 1)
                if slug(sep.join(parts[:end])) == name
            )
    return found


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class CursorConverter(JsonRecordConverter):
    def __init__(self, path: Path) -> None:
        super().__init__(path, NAME)
        self.time = file_time(path)
        project = next((p.parent for p in path.parents if p.name == TRANSCRIPTS), None)
        self.cwd = folder_of(project.name) if project is not None else None
        if self.cwd is None and project is not None:
            self.cwd = shown_folder(path, project.name)
        # The file is named by its session; <id>/subagents/<child>.jsonl is a child of <id>.
        self.session = safe_id(path.stem)
        subagent = path.parent.name == "subagents"
        self.parent = safe_id(path.parent.parent.name) if subagent else None
        self.blocks = Blocks(self.sessions, self.tally, user_text=self._user_text)

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        role = record.get("role")
        message = record.get("message")
        if role not in ("user", "assistant") or not isinstance(message, dict):
            marker = record.get("type", role)
            self.tally.skip(f"record:{marker}")
            return []
        out = []
        if not self.sessions.has(self.session):
            out.append(self.sessions.start(self.session, time=self.time, cwd=self.cwd,
                                           parent=self.parent))  # fmt: skip
        return out + self.blocks.message(
            self.session, str(role), message.get("content"), self.time, "message"
        )

    def _user_text(self, session: str, text: str, time: str | None, source: str) -> list[Outgoing]:
        words, context = split_query(text)
        out = []
        if context:
            out.append(self.sessions.emit(session, "message/context", "system", time,
                                          {"text": cut(context)}, source))  # fmt: skip
        if words.strip():
            out += self.blocks.typed_user_text(session, words, time, source)
        return out


class CursorImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Cursor agent transcripts (~/.cursor/projects/*/agent-transcripts)"
    detect_order: ClassVar[int] = 40

    def default_locations(self) -> list[Path]:
        return [Path.home() / ".cursor" / "projects"]

    def accepts(self, path: Path) -> bool:
        return TRANSCRIPTS in path.parts

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if not self.accepts(path):
            return False
        return any(
            r.get("role") in ("user", "assistant") and isinstance(r.get("message"), dict)
            for r in json_objects(head)
        )

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return CursorConverter(path)
