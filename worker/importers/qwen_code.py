"""Qwen Code chats: ``~/.qwen/projects/<project>/chats/<session id>.jsonl``.

Qwen Code grew out of Gemini CLI but records its chats its own way: one record per line
with ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``cwd``, ``version``,
``gitBranch`` and ``type`` (``user``, ``assistant``, ``tool_result``, ``system`` with a
``subtype``); a message's ``message`` is the model API's content (``role``, ``parts``:
``text``, ``thought`` text, ``functionCall``, ``functionResponse``). Mapping:

- the first record starts the session (its ``cwd``, version, git branch); a user part
  is ``message/user`` (harness text typed by ``contracts.harness``), an assistant text
  part ``message/assistant``, a thought part ``message/assistant`` with ``thinking``, a
  ``functionCall`` ``tool/call``, a ``functionResponse`` ``tool/result`` citing its call;
- ``system`` records: ``chat_compression`` is a ``compaction`` replacing what came
  before (its summary: the compressed history's text), ``custom_title`` a
  ``session/title``, ``slash_command`` a ``command`` (its invocation) or
  ``command/output`` (its result), ``at_command`` and ``notification``
  ``message/context``; a ``parent_session`` record before any message makes the
  session a child of the one it names;
- records of a sub-agent (``isSidechain`` with ``agentId``) form the child session
  ``<session>-agent-<agentId>``; newer versions (0.24) write them in a file of their own,
  ``subagents/<session id>/agent-<type>-<call id>.jsonl``, beside a ``.meta.json`` whose
  ``toolUseId`` names the spawning call (the child's start cites it) and whose
  ``description`` titles the child (read after the parent's chats: ``chats`` sorts first).

Other system subtypes (telemetry, snapshots, model and mode bindings, goals) and new
record types are skipped and counted. Sessions are ended by ``--idle-seconds``.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    as_text,
    cut,
    iso_time,
    safe_id,
)
from worker.importers.gemini_cli import parts_text
from worker.importers.plugin import ConvertOptions, Importer, json_objects

NAME: Final = "qwen-code"
# ``background_task_completed`` (0.24): a background task's end, its ``displayText``.
_CONTEXT_SUBTYPES: Final = frozenset({"at_command", "notification", "background_task_completed"})
SUBAGENTS: Final = "subagents"


def _fields(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _meta(path: Path) -> dict[str, Any]:
    """A sub-agent file's ``.meta.json`` (its spawning call, description), if any."""
    try:
        return _fields(orjson.loads(path.with_suffix(".meta.json").read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return {}


class QwenConverter(JsonRecordConverter):
    def __init__(self, path: Path, *, links: SpawnLinks | None = None) -> None:
        super().__init__(path, NAME)
        self.calls: dict[str, tuple[str, int, object]] = {}  # functionCall id -> event, name
        self.parents: dict[str, str] = {}  # session -> parent named by parent_session
        self.links: SpawnLinks = {} if links is None else links
        self.meta = _meta(path) if path.parent.parent.name == SUBAGENTS else {}
        self.raw = ""  # the session id of the record being converted

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        kind, raw = record.get("type"), record.get("sessionId")
        if kind not in ("user", "assistant", "tool_result", "system") or not isinstance(raw, str):
            self.tally.skip(f"record:{kind}")
            return []
        time = iso_time(record.get("timestamp"))
        payload = _fields(record.get("systemPayload"))
        if record.get("subtype") == "parent_session" and not self.sessions.has(safe_id(raw)):
            parent = payload.get("parentSessionId")
            if isinstance(parent, str):
                self.parents[safe_id(raw)] = safe_id(parent)
            return []
        out: list[Outgoing] = []
        self.raw = raw
        session = self._session(record, raw, time, out)
        if kind == "system":
            out += self._system(session, str(record.get("subtype")), payload, time)
            return out
        parts = _fields(record.get("message")).get("parts")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                out += self._part(session, str(kind), part, time)
        return out

    def _session(
        self, record: dict[str, Any], raw: str, time: str | None, out: list[Outgoing]
    ) -> str:
        main = safe_id(raw)
        agent = record.get("agentId")
        sidechain = record.get("isSidechain") is True and isinstance(agent, str)
        session = safe_id(f"{raw}-agent-{agent}") if sidechain else main
        if not self.sessions.has(session):
            cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else None
            extra = {
                k: record[k] for k in ("version", "gitBranch") if isinstance(record.get(k), str)
            }
            if isinstance(agent, str) and sidechain:
                extra["agent_id"] = agent
            parent = main if sidechain else self.parents.get(main)
            tool_use = self.meta.get("toolUseId") if sidechain else None
            spawn = self.links.get((raw, tool_use)) if isinstance(tool_use, str) else None
            cites = [(spawn.session_id, spawn.seq)] if spawn else None
            out.append(self.sessions.start(session, time=time, cwd=cwd or None, parent=parent,
                                           extra=extra, cites=cites))  # fmt: skip
            title = self.meta.get("description") if spawn else None
            if isinstance(title, str) and title:
                payload = {"title": cut(title)}
                out.append(self.sessions.emit(session, "session/title", "system", None,
                                              payload, "meta:description"))  # fmt: skip
        return session

    def _part(
        self, session: str, kind: str, part: dict[str, Any], time: str | None
    ) -> list[Outgoing]:
        emit, source = self.sessions.emit, f"{kind}:part"
        text = part.get("text")
        if isinstance(text, str) and text.strip():
            if part.get("thought") is True:
                return [emit(session, "message/assistant", "assistant", time,
                             {"thinking": cut(text)}, f"{kind}:thought")]  # fmt: skip
            if kind == "assistant":
                return [emit(session, "message/assistant", "assistant", time,
                             {"text": cut(text)}, source)]  # fmt: skip
            type_ = harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            return [emit(session, type_, surface, time, {"text": cut(text)}, source)]
        call = _fields(part.get("functionCall"))
        if call:
            call_id = call.get("id") if isinstance(call.get("id"), str) else None
            payload = {"tool": call.get("name"), "call_id": call_id, "arguments": call.get("args")}
            out = emit(session, "tool/call", "assistant", time, payload, f"{kind}:functionCall")
            if call_id:
                self.calls[call_id] = (session, out.seq, call.get("name"))
                # A sub-agent file read later names this call (its meta's toolUseId).
                self.links[(self.raw, call_id)] = Spawn(session, out.seq)
            return [out]
        response = _fields(part.get("functionResponse"))
        if response:
            call_id = response.get("id") if isinstance(response.get("id"), str) else None
            called = self.calls.get(call_id) if call_id else None
            body = _fields(response.get("response"))
            result = body.get("output", body.get("error", body))
            payload = {"tool": response.get("name"), "call_id": call_id, "output": as_text(result)}
            if "error" in body:
                payload["is_error"] = True
            return [emit(session, "tool/result", "tool", time, payload,
                         f"{kind}:functionResponse",
                         cites=[called[:2]] if called else None)]  # fmt: skip
        self.tally.skip(f"part:{kind}:{'+'.join(sorted(part)) or 'empty'}")
        return []

    def _system(
        self, session: str, subtype: str, payload: dict[str, Any], time: str | None
    ) -> list[Outgoing]:
        source = f"system:{subtype}"
        emit = self.sessions.emit
        if subtype == "chat_compression":
            history = payload.get("compressedHistory")
            contents = history if isinstance(history, list) else []
            summary = "\n".join(parts_text(_fields(c).get("parts")) for c in contents).strip()
            return [self.sessions.compaction(session, time, {"summary": cut(summary)}, source)]
        if subtype == "custom_title" and isinstance(payload.get("customTitle"), str):
            return [emit(session, "session/title", "system", None,
                         {"title": cut(payload["customTitle"])}, source)]  # fmt: skip
        if subtype == "slash_command":
            if payload.get("phase") == "invocation":
                return [emit(session, "command", "user", time,
                             {"text": as_text(payload.get("rawCommand"))}, source)]  # fmt: skip
            items = payload.get("outputHistoryItems")
            if not items:  # a dialog command (``/agents create``) prints nothing
                self.tally.skip(f"record:{source}:no-output")
                return []
            output = as_text(items)
            return [emit(session, "command/output", "tool", time, {"text": output}, source)]
        if subtype in _CONTEXT_SUBTYPES:
            text = as_text(payload.get("displayText", payload.get("message", payload)))
            return [emit(session, "message/context", "system", time, {"text": text}, source)]
        self.tally.skip(f"record:{source}")
        return []


class QwenCodeImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Qwen Code chats (~/.qwen/projects/*/chats)"
    # Before claude-code: its records have a sessionId and a uuid too (but no parts).
    detect_order: ClassVar[int] = 15

    def default_locations(self) -> list[Path]:
        return [Path.home() / ".qwen" / "projects"]

    def accepts(self, path: Path) -> bool:
        return path.parent.name == "chats" or (
            path.parent.parent.name == SUBAGENTS and path.name.startswith("agent-")
        )

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return any(
            isinstance(r.get("sessionId"), str) and "uuid" in r
            and isinstance(r.get("message"), dict) and "parts" in r["message"]
            for r in json_objects(head)
        )  # fmt: skip

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return QwenConverter(path, links=options.links)
