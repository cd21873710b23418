"""Letta Code's local backend: ``$LETTA_LOCAL_BACKEND_DIR/conversations/<key>/messages.jsonl``
(default ``~/.letta/lc-local-backend``), with ``conversation.json`` beside it.

Letta Code keeps its agents and conversations on a Letta server, which this importer cannot
read; its local backend (``LETTA_LOCAL_BACKEND_EXPERIMENTAL=1``, or ``--backend local``)
keeps them on disk, and that is what is read. The folder is the conversation's key
(``default:<agent id>`` or ``conversation:<id>``) in base64url; ``messages.jsonl`` is Pi's
session format (``pi-session-entry-jsonl``: a ``session`` header with the conversation's
``id``, ``timestamp`` and the ``cwd`` Letta Code ran in, then ``message`` entries holding
pi-ai messages, ``compaction`` entries with ``firstKeptEntryId``), so Pi's converter reads it
(``pi.py``), under this format's name. Session ids are ``letta-<key>`` (a default
conversation's id is not unique: the key names its agent). ``conversation.json`` gives the
agent (``agent_id``) and the title (``summary``, when set). A user message's text blocks are
typed one by one: Letta Code puts its ``<system-reminder>`` blocks before the prompt.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import Converter, Outgoing, cut, iso_time, safe_id
from worker.importers.pi import PiConverter
from worker.importers.plugin import ConvertOptions, Importer, json_objects
from worker.importers.skips import BUILT_IN

NAME: Final = "letta-code"
MESSAGES_FILE: Final = "messages.jsonl"
BACKEND_FOLDER: Final = "lc-local-backend"


def conversation_key(folder: Path) -> str:
    """The conversation's key (``conversation:<id>``), from its folder's base64url name."""
    name = folder.name
    try:
        return base64.urlsafe_b64decode(name + "=" * (-len(name) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return name


def _conversation(folder: Path) -> dict[str, Any]:
    try:
        value = orjson.loads((folder / "conversation.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


class LettaCodeConverter(PiConverter):
    def __init__(self, path: Path) -> None:
        super().__init__(path, NAME)
        folder = Path(path).parent
        self.key = conversation_key(folder)
        self.conversation = _conversation(folder)

    def _header(self, record: dict[str, Any]) -> list[Outgoing]:
        # Pi's header, under the conversation key's id, with the agent and the title.
        if self.main is not None:
            self.tally.skip("record:session:repeated")
            return []
        cwd = record.get("cwd")
        self.main = safe_id(self.key.replace(":", "-"), prefix="letta-")
        self.cwd = cwd if isinstance(cwd, str) and cwd else None
        agent = self.conversation.get("agent_id")
        extra: dict[str, Any] = {"agent_id": agent} if isinstance(agent, str) else {}
        time = iso_time(record.get("timestamp"))
        out = [self.sessions.start(self.main, time=time, cwd=self.cwd, extra=extra)]
        title = self.conversation.get("summary")
        if isinstance(title, str) and title.strip():
            payload = {"title": cut(title.strip())}
            out.append(
                self.sessions.emit(
                    self.main, "session/title", "system", None, payload, "conversation"
                )
            )
        return out

    def _message(self, session: str, message: dict[str, Any], time: str | None) -> list[Outgoing]:
        # Letta Code puts its <system-reminder> blocks (environment, permission mode) before
        # the prompt in the user's message: each block typed on its own, not the whole.
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            return super()._message(session, message, time)
        out: list[Outgoing] = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind != "text" or not isinstance(block.get("text"), str):
                self.tally.skip(f"message:user:{kind}")
                continue
            text = block["text"]
            type_ = harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            out.append(self.sessions.emit(session, type_, surface, time, {"text": cut(text)},
                                          "message:user"))  # fmt: skip
        return out


def _backend_dir() -> Path:
    configured = os.environ.get("LETTA_LOCAL_BACKEND_DIR")
    return Path(configured) if configured else Path.home() / ".letta" / BACKEND_FOLDER


class LettaCodeImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Letta Code local-backend conversations ($LETTA_LOCAL_BACKEND_DIR)"
    env_vars: ClassVar[tuple[str, ...]] = ("LETTA_LOCAL_BACKEND_DIR",)
    # Before pi, whose format these files are.
    detect_order: ClassVar[int] = 35
    pattern: ClassVar[str] = MESSAGES_FILE
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        **BUILT_IN["pi"],
        "message:user:image": "images: the index holds text",
    }

    def default_locations(self) -> list[Path]:
        return [_backend_dir() / "conversations"]

    def accepts(self, path: Path) -> bool:
        return path.name == MESSAGES_FILE and path.parent.parent.name == "conversations"

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if not self.accepts(path) or not (path.parent / "conversation.json").exists():
            return False
        return any(r.get("type") == "session" and "cwd" in r for r in json_objects(head))

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return LettaCodeConverter(path)
