"""Codebuff chats: ``~/.config/manicode/projects/<project folder name>/chats/<chat id>/``
holding ``chat-messages.json`` (what the CLI shows) and ``run-state.json`` (the agent's
state), both rewritten whole after each turn.

``chat-messages.json`` is a list of ``ChatMessage`` (``cli/src/types/chat.ts``): ``id``
(``user-<ms>``, ``ai-<ms>``...), ``variant`` (``user``, ``ai``, ``agent``, ``error``),
``content``, ``blocks``, ``timestamp`` (a display time), attachments. A chat id is its
start time (``2025-11-02T09-30-00.000Z``). The project folder is named by the project
root's last part only, so the cwd comes from ``run-state.json``'s
``sessionState.fileContext.cwd`` (or ``projectRoot``); without it, none. Mapping:

- ``user``: ``message/user`` (content, or its text blocks); ``error``: ``message/context``;
- ``ai``/``agent``, per block: ``text`` as ``message/assistant`` (``textType: reasoning``
  as ``thinking``), ``tool`` as ``tool/call`` then, when it has ``output``, its
  ``tool/result``; ``agent`` (a sub-agent the main agent spawned) as a ``tool/call``
  (``spawn_agents``) in the parent and a child session ``codebuff-<chat>-agent-<agent id>``
  whose start cites it, its own blocks inside it, and its final ``content`` as the call's
  ``tool/result``; ``plan`` as ``message/assistant``; ``ask-user`` as a ``tool/call`` and
  the answers as its ``tool/result``; a message with only ``content`` as
  ``message/assistant``.

Mode dividers, gate states, images, agent lists and UI-only (``html``) blocks are skipped
and counted. Times: a message id's milliseconds, else the chat's start. The CLI keeps the
last 100 messages of a chat: past that, earlier messages leave the file (what was
published stays) and ``watch`` sees the file no longer grow.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    as_text,
    cut,
    iso_time,
    safe_id,
)
from worker.importers.plugin import (
    ConvertOptions,
    UnreadableSource,
    WholeSourceImporter,
    json_document,
)

NAME: Final = "codebuff"
MESSAGES_FILE: Final = "chat-messages.json"
RUN_STATE_FILE: Final = "run-state.json"
HEADER: Final = "$chat"  # the first record: the chat's id and cwd, from the folder
_ID_MS: Final = re.compile(r"-(\d{12,14})(?:-|$)")
# A chat id: the ISO start time with ``-`` for ``:``.
_CHAT_ID: Final = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d)-(\d\d)-(\d\d(?:\.\d+)?Z)$")
_SKIPPED_BLOCKS: Final = {
    "mode-divider": "the agent mode the user switched to, shown between messages",
    "gate-state": "a plan gate's status in the UI",
    "agent-list": "the list of local agents, shown by /agents",
    "html": "UI-only content, never saved readable",
    "image": "images: the index holds text",
}


def _time_of(message_id: object, fallback: str | None) -> str | None:
    found = _ID_MS.search(message_id) if isinstance(message_id, str) else None
    if found is None:
        return fallback
    stamp = datetime.fromtimestamp(int(found.group(1)) / 1000, UTC)
    return iso_time(stamp.isoformat())


def chat_start(chat_id: str) -> str | None:
    found = _CHAT_ID.match(chat_id)
    return iso_time(f"{found.group(1)}:{found.group(2)}:{found.group(3)}") if found else None


class CodebuffConverter(JsonRecordConverter):
    def __init__(self, path: Path) -> None:
        super().__init__(path, NAME)
        self.chat = Path(path).parent.name
        # A chat id is a time (``…T10-15-00.000Z``): its dot made safe, without a digest.
        self.key = self.chat.replace(".", "-")
        self.main = safe_id(self.key, prefix="codebuff-")
        self.start_time = chat_start(self.chat)
        self.calls: dict[str, tuple[str, int]] = {}  # tool call id -> its event
        self.cwd: str | None = None

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        if HEADER in record:
            cwd = record[HEADER].get("cwd") if isinstance(record[HEADER], dict) else None
            if self.sessions.has(self.main):
                return []
            self.cwd = cwd if isinstance(cwd, str) else None
            return [self.sessions.start(self.main, time=self.start_time, cwd=self.cwd)]
        variant = record.get("variant")
        time = _time_of(record.get("id"), self.start_time)
        if variant == "user":
            return self._user(record, time)
        if variant == "error":
            text = as_text(record.get("content"))
            return [self.sessions.emit(self.main, "message/context", "system", time,
                                       {"text": text, "is_error": True}, "error")]  # fmt: skip
        if variant in ("ai", "agent"):
            blocks = record.get("blocks")
            if isinstance(blocks, list) and blocks:
                return self._blocks(self.main, blocks, time, f"message:{variant}")
            said = record.get("content")
            if isinstance(said, str) and said.strip():
                return [self._say(self.main, said, time, f"message:{variant}")]
            return []
        self.tally.skip(f"message:{variant}")
        return []

    def _user(self, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        content = record.get("content")
        text = content if isinstance(content, str) else ""
        if not text.strip():
            blocks = record.get("blocks")
            parts = [b.get("content") for b in blocks or [] if isinstance(b, dict)]
            text = "\n".join(p for p in parts if isinstance(p, str))
        payload: dict[str, Any] = {"text": cut(text)}
        files = [a.get("path") for a in record.get("fileAttachments") or [] if isinstance(a, dict)]
        if any(isinstance(f, str) for f in files):
            payload["files"] = [f for f in files if isinstance(f, str)]
        for _ in record.get("attachments") or []:
            self.tally.skip("attachment:image")
        return [self.sessions.emit(self.main, "message/user", "user", time, payload, "user")]

    def _say(self, session: str, text: str, time: str | None, source: str) -> Outgoing:
        return self.sessions.emit(session, "message/assistant", "assistant", time,
                                  {"text": cut(text)}, source)  # fmt: skip

    def _blocks(
        self, session: str, blocks: list[Any], time: str | None, source: str
    ) -> list[Outgoing]:
        out: list[Outgoing] = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                text = block.get("content")
                if not (isinstance(text, str) and text.strip()):
                    continue
                if block.get("textType") == "reasoning":
                    out.append(self.sessions.emit(session, "message/assistant", "assistant",
                                                  time, {"thinking": cut(text)},
                                                  f"{source}:reasoning"))  # fmt: skip
                else:
                    out.append(self._say(session, text, time, f"{source}:text"))
            elif kind == "plan" and isinstance(block.get("content"), str):
                out.append(self._say(session, block["content"], time, f"{source}:plan"))
            elif kind == "tool":
                out += self._tool(session, block, time, source)
            elif kind == "ask-user":
                out += self._ask(session, block, time, source)
            elif kind == "agent":
                out += self._agent(session, block, time, source)
            else:
                self.tally.skip(f"block:{kind}")
        return out

    def _call(
        self, session: str, tool: object, call_id: object, arguments: object, time: str | None,
        source: str,
    ) -> Outgoing:  # fmt: skip
        payload = {"tool": tool, "call_id": call_id, "arguments": arguments}
        event = self.sessions.emit(session, "tool/call", "assistant", time, payload, source)
        if isinstance(call_id, str):
            self.calls[call_id] = (session, event.seq)
        return event

    def _result(
        self, session: str, call: Outgoing, tool: object, output: object, time: str | None,
        source: str, *, error: bool = False,
    ) -> Outgoing:  # fmt: skip
        payload: dict[str, Any] = {"tool": tool, "output": as_text(output)}
        if error:
            payload["is_error"] = True
        return self.sessions.emit(session, "tool/result", "tool", time, payload, source,
                                  cites=[(call.session_id, call.seq)])  # fmt: skip

    def _tool(
        self, session: str, block: dict[str, Any], time: str | None, source: str
    ) -> list[Outgoing]:
        tool = block.get("toolName")
        call = self._call(session, tool, block.get("toolCallId"), block.get("input"), time,
                          f"{source}:tool")  # fmt: skip
        if "output" not in block and "outputRaw" not in block:
            return [call]  # still running when the chat was saved
        output = block.get("output", block.get("outputRaw"))
        return [call, self._result(session, call, tool, output, time, f"{source}:tool")]

    def _ask(
        self, session: str, block: dict[str, Any], time: str | None, source: str
    ) -> list[Outgoing]:
        questions = {"questions": block.get("questions")}
        call = self._call(session, "ask_user", block.get("toolCallId"), questions, time,
                          f"{source}:ask-user")  # fmt: skip
        if block.get("skipped") is True:
            answer: object = "skipped"
        elif "answers" in block:
            answer = block.get("answers")
        else:
            return [call]
        return [call, self._result(session, call, "ask_user", answer, time, f"{source}:ask-user")]

    def _agent(
        self, session: str, block: dict[str, Any], time: str | None, source: str
    ) -> list[Outgoing]:
        agent = block.get("agentId")
        if not isinstance(agent, str) or not agent:
            self.tally.skip("block:agent:no-id")
            return []
        arguments = {"agent_type": block.get("agentType"), "prompt": block.get("initialPrompt"),
                     "params": block.get("params")}  # fmt: skip
        call = self._call(session, "spawn_agents", block.get("spawnToolCallId"), arguments,
                          time, f"{source}:agent")  # fmt: skip
        child = safe_id(f"{self.key}-agent-{agent}", prefix="codebuff-")
        out = [call]
        if not self.sessions.has(child):
            extra = {"agent_type": block.get("agentType"), "agent_name": block.get("agentName")}
            out.append(self.sessions.start(child, time=time, cwd=self.cwd, parent=session,
                                           extra=extra, cites=[(session, call.seq)]))  # fmt: skip
            prompt = block.get("initialPrompt")
            if isinstance(prompt, str) and prompt.strip():
                out.append(self.sessions.emit(child, "message/user", "user", time,
                                              {"text": cut(prompt)}, "agent:prompt"))  # fmt: skip
        blocks = block.get("blocks")
        if isinstance(blocks, list):
            out += self._blocks(child, blocks, time, "agent")
        status = block.get("status")
        if status in ("complete", "failed", "cancelled"):
            out.append(self._result(session, call, "spawn_agents", block.get("content"), time,
                                    f"{source}:agent", error=status != "complete"))  # fmt: skip
        return out


def _run_state_cwd(folder: Path) -> str | None:
    try:
        state = orjson.loads((folder / RUN_STATE_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    session = state.get("sessionState") if isinstance(state, dict) else None
    context = session.get("fileContext") if isinstance(session, dict) else None
    if not isinstance(context, dict):
        return None
    for key in ("cwd", "projectRoot"):
        if isinstance(context.get(key), str) and context[key]:
            return str(context[key])
    return None


class CodebuffImporter(WholeSourceImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Codebuff chats (~/.config/manicode/projects/*/chats/*/)"
    # Before gemini-cli, which takes any ``chats/<folder>/*.json`` for a sub-agent's.
    detect_order: ClassVar[int] = 35
    pattern: ClassVar[str] = MESSAGES_FILE
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        **{f"block:{kind}": why for kind, why in _SKIPPED_BLOCKS.items()},
        "attachment:image": "images: the index holds text",
    }

    def default_locations(self) -> list[Path]:
        # ``manicode``: Codebuff's former name, kept for its folder.
        home = Path(os.environ.get("HOME") or Path.home())
        return [home / ".config" / "manicode" / "projects"]

    def accepts(self, path: Path) -> bool:
        return path.name == MESSAGES_FILE and path.parent.parent.name == "chats"

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return self.accepts(path)

    def split(self, path: Path) -> list[bytes]:
        document = json_document(path)
        if not isinstance(document, list):
            raise UnreadableSource("not a Codebuff chat (not a list of messages)")
        header = {HEADER: {"cwd": _run_state_cwd(path.parent)}}
        return [orjson.dumps(header), *(orjson.dumps(m) for m in document)]

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return CodebuffConverter(path)
