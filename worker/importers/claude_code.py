"""Claude Code transcripts: ``~/.claude/projects/<project>/<session>.jsonl``.

One JSON record per line with ``type`` (``user``, ``assistant``, ``system``, ``summary``,
and others that change between versions), ``uuid``, ``parentUuid``, ``sessionId``,
``timestamp``, ``cwd``, ``gitBranch``, ``isSidechain`` and a ``message`` whose ``content``
is a string or a list of blocks (``text``, ``thinking``, ``tool_use``, ``tool_result``).

Mapping:

- the session id is the transcript's ``sessionId``; each content block becomes one event
  (``message/user``, ``message/assistant``, ``tool/call``, ``tool/result``) whose payload
  keeps the record type and uuid; a ``tool_result`` cites the event of its ``tool_use``;
- a sub-agent transcript (``<session>/subagents/agent-<id>.jsonl``, records with
  ``isSidechain`` and ``agentId``) is a child session ``<session>-agent-<id>`` whose parent
  is ``<session>``; sidechain records inside the main file (older versions) become a child
  session per sidechain thread, ``<session>-side-<first uuid>``; a sub-agent's
  ``session/start`` cites the Task ``tool/call`` whose result names the agent
  (``toolUseResult.agentId``), when the transcript was read first (``import`` and ``watch``
  read files in path order, and a transcript sorts before its sub-agents' folder);
- a ``system`` ``compact_boundary`` record followed by the summary (a user record with
  ``isCompactSummary``) becomes one ``compaction`` event that replaces every event since the
  previous compaction: the boundary says the conversation before it was summarised;
- ``summary`` records are titles (``session/title``);
- everything else (file snapshots, progress, other ``system`` records, image blocks) is
  skipped and counted. The format has no session end: ``watch`` ends a quiet session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from worker.importers.base import (
    JsonRecordConverter,
    Outgoing,
    SpawnLinks,
    as_text,
    cut,
    iso_time,
    safe_id,
)

NAME: Final = "claude-code"


class ClaudeCodeConverter(JsonRecordConverter):
    def __init__(self, path: Path, *, links: SpawnLinks | None = None) -> None:
        super().__init__(path, NAME)
        self.links: SpawnLinks = {} if links is None else links
        # tool_use id -> (session, seq, tool name) of its tool/call, for the result's citation.
        self.tool_calls: dict[str, tuple[str, int, object]] = {}
        # uuid of a sidechain record (main-file sidechains) -> its child session.
        self.side_threads: dict[str, str] = {}
        self.pending_titles: list[tuple[str, str | None]] = []
        self.boundary: dict[str, dict[str, Any]] = {}  # session -> its pending compact boundary
        self.last_seq: dict[str, int] = {}  # record uuid -> seq of its last event

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        if kind == "summary":
            return self._title(record)
        if kind not in ("user", "assistant", "system"):
            self.tally.skip(f"record:{kind}")
            return []
        out: list[Outgoing] = []
        session = self._session_for(record, out)
        if session is None:
            self.tally.skip(f"record:{kind}:no-session")
            return out
        time = iso_time(record.get("timestamp"))
        if kind == "system":
            self._system(session, record)
        elif kind == "assistant":
            out.extend(self._assistant(session, record, time))
        else:
            out.extend(self._user(session, record, time))
        uuid = record.get("uuid")
        if isinstance(uuid, str) and out and out[-1].session_id == session:
            self.last_seq[uuid] = out[-1].seq
        return out

    def _session_for(self, record: dict[str, Any], out: list[Outgoing]) -> str | None:
        """The session this record belongs to, started (with its held titles) if new."""
        raw = record.get("sessionId")
        if not isinstance(raw, str) or not raw:
            return None
        main = safe_id(raw)
        session, parent = main, None
        agent = record.get("agentId")
        if record.get("isSidechain") is True:
            parent = main
            if isinstance(agent, str) and agent:
                session = safe_id(f"{raw}-agent-{agent}")
            else:
                session = self._side_thread(raw, record)
        if not self.sessions.has(session):
            extra: dict[str, Any] = {}
            if isinstance(record.get("gitBranch"), str):
                extra["git_branch"] = record["gitBranch"]
            if isinstance(record.get("version"), str):
                extra["version"] = record["version"]
            if isinstance(agent, str):
                extra["agent_id"] = agent
            cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else None
            time = iso_time(record.get("timestamp"))
            # A sub-agent's start cites the tool call that spawned it, when read already.
            spawn = self.links.get((raw, agent)) if isinstance(agent, str) else None
            out.append(
                self.sessions.start(
                    session,
                    time=time,
                    cwd=cwd,
                    parent=parent,
                    extra=extra,
                    cites=[spawn] if spawn else None,
                )
            )
            if session == main:
                out.extend(self._flush_titles(main))
        return session

    def _side_thread(self, raw_session: str, record: dict[str, Any]) -> str:
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else ""
        parent_uuid = record.get("parentUuid")
        thread = self.side_threads.get(parent_uuid) if isinstance(parent_uuid, str) else None
        if thread is None:
            thread = safe_id(f"{raw_session}-side-{uuid or 'unknown'}")
        if uuid:
            self.side_threads[uuid] = thread
        return thread

    def _title(self, record: dict[str, Any]) -> list[Outgoing]:
        title = record.get("summary")
        if not isinstance(title, str) or not title.strip():
            self.tally.skip("record:summary:empty")
            return []
        ref = record.get("leafUuid") if isinstance(record.get("leafUuid"), str) else None
        # A summary line usually comes first, before any record names the session.
        started = [sid for sid in self.sessions.by_id if "-agent-" not in sid]
        if not started:
            self.pending_titles.append((title, ref))
            return []
        return [self._title_event(started[0], title, ref)]

    def _flush_titles(self, session: str) -> list[Outgoing]:
        titles, self.pending_titles = self.pending_titles, []
        return [self._title_event(session, title, ref) for title, ref in titles]

    def _title_event(self, session: str, title: str, ref: str | None) -> Outgoing:
        payload = {"title": cut(title)}
        return self.sessions.emit(
            session, "session/title", "system", None, payload, "summary", source_ref=ref
        )

    def _system(self, session: str, record: dict[str, Any]) -> None:
        subtype = record.get("subtype")
        if subtype == "compact_boundary":
            meta = record.get("compactMetadata")
            boundary = dict(meta) if isinstance(meta, dict) else {}
            # The boundary names the last record before it: what the summary stands for.
            boundary["_through"] = self.last_seq.get(str(record.get("logicalParentUuid")))
            self.boundary[session] = boundary
            self.tally.skip("system:compact_boundary (folded into the compaction)")
            return
        self.tally.skip(f"system:{subtype}")

    def _assistant(self, session: str, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        uuid = str(record.get("uuid") or "")
        base: dict[str, Any] = {}
        if isinstance(content, str):
            payload = {**base, "text": cut(content)}
            return [self._emit(session, "message/assistant", "assistant", time, payload, uuid)]
        out: list[Outgoing] = []
        for index, block in enumerate(content if isinstance(content, list) else []):
            ref = f"{uuid}-{index}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                payload = {**base, "text": cut(block["text"])}
                out.append(
                    self._emit(session, "message/assistant", "assistant", time, payload, ref)
                )
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                payload = {**base, "thinking": cut(block["thinking"])}
                out.append(
                    self._emit(session, "message/assistant", "assistant", time, payload, ref)
                )
            elif kind == "tool_use":
                out.append(self._tool_use(session, block, base, time, ref))
            else:
                self.tally.skip(f"assistant-block:{kind}")
        return out

    def _tool_use(
        self, session: str, block: dict[str, Any], base: dict[str, Any], time: str | None, ref: str
    ) -> Outgoing:
        tool_id = block.get("id") if isinstance(block.get("id"), str) else None
        payload = {**base, "tool": block.get("name"), "tool_use_id": tool_id}
        payload["input"] = block.get("input")
        out = self._emit(session, "tool/call", "assistant", time, payload, ref)
        if tool_id:
            self.tool_calls[tool_id] = (session, out.seq, block.get("name"))
        return out

    def _user(self, session: str, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        uuid = str(record.get("uuid") or "")
        if record.get("isCompactSummary") is True:
            return [self._compaction(session, content, uuid, time)]
        self._note_spawn(record, content)
        base: dict[str, Any] = {}
        if record.get("isMeta") is True:
            base["meta"] = True
        if isinstance(content, str):
            payload = {**base, "text": cut(content)}
            return [self._emit(session, "message/user", "user", time, payload, uuid)]
        out: list[Outgoing] = []
        for index, block in enumerate(content if isinstance(content, list) else []):
            ref = f"{uuid}-{index}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                payload = {**base, "text": cut(block["text"])}
                out.append(self._emit(session, "message/user", "user", time, payload, ref))
            elif kind == "tool_result":
                out.append(self._tool_result(session, block, base, time, ref))
            else:
                self.tally.skip(f"user-block:{kind}")
        return out

    def _note_spawn(self, record: dict[str, Any], content: object) -> None:
        """A Task result names the sub-agent it ran (``toolUseResult.agentId``): remember
        which tool call spawned it, for the sub-agent's transcript."""
        result = record.get("toolUseResult")
        agent = result.get("agentId") if isinstance(result, dict) else None
        raw = record.get("sessionId")
        if not (isinstance(agent, str) and agent and isinstance(raw, str)):
            return
        for block in content if isinstance(content, list) else []:
            tool_id = block.get("tool_use_id") if isinstance(block, dict) else None
            call = self.tool_calls.get(tool_id) if isinstance(tool_id, str) else None
            if call is not None:
                self.links[(raw, agent)] = (call[0], call[1])
                return

    def _tool_result(
        self, session: str, block: dict[str, Any], base: dict[str, Any], time: str | None, ref: str
    ) -> Outgoing:
        tool_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
        payload = {**base, "tool_use_id": tool_id, "output": as_text(block.get("content"))}
        if block.get("is_error") is True:
            payload["is_error"] = True
        call = self.tool_calls.get(tool_id) if tool_id else None
        cites = None
        if call is not None:
            payload["tool"] = call[2]
            cites = [(call[0], call[1])]
        return self.sessions.emit(
            session, "tool/result", "tool", time, _drop_none(payload), "user",
            cites=cites, source_ref=ref,
        )  # fmt: skip

    def _compaction(self, session: str, content: object, uuid: str, time: str | None) -> Outgoing:
        meta = self.boundary.pop(session, {})
        payload: dict[str, Any] = {"summary": as_text(content)}
        for key in ("trigger", "preTokens"):
            if key in meta:
                payload[key] = meta[key]
        return self.sessions.compaction(
            session, time, payload, "user:isCompactSummary", through=meta.get("_through")
        )

    def _emit(
        self, session: str, type_: str, surface: str, time: str | None, payload: dict[str, Any],
        ref: str,
    ) -> Outgoing:  # fmt: skip
        source_type = "assistant" if surface == "assistant" else "user"
        return self.sessions.emit(
            session, type_, surface, time, _drop_none(payload), source_type, source_ref=ref
        )


def _drop_none(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


def looks_like(record: dict[str, Any]) -> bool:
    """Detection: a Claude Code record has a sessionId and a uuid, or is a summary line."""
    if record.get("type") == "summary" and "leafUuid" in record:
        return True
    return isinstance(record.get("sessionId"), str) and "uuid" in record
