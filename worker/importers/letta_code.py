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

A sub-agent (the ``Agent`` tool, always run in the background) runs as an agent of its own
(or a fork of the conversation): the call's result names its ``Agent ID`` and
``Conversation ID``, so the conversation holding its turns (``default:<agent id>``, or
``conversation:<id>``) is a child whose start cites that call, titled by the call's
``description``. Conversations are read in path order, and a ``conversation:`` folder's
name sorts before a ``default:`` one's, so a headless conversation comes before its
sub-agents; a sub-agent read before its parent (both default conversations) is a session
of its own.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import (
    Converter,
    Outgoing,
    Spawn,
    SpawnLinks,
    as_text,
    cut,
    iso_time,
    safe_id,
)
from worker.importers.pi import PiConverter
from worker.importers.plugin import ConvertOptions, Importer, json_objects
from worker.importers.skips import BUILT_IN

NAME: Final = "letta-code"
MESSAGES_FILE: Final = "messages.jsonl"
BACKEND_FOLDER: Final = "lc-local-backend"
SUBAGENT_TOOL: Final = "Agent"
# What the Agent tool returns once the sub-agent is launched (letta.js, ``task``).
_LAUNCHED_AGENT: Final = re.compile(r"^Agent ID: (\S+)$", re.MULTILINE)
_LAUNCHED_CONVERSATION: Final = re.compile(r"^Conversation ID: (\S+)$", re.MULTILINE)


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


def launched_key(output: str) -> str | None:
    """The key of the conversation a launched sub-agent runs in, from the Agent call's
    result: its agent's default conversation, or the conversation it names."""
    agent = _LAUNCHED_AGENT.search(output)
    conversation = _LAUNCHED_CONVERSATION.search(output)
    if conversation is not None and conversation.group(1) != "default":
        return f"conversation:{conversation.group(1)}"
    return f"default:{agent.group(1)}" if agent is not None else None


class LettaCodeConverter(PiConverter):
    def __init__(self, path: Path, links: SpawnLinks | None = None) -> None:
        super().__init__(path, NAME)
        folder = Path(path).parent
        self.key = conversation_key(folder)
        self.conversation = _conversation(folder)
        # (NAME, conversation key) -> the Agent call that launched the sub-agent there.
        self.links: SpawnLinks = {} if links is None else links
        self.descriptions: dict[str, str | None] = {}  # Agent call id -> its description

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
        spawn = self.links.get((NAME, self.key))
        parent, cites = (spawn.session_id, [spawn[:2]]) if spawn else (None, None)
        out = [self.sessions.start(self.main, time=time, cwd=self.cwd, parent=parent,
                                   extra=extra, cites=cites)]  # fmt: skip
        title = self.conversation.get("summary")
        if not (isinstance(title, str) and title.strip()) and spawn is not None:
            title = spawn.description
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
        if message.get("role") == "assistant" and isinstance(content, list):
            self._note_agent_calls(content)
        if message.get("role") == "toolResult":
            self._note_launch(message)
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

    def _note_agent_calls(self, blocks: list[Any]) -> None:
        """The Agent calls of an assistant message, by id: their descriptions title the
        sub-agents' sessions."""
        for block in blocks:
            if not (isinstance(block, dict) and block.get("name") == SUBAGENT_TOOL):
                continue
            arguments = block.get("arguments")
            described = arguments.get("description") if isinstance(arguments, dict) else None
            if isinstance(block.get("id"), str):
                self.descriptions[block["id"]] = described if isinstance(described, str) else None

    def _note_launch(self, message: dict[str, Any]) -> None:
        """An Agent call's result names where its sub-agent runs: remembered for that
        conversation (read after this one) to cite the call."""
        call_id = message.get("toolCallId")
        if not isinstance(call_id, str) or call_id not in self.descriptions:
            return
        called = self.calls.get(call_id)
        key = launched_key(as_text(message.get("content")))
        if called is not None and key is not None:
            session, seq, _ = called
            self.links[(NAME, key)] = Spawn(session, seq, self.descriptions[call_id])


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
        return LettaCodeConverter(path, options.links)
