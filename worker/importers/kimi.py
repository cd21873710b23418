"""Kimi CLI (MoonshotAI's ``kimi-cli``): ``$KIMI_SHARE_DIR/sessions/<work dir hash>/
<session>/wire.jsonl`` (default ``~/.kimi``), sub-agents in ``<session>/subagents/<agent
id>/wire.jsonl``.

Studied: ``kimi-cli`` 1.52.0 (``wire/file.py``, ``wire/types.py``, ``wire/__init__.py``'s
recorder, ``session.py``, ``session_state.py``, ``metadata.py``, ``subagents/store.py``
and ``runner.py``, ``soul/kimisoul.py``, ``soul/context.py``) and ``kosong`` 0.56.0 (the
message and tool result models it serialises).

``wire.jsonl`` is the session's event log, appended as the agent runs: a header
(``{"type": "metadata", "protocol_version"}``; files of protocol 1.1 have none), then
``{"timestamp": <seconds>, "message": {"type", "payload"}}`` records, each stream of
deltas merged into one record before it is written. ``context.jsonl`` beside it is the
model's context, rewritten on every compaction, undo and clear: not read.

- the session: ``kimi-<session>`` (its folder's name); cwd: the work directory whose
  hash (``md5`` of its path, ``<kaos>_``-prefixed off the local machine) names the
  folder above, from ``kimi.json``'s ``work_dirs``; none when it is not listed.
- a call still without a result when its turn ends (``TurnEnd``: the turn was
  interrupted while the tool ran; Kimi writes no result) gets one marked
  ``interrupted``, ``is_error``, with no output.
- ``TurnBegin`` and ``SteerInput`` (the user's input, a string or parts) as
  ``message/user`` (harness text typed); ``ContentPart`` ``text`` as
  ``message/assistant``, ``think`` as thinking; ``ToolCall`` as ``tool/call`` (its
  arguments' JSON); ``ToolResult`` as its ``tool/result`` (``return_value.output``, else
  its ``message``; ``is_error`` kept); ``Notification`` as ``message/context``;
  ``CompactionEnd`` as a ``compaction`` replacing what came before (the summary itself
  is only in ``context.jsonl``).
- a sub-agent's own ``wire.jsonl`` is the child ``kimi-<session>-agent-<agent id>``:
  its start cites the ``Agent`` call that the parent's ``SubagentEvent`` records
  (``parent_tool_call_id``, ``agent_id``) name, and its ``meta.json`` ``description``
  titles it. Those ``SubagentEvent`` copies in the parent's log are counted, not
  imported again.
- the title: ``state.json``'s ``custom_title`` (``/title``, or generated), published
  just before the session's end (it changes after the first turns).
- skipped and counted: turn and step markers, retries, status updates, MCP loading,
  hooks, approvals, questions, plan displays, ``/btw`` side questions, image, audio and
  video parts, encrypted thinking without text, new record types. A session the CLI
  forked (``/fork``) starts as a copy of the original's log: it is imported as its own
  session (nothing in it names the original).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    Spawn,
    SpawnLinks,
    as_text,
    cut,
    interrupted_results,
    json_value,
    safe_id,
)
from worker.importers.plugin import ConvertOptions, Importer, json_objects
from worker.importers.source_reading import field_of, from_seconds

NAME: Final = "kimi"
PREFIX: Final = "kimi-"
WIRE: Final = "wire.jsonl"
CONTEXT: Final = "context.jsonl"
SUBAGENTS: Final = "subagents"
# What ends the model's stream of a tool call's arguments. Other records come between
# (other calls' results, approvals, sub-agents' events, status updates) while it streams.
_END_STREAM: Final = frozenset({
    "ToolCall", "ContentPart", "TurnBegin", "SteerInput", "TurnEnd", "StepBegin",
    "StepInterrupted", "StepRetry", "CompactionBegin", "CompactionEnd",
})  # fmt: skip
# Wire messages that carry no conversation, and why.
_BY_DESIGN: Final = {
    "TurnEnd": "turn boundary", "StepBegin": "step boundary",
    "StepInterrupted": "an interrupted step: what it wrote is imported",
    "StepRetry": "retries of a failed request", "StatusUpdate": "context and token usage",
    "MCPLoadingBegin": "MCP server loading", "MCPLoadingEnd": "MCP server loading",
    "HookTriggered": "hook runs", "HookResolved": "hook runs", "HookRequest": "hook runs",
    "ApprovalRequest": "approval prompts: the call and its result are imported",
    "ApprovalResponse": "approval answers", "ApprovalRequestResolved": "approval answers",
    "QuestionRequest": "questions to the user (AskUserQuestion): the call is imported",
    "ToolCallRequest": "calls the client runs: the call is imported",
    "PlanDisplay": "plan display", "BtwBegin": "/btw side questions, outside the session",
    "BtwEnd": "/btw side questions, outside the session",
}  # fmt: skip
# utils/slashcmd.py's parse_slash_command_call: a turn that is a slash command runs it.
_SLASH: Final = re.compile(r"^/([a-zA-Z0-9_-]+(?::[a-zA-Z0-9_-]+)*)(?:\s|$)")


def share_dir() -> Path:
    moved = os.environ.get("KIMI_SHARE_DIR")
    return Path(moved) if moved else Path.home() / ".kimi"


def work_dirs(share: Path | None = None) -> dict[str, str]:
    """``kimi.json`` (in ``share``, else this machine's share dir): the sessions folder's
    name (the work dir's hash) -> the work dir."""
    try:
        listed = orjson.loads(((share or share_dir()) / "kimi.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    found = {}
    for entry in listed.get("work_dirs") or [] if isinstance(listed, dict) else []:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            digest = hashlib.md5(entry["path"].encode("utf-8")).hexdigest()
            kaos = entry.get("kaos") or "local"
            found[digest if kaos == "local" else f"{kaos}_{digest}"] = entry["path"]
    return found


def work_dir_of(folder: Path) -> str | None:
    """The work dir whose hash names a session ``folder``'s parent: from the ``kimi.json``
    of the share dir the folder is in (``<share>/sessions/<hash>/<session>``: a copy of
    another machine's, or a moved one), else from this machine's."""
    shares = [share_dir()]
    if folder.parent.parent.name == "sessions":
        shares.insert(0, folder.parent.parent.parent)
    for share in shares:
        found = work_dirs(share).get(folder.parent.name)
        if found is not None:
            return found
    return None


def _json_file(path: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


class KimiConverter(JsonRecordConverter):
    def __init__(self, path: Path, *, links: SpawnLinks | None = None) -> None:
        super().__init__(path, NAME)
        self.links: SpawnLinks = {} if links is None else links
        folder = path.parent
        self.agent: str | None = None
        if folder.parent.name == SUBAGENTS:  # <session>/subagents/<agent id>/wire.jsonl
            self.agent, folder = folder.name, folder.parent.parent
        self.folder = folder
        self.raw = folder.name
        self.main = safe_id(self.raw, prefix=PREFIX)
        self.session = self.main if self.agent is None else safe_id(
            f"{self.raw}-agent-{self.agent}", prefix=PREFIX
        )  # fmt: skip
        self.calls: dict[str, tuple[int, object, object]] = {}  # call id -> seq, tool, input
        # Calls without a result yet: call id -> the session that made it.
        self.open_calls: dict[str, str] = {}
        # Sessions whose turn is a slash command's: their text is its output.
        self.command_turn: set[str] = set()
        # Sub-agents known only from the parent's SubagentEvent copies (versions before
        # their own logs): their description (the call's), the title they get.
        self.titles: dict[str, str | None] = {}
        # Per session, the tool call being streamed: (id, name, arguments so far, time).
        # A tool that starts while the model still streams splits the merged record: the
        # rest of its arguments arrive as ToolCallPart records after other records.
        self.streaming: dict[str, tuple[str, object, str, str | None]] = {}

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        if record.get("type") == "metadata":
            return []  # the header: the protocol version
        message = field_of(record, "message")
        if not message:
            self.tally.skip(f"record:{record.get('type')}:not-a-wire-message")
            return []
        kind, payload = message.get("type"), field_of(message, "payload")
        time = from_seconds(record.get("timestamp"))
        out = [] if self.sessions.has(self.session) else [self._start(time)]
        if self.sessions.by_id[self.session].ended:
            self.tally.skip(f"record:{kind}:after-end")
            return out
        return out + self._event(self.session, str(kind), payload, time, "record")

    def _start(self, time: str | None) -> Outgoing:
        extra: dict[str, Any] = {}
        cites = None
        parent = None
        if self.agent is not None:
            parent = self.main
            meta = _json_file(self.folder / SUBAGENTS / self.agent / "meta.json")
            if isinstance(meta.get("subagent_type"), str):
                extra["subagent_type"] = meta["subagent_type"]
            spawn = self.links.get((self.raw, self.agent))
            cites = [(spawn.session_id, spawn.seq)] if spawn else None
        return self.sessions.start(
            self.session, time=time, cwd=work_dir_of(self.folder),
            parent=parent, extra=extra, cites=cites,
        )  # fmt: skip

    def _event(
        self, sid: str, kind: str, payload: dict[str, Any], time: str | None, skip: str
    ) -> list[Outgoing]:
        """One wire message of session ``sid``: its events, after the tool call it ends
        (a call's arguments are whole once the model's stream moves on: another call, text,
        a new step or turn; or once the call's own result comes). Skipped kinds are counted
        as ``skip:kind``."""
        streaming = self.streaming.get(sid)
        if kind == "ToolCallPart" and streaming is not None:
            part = payload.get("arguments_part")
            call_id, name, arguments, started = streaming
            self.streaming[sid] = (call_id, name, arguments + str(part or ""), started)
            return []
        own_result = streaming is not None and kind == "ToolResult" and (
            str(payload.get("tool_call_id")) == streaming[0]
        )  # fmt: skip
        out = self._end_call(sid) if kind in _END_STREAM or own_result else []
        if kind == "TurnEnd":
            out += self._interrupted(sid, time)
        made = self._message(sid, kind, payload, time)
        if made is None:
            self.tally.skip(f"{skip}:{kind}")
        return out + (made or [])

    def _end_call(self, sid: str) -> list[Outgoing]:
        """The call being streamed, now whole, as its ``tool/call``."""
        streaming = self.streaming.pop(sid, None)
        if streaming is None:
            return []
        call_id, name, arguments, time = streaming
        call = {"tool": name, "input": json_value(arguments)}
        made = self.sessions.emit(sid, "tool/call", "assistant", time, call, "ToolCall")
        self.calls[call_id] = (made.seq, name, call["input"])
        self.open_calls[call_id] = sid
        return [made]

    def _message(
        self, sid: str, kind: str, payload: dict[str, Any], time: str | None
    ) -> list[Outgoing] | None:
        if kind in ("TurnBegin", "SteerInput"):
            return self._user(sid, payload.get("user_input"), time, kind)
        if kind == "TurnEnd":
            self.command_turn.discard(sid)
            return None  # a marker: counted (its calls without a result: _event)
        if kind == "ContentPart":
            return self._part(sid, payload, time)
        if kind == "ToolCall":  # published once its arguments are whole (_end_call)
            function = field_of(payload, "function")
            arguments = function.get("arguments")
            text = arguments if isinstance(arguments, str) else ""
            self.streaming[sid] = (str(payload.get("id")), function.get("name"), text, time)
            return []
        if kind == "ToolResult":
            value = field_of(payload, "return_value")
            output = as_text(value.get("output")) or as_text(value.get("message"))
            result: dict[str, Any] = {"output": output}
            if value.get("is_error") is True:
                result["is_error"] = True
            self.open_calls.pop(str(payload.get("tool_call_id")), None)
            called = self.calls.pop(str(payload.get("tool_call_id")), None)
            cites = [(sid, called[0])] if called else None
            if called:
                result["tool"] = called[1]
            return [self.sessions.emit(sid, "tool/result", "tool", time, result, kind,
                                       cites=cites)]  # fmt: skip
        if kind == "CompactionEnd":
            return [self.sessions.compaction(sid, time, {}, kind)]
        if kind == "CompactionBegin":
            return []  # its end is the compaction
        if kind == "Notification":
            text = "\n".join(str(payload[k]) for k in ("title", "body") if payload.get(k))
            return [self.sessions.emit(sid, "message/context", "system", time,
                                       {"text": cut(text)}, kind)]  # fmt: skip
        if kind == "SubagentEvent" and sid == self.session:
            return self._subagent(payload, time)
        return None

    def _interrupted(self, sid: str, time: str | None) -> list[Outgoing]:
        """The calls of ``sid`` still without a result when its turn ends: the turn was
        interrupted (Ctrl-C) while they ran, and Kimi writes no result for them, so each
        gets one marked ``interrupted``."""
        return interrupted_results(self.sessions, sid, self.open_calls,
                                   lambda call_id: self.calls.pop(call_id)[:2],
                                   time, "ToolResult:missing")  # fmt: skip

    def _user(self, sid: str, user_input: object, time: str | None, kind: str) -> list[Outgoing]:
        parts = (
            [{"type": "text", "text": user_input}] if isinstance(user_input, str) else user_input
        )
        parts = parts if isinstance(parts, list) else []
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        slash = _SLASH.match(" ".join(texts).strip()) if kind == "TurnBegin" else None
        if kind == "TurnBegin":
            self.command_turn.discard(sid)
        if slash is not None:  # the CLI runs it; the model never sees it
            self.command_turn.add(sid)
            payload = {"text": cut(" ".join(texts).strip()), "command": slash.group(1)}
            return [self.sessions.emit(sid, "command", "user", time, payload, kind)]
        out: list[Outgoing] = []
        for part in parts if isinstance(parts, list) else []:
            text = part.get("text") if isinstance(part, dict) else None
            if not isinstance(text, str) or not text.strip():
                kind_of = part.get("type") if isinstance(part, dict) else None
                self.tally.skip(f"{kind}:{kind_of}")
                continue
            type_ = harness.harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            out.append(self.sessions.emit(sid, type_, surface, time, {"text": cut(text)}, kind))
        return out

    def _part(self, sid: str, payload: dict[str, Any], time: str | None) -> list[Outgoing] | None:
        kind = payload.get("type")
        if kind == "text" and isinstance(payload.get("text"), str):
            text = {"text": cut(payload["text"])}
            if sid in self.command_turn:  # what a slash command printed
                return [self.sessions.emit(sid, "command/output", "tool", time, text,
                                           "ContentPart:text")]  # fmt: skip
            return [self.sessions.emit(sid, "message/assistant", "assistant", time, text,
                                       "ContentPart:text")]  # fmt: skip
        if kind == "think" and isinstance(payload.get("think"), str) and payload["think"].strip():
            thought = {"thinking": cut(payload["think"])}
            return [self.sessions.emit(sid, "message/assistant", "assistant", time, thought,
                                       "ContentPart:think")]  # fmt: skip
        self.tally.skip(f"record:ContentPart:{kind}")
        return []

    def _subagent(self, payload: dict[str, Any], time: str | None) -> list[Outgoing]:
        """A sub-agent's event, copied into its parent's log. With the sub-agent's own log
        (1.x) it names the call that started it; before those logs (``task_tool_call_id``,
        no ``agent_id``) it is the only record of the sub-agent: its child session."""
        agent = payload.get("agent_id")
        call = payload.get("parent_tool_call_id") or payload.get("task_tool_call_id")
        streaming = self.streaming.get(self.session)
        # The sub-agent runs: the call that started it is whole.
        out = self._end_call(self.session) if streaming and streaming[0] == call else []
        called = self.calls.get(str(call)) if call else None
        arguments = called[2] if called is not None and isinstance(called[2], dict) else {}
        description = arguments.get("description")
        described = description if isinstance(description, str) else None
        if isinstance(agent, str) and (self.folder / SUBAGENTS / agent / WIRE).is_file():
            if called is not None and (self.raw, agent) not in self.links:
                self.links[(self.raw, agent)] = Spawn(self.session, called[0], described)
            self.tally.skip("record:SubagentEvent")  # a copy of the sub-agent's own log
            return out
        key = agent if isinstance(agent, str) else str(call)
        child = safe_id(f"{self.raw}-agent-{key}", prefix=PREFIX)
        if not self.sessions.has(child):
            extra = {"subagent_type": payload["subagent_type"]} if isinstance(
                payload.get("subagent_type"), str) else {}  # fmt: skip
            cites = [(self.session, called[0])] if called is not None else None
            out.append(self.sessions.start(
                child, time=time, cwd=work_dir_of(self.folder),
                parent=self.session, extra=extra, cites=cites,
            ))  # fmt: skip
            self.titles[child] = described
        event = field_of(payload, "event")
        kind = str(event.get("type"))
        return out + self._event(child, kind, field_of(event, "payload"), time,
                                 "record:SubagentEvent")  # fmt: skip

    def _title(self, sid: str) -> str | None:
        if sid in self.titles:
            return self.titles[sid]
        if self.agent is not None:
            meta = _json_file(self.folder / SUBAGENTS / self.agent / "meta.json")
            description = meta.get("description")
            spawn = self.links.get((self.raw, self.agent))
            return description if isinstance(description, str) and description else (
                spawn.description if spawn else None
            )  # fmt: skip
        title = _json_file(self.folder / "state.json").get("custom_title")
        return title if isinstance(title, str) and title.strip() else None

    def _close(self, sids: list[str]) -> list[Outgoing]:
        """Each session's call still open (the log ended inside it), title (the
        source's now), then its end."""
        out = []
        for sid in sids:
            out += self._end_call(sid)
            title = self._title(sid)
            if title:
                payload = {"title": cut(title)}
                out.append(self.sessions.emit(sid, "session/title", "system", None, payload,
                                              "title"))  # fmt: skip
            ended = self.sessions.end(sid, reason="idle")
            out += [ended] if ended is not None else []
        self.tally.events += len(out)
        return out

    def idle(self) -> list[Outgoing]:
        return self._close([sid for sid, s in self.sessions.by_id.items() if not s.ended])

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        open_ = [(sid, s) for sid, s in self.sessions.by_id.items() if not s.ended]
        quiet = [sid for sid, s in open_ if datetime.fromisoformat(s.last_time) < before]
        return self._close(quiet)


class KimiImporter(Importer):
    name: ClassVar[str] = "kimi"
    help: ClassVar[str] = "Kimi CLI sessions: wire.jsonl event logs ($KIMI_SHARE_DIR, ~/.kimi)"
    env_vars: ClassVar[tuple[str, ...]] = ("KIMI_SHARE_DIR",)
    detect_order: ClassVar[int] = 60
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        **{f"record:{kind}": why for kind, why in _BY_DESIGN.items()},
        **{f"record:SubagentEvent:{kind}": why for kind, why in _BY_DESIGN.items()},
        "record:SubagentEvent": "a sub-agent's events copied into its parent's log; its own"
        " log is imported",
        "*:image_url": "images are not searchable text",
        "*:audio_url": "audio is not searchable text",
        "*:video_url": "video is not searchable text",
        "record:ContentPart:think": "encrypted thinking: nothing readable",
    }
    pattern: ClassVar[str] = WIRE

    def default_locations(self) -> list[Path]:
        return [share_dir() / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.name == CONTEXT and (path.parent / WIRE).is_file():
            return True  # the model's context beside a session's log: Kimi's, not a source
        if path.name != WIRE:
            return False
        # Kimi Code (its successor, ~/.kimi-code) also writes a wire.jsonl with this
        # header, but flat records ({"type": "context.append_message", ...}): not this.
        records = list(json_objects(head))
        return bool(records) and all(
            r.get("type") == "metadata" or isinstance(r.get("message"), dict) for r in records
        )

    def accepts(self, path: Path) -> bool:
        """``context.jsonl`` is rewritten on every compaction: the log is ``wire.jsonl``
        (``--format auto`` over a tree finds the context among every JSON Lines file, and
        counts it as not a source)."""
        return path.name != CONTEXT

    def files(self, root: Path) -> list[Path]:
        """A session's log before its sub-agents' (their starts cite its calls)."""

        def order(path: Path) -> tuple[str, int, str]:
            if path.parent.parent.name == SUBAGENTS:
                return (str(path.parent.parent.parent), 1, str(path))
            return (str(path.parent), 0, str(path))

        return sorted(root.rglob(WIRE), key=order)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return KimiConverter(path, links=options.links)
