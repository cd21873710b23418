"""gptme conversations: ``$GPTME_LOGS_HOME/<name>/conversation.jsonl`` (default
``$XDG_DATA_HOME/gptme/logs``, ``~/.local/share/gptme/logs``).

One folder per conversation, named by gptme (``<date>-<words>``, or the name given with
``--name``; a sub-agent's is ``subagent-<agent id>``). ``conversation.jsonl`` holds the
main branch, one message a line as ``Message.to_dict`` writes it: ``role`` (``user``,
``assistant``, ``system``), ``content`` (a string), ``timestamp`` (ISO, the writing
machine's local time without a zone: read in ``assume_tz``, this machine's by default),
and when set ``files``, ``pinned``, ``hide``, ``ui_only``, ``call_id`` and ``metadata``
(``model``, ``usage``, ``tool``, ...). Beside it, ``config.toml``'s ``[chat]`` table gives
the workspace (``workspace``, written with ``~`` for the home folder; ``@log`` is the
conversation folder's ``workspace``) and the name (``name``); an old conversation has a
``workspace`` symlink instead. A sub-agent's folder (``subagent-<agent id>-<suffix>``) has
``subagent-meta.json`` naming its ``parent_logdir`` and the ``workdir`` it ran in (its
``config.toml`` names a workspace of its own, under its folder, that it does not use).

Tool calls live in the assistant's text. In the ``tool`` format a call is a line
``@<tool>(<call id>): {json arguments}`` and its result a ``system`` message with that
``call_id``; in the ``markdown`` format a call is a fenced block whose language is the
tool's (```` ```shell ````, ```` ```save path ````), run in order, and the ``system``
messages that follow are their results, one per call. Mapping:

- ``user``: ``message/user`` (harness text typed by ``contracts.harness``; gptme's own
  ``<system>...</system>`` nudges, "No tool call detected": ``message/context``);
  ``assistant``: its text (without the ``@tool(...)`` calls) as ``message/assistant``,
  its ``<think>`` blocks (the model's reasoning, which gptme writes into the text) as the
  message's ``reasoning``,
  then a ``tool/call`` per call; ``system`` with a ``call_id``, or after markdown calls:
  ``tool/result`` citing its call (``Error executing tool ...`` and ``Tool '...' is not
  available for execution`` results are errors; ``Interrupted by user``, a call the user
  interrupted, is an error marked ``interrupted``); gptme's compaction notices (its master
  branch keeps the whole history: the compacted context is a view in ``views/``):
  ``compaction``; other ``system`` messages (the system prompt, notices):
  ``message/context``;
- ``config.toml``'s ``name``: ``session/title``; a sub-agent's session has the parent's
  id and its start cites the ``ipython`` call whose code started it (``subagent("<id>",
  ...)``) when that was read.

Branches (``branches/*.jsonl``), compacted views (``views/``), ``lossless.jsonl`` and
``events.jsonl`` repeat the main branch and are not read. Undo and edits rewrite the file;
a re-import then re-reads it. The format has no session end: sessions are ended by
``--idle-seconds``.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    Spawn,
    SpawnLinks,
    cut,
    iso_time,
    safe_id,
)
from worker.importers.plugin import ConvertOptions, Importer, json_objects

NAME: Final = "gptme"
SOURCE_FILE: Final = "conversation.jsonl"
SUBAGENT_PREFIX: Final = "subagent-"
_ROLES: Final = frozenset({"user", "assistant", "system"})
# The model's reasoning, which gptme writes into the message's text as a block of its own.
_THINK: Final = re.compile(r"<(think|thinking)>(.*?)</\1>\s*", re.S)
# ``@tool(call id): {`` at a line's start (gptme's ``toolcall_re``); the JSON runs to its
# matching brace.
_TOOL_CALL: Final = re.compile(r"^@([^\r\n(]+?)\(([\w\-:.]+)\):\s*(?={)", re.MULTILINE)
# A fenced block: its language line and body (gptme's Codeblock.iter_from_markdown).
_FENCE: Final = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# The block languages gptme runs as tools (each tool's ``block_types``) -> the tool.
_BLOCK_TOOLS: Final = {
    "shell": "shell", "ipython": "ipython", "py": "ipython", "save": "save",
    "append": "append", "patch": "patch", "patch_many": "patch_many", "read": "read",
    "tmux": "tmux", "gh": "gh", "todo": "todo", "subagent": "subagent", "memory": "memory",
    "morph": "morph", "hashline_edit": "hashline_edit", "complete": "complete",
}  # fmt: skip
# The writer's own failure texts for a tool result (tools/base.py): an exception, or a tool
# not enabled ("Tool 'read' is not available for execution. Add --tools +read ...").
_ERROR_PREFIX: Final = "Error executing tool '"
# The result gptme writes for a call the user interrupted (Ctrl-C while the tool ran).
_INTERRUPTED: Final = "Interrupted by user"
_UNAVAILABLE: Final = re.compile(r"^Tool '[^'\n]+' is not available for execution\.")
# gptme's own nudges in the user's turn (tools/complete.py: "<system>No tool call detected").
_NUDGE: Final = "<system>"
# A sub-agent is started from Python (the ``subagent`` tool's functions are called in an
# ``ipython`` call): ``subagent("<agent id>", ...)`` or ``subagent(agent_id="<agent id>", ...)``.
_SUBAGENT_CALL: Final = re.compile(r"\bsubagent\(\s*(?:agent_id\s*=\s*)?([\"'])([^\"'\n]+)\1")
# The notices gptme writes to the master branch when it compacts the context into a view.
_COMPACTIONS: Final = (
    "🔄 Auto-compacted conversation",
    "✅ Trim compaction completed",
    "✅ Native compaction completed",
    "✅ LLM-powered resume completed",
)


def _json_end(text: str, start: int) -> int | None:
    """The end of the JSON object starting at ``start`` (braces outside strings)."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def tool_calls(content: str) -> tuple[str, list[dict[str, Any]]]:
    """The text without its ``@tool(id): {...}`` calls, and every call in order: tool-format
    ones (``call_id`` set) and markdown blocks in a tool's language."""
    calls: list[tuple[int, dict[str, Any]]] = []
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(content)]
    kept: list[str] = []
    position = 0
    for match in _TOOL_CALL.finditer(content):
        if match.start() < position or any(a <= match.start() < b for a, b in fences):
            continue  # inside an earlier call's JSON, or an example in a code block
        end = _json_end(content, match.end())
        if end is None:
            continue  # cut off mid-call: left in the text
        try:
            arguments = orjson.loads(content[match.end() : end])
        except orjson.JSONDecodeError:
            arguments = content[match.end() : end]
        kept.append(content[position : match.start()])
        position = end
        calls.append((match.start(), {"tool": match.group(1).strip(), "call_id": match.group(2),
                                      "arguments": arguments}))  # fmt: skip
    kept.append(content[position:])
    for match in _FENCE.finditer(content):
        lang = match.group(1).strip()
        head = lang.split(" ")[0] if lang else ""
        tool = _BLOCK_TOOLS.get(head)
        if tool is None:
            continue
        args = lang.split(" ")[1:] if tool not in ("save", "append", "patch") else [lang]
        arguments = {"args": args, "content": match.group(2)}
        calls.append((match.start(), {"tool": tool, "call_id": None, "arguments": arguments}))
    calls.sort(key=lambda item: item[0])
    return "".join(kept).strip(), [call for _, call in calls]


def _spawned(call: dict[str, Any]) -> list[str]:
    """The sub-agents a call starts: the ids ``subagent(...)`` is called with in its code."""
    arguments = call["arguments"]
    if call["tool"] != "ipython" or not isinstance(arguments, dict):
        return []
    code = arguments.get("code", arguments.get("content"))
    return [m.group(2) for m in _SUBAGENT_CALL.finditer(code)] if isinstance(code, str) else []


def _chat_config(logdir: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads((logdir / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    chat = data.get("chat")
    return chat if isinstance(chat, dict) else {}


def workspace_of(logdir: Path) -> str | None:
    """The conversation's workspace as gptme saved it (``None`` when it saved none)."""
    raw = _chat_config(logdir).get("workspace")
    if isinstance(raw, str) and raw:
        if raw == "@log":
            return str(logdir / "workspace")
        # gptme writes the home folder as ``~`` (path_with_tilde): this machine's home.
        return str(Path(raw).expanduser())
    link = logdir / "workspace"
    if link.is_symlink():
        return os.readlink(link)
    return None


def _subagent_meta(logdir: Path) -> dict[str, Any]:
    try:
        value = orjson.loads((logdir / "subagent-meta.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def session_id_of(logdir_name: str) -> str:
    return safe_id(logdir_name, prefix="gptme-")


class GptmeConverter(JsonRecordConverter):
    def __init__(
        self, path: Path, *, links: SpawnLinks | None = None, assume_tz: tzinfo | None = None
    ) -> None:
        super().__init__(path, NAME)
        # gptme writes ``datetime.now()``: the writing machine's time, without a zone.
        self.assume_tz: tzinfo = assume_tz or datetime.now().astimezone().tzinfo or UTC
        self.logdir = path.parent
        self.session = session_id_of(self.logdir.name)
        self.links: SpawnLinks = {} if links is None else links
        self.calls: dict[str, tuple[str, int, str]] = {}  # call id -> (session, seq, tool)
        self.pending: list[tuple[int, str]] = []  # markdown calls awaiting results: (seq, tool)

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        role, content = record.get("role"), record.get("content")
        if role not in _ROLES or not isinstance(content, str):
            # gptme itself skips such a line when it reads the log.
            self.tally.skip(f"message:{role}" if isinstance(role, str) else "record:unreadable")
            return []
        time = iso_time(record.get("timestamp"), assume=self.assume_tz)
        out: list[Outgoing] = []
        if not self.sessions.has(self.session):
            out += self._start(time)
        if role == "user":
            out += self._user(record, content, time)
        elif role == "assistant":
            out += self._assistant(record, content, time)
        else:
            out += self._system(record, content, time)
        return out

    def _start(self, time: str | None) -> list[Outgoing]:
        config = _chat_config(self.logdir)
        meta = _subagent_meta(self.logdir) if self.logdir.name.startswith(SUBAGENT_PREFIX) else {}
        parent_dir = meta.get("parent_logdir")
        parent = session_id_of(Path(parent_dir).name) if isinstance(parent_dir, str) else None
        agent = meta.get("agent_id")
        spawn = self.links.get((parent, agent)) if parent and isinstance(agent, str) else None
        extra: dict[str, Any] = {}
        if isinstance(config.get("model"), str):
            extra["model"] = config["model"]
        # A sub-agent's config.toml names a workspace folder of its own that it does not work
        # in; the folder it ran in is its meta's ``workdir``.
        workdir = meta.get("workdir")
        cwd = workdir if isinstance(workdir, str) and workdir else workspace_of(self.logdir)
        out = [self.sessions.start(self.session, time=time, cwd=cwd,
                                   parent=parent, extra=extra,
                                   cites=[spawn[:2]] if spawn else None)]  # fmt: skip
        name = config.get("name")
        if isinstance(name, str) and name.strip():
            out.append(self.sessions.emit(self.session, "session/title", "system", None,
                                          {"title": cut(name.strip())}, "config"))  # fmt: skip
        return out

    def _user(self, record: dict[str, Any], content: str, time: str | None) -> list[Outgoing]:
        nudge = content.lstrip().startswith(_NUDGE)
        type_ = "message/context" if nudge else harness_type(content) or "message/user"
        payload: dict[str, Any] = {"text": cut(content)}
        files = record.get("files")
        if isinstance(files, list) and files:
            payload["files"] = [str(f) for f in files]
        surface = harness.SURFACES.get(type_, "user")
        return [self.sessions.emit(self.session, type_, surface, time, payload, "message:user")]

    def _assistant(self, record: dict[str, Any], content: str, time: str | None) -> list[Outgoing]:
        text, calls = tool_calls(content)
        thoughts = [m.group(2).strip() for m in _THINK.finditer(text)]
        if thoughts:
            text = _THINK.sub("", text).strip()
        out: list[Outgoing] = []
        self.pending = []
        if text or thoughts:
            payload: dict[str, Any] = {"text": cut(text)}
            if thoughts:
                payload["reasoning"] = cut("\n\n".join(thoughts))
            meta = record.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("model"), str):
                payload["model"] = meta["model"]
            out.append(self.sessions.emit(self.session, "message/assistant", "assistant", time,
                                          payload, "message:assistant"))  # fmt: skip
        for call in calls:
            event = self.sessions.emit(self.session, "tool/call", "assistant", time, call,
                                       "message:assistant:tool")  # fmt: skip
            out.append(event)
            call_id = call["call_id"]
            if isinstance(call_id, str):
                self.calls[call_id] = (self.session, event.seq, call["tool"])
            else:
                self.pending.append((event.seq, call["tool"]))
            for agent in _spawned(call):
                self.links[(self.session, agent)] = Spawn(self.session, event.seq)
        return out

    def _system(self, record: dict[str, Any], content: str, time: str | None) -> list[Outgoing]:
        if content.startswith(_COMPACTIONS):
            self.pending = []
            return [self.sessions.compaction(self.session, time, {"summary": cut(content)},
                                             "message:system:compaction")]  # fmt: skip
        call_id = record.get("call_id")
        meta = record.get("metadata")
        tool = meta.get("tool") if isinstance(meta, dict) else None
        cited: tuple[str, int] | None = None
        if isinstance(call_id, str):
            known = self.calls.get(call_id)
            if known is not None:  # most results name no tool: the call does
                cited, tool = known[:2], tool or known[2]
        elif self.pending:
            seq, tool_name = self.pending.pop(0)
            cited, tool = (self.session, seq), tool or tool_name
        if isinstance(call_id, str) or cited is not None:
            payload: dict[str, Any] = {"tool": tool, "call_id": call_id, "output": cut(content)}
            if content.startswith(_ERROR_PREFIX) or _UNAVAILABLE.match(content):
                payload["is_error"] = True
            elif content == _INTERRUPTED:
                payload |= {"is_error": True, "interrupted": True}
            return [self.sessions.emit(self.session, "tool/result", "tool", time, payload,
                                       "message:system:tool",
                                       cites=[cited] if cited else None)]  # fmt: skip
        payload = {"text": cut(content)}
        if record.get("hide") is True or record.get("ui_only") is True:
            payload["hidden"] = True  # shown in gptme's interface only, or not at all
        return [self.sessions.emit(self.session, "message/context", "system", time, payload,
                                   "message:system")]  # fmt: skip


class GptmeImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "gptme conversations ($GPTME_LOGS_HOME/<name>/conversation.jsonl)"
    env_vars: ClassVar[tuple[str, ...]] = ("GPTME_LOGS_HOME", "XDG_DATA_HOME")
    detect_order: ClassVar[int] = 60
    pattern: ClassVar[str] = SOURCE_FILE

    def default_locations(self) -> list[Path]:
        home = os.environ.get("GPTME_LOGS_HOME")
        if home:
            return [Path(home)]
        data = os.environ.get("XDG_DATA_HOME")
        base = Path(data) if data else Path.home() / ".local" / "share"
        return [base / "gptme" / "logs"]

    def accepts(self, path: Path) -> bool:
        # Only the main branch: branches/ and views/ hold other names; lossless.jsonl too.
        return path.name == SOURCE_FILE

    def files(self, root: Path) -> list[Path]:
        # Sub-agents' conversations after the others: their start cites the spawning call.
        found = super().files(root)
        return sorted(found, key=lambda p: (p.parent.name.startswith(SUBAGENT_PREFIX), str(p)))

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.name != SOURCE_FILE:
            return False
        return any(
            r.get("role") in _ROLES and isinstance(r.get("content"), str) and "timestamp" in r
            for r in json_objects(head)
        )

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return GptmeConverter(path, links=options.links, assume_tz=options.assume_tz)
