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
- a ``summary`` record titles (``session/title``) the session holding the record its
  ``leafUuid`` names, once that record is read; Claude Code also copies summaries of
  other sessions of the project into a new file, and a summary whose leaf is not a record
  of the file titles nothing (counted). A ``custom-title`` record (``/rename``) titles its
  session and wins over any summary; a sub-agent session is titled by its Task call's
  ``description``, when the transcript was read first (the call is the one whose result
  names the sub-agent, else, while it runs or when it was cut off with no result, the
  spawning call whose ``prompt`` is the sub-agent's first message);
- harness text in user records is typed for what it is, and stays searchable: slash
  commands and ``!`` shell input (``<command-name>``, ``<bash-input>``) are ``command``,
  their output (``<local-command-stdout>``, ``<bash-stdout>``) ``command/output``, and
  notifications, reminders, caveats, ``isMeta`` records and interruption markers
  (``<task-notification>``, ``<system-reminder>``, ``[Request interrupted by user]``)
  ``message/context``; a ``system`` ``local_command`` record (the output of a local
  command such as ``/rename``, which later versions write so) is typed the same way; a
  "This session is being continued from a previous conversation"
  summary without the compaction flag (older versions) is a ``compaction`` as well;
- a ``<task-notification>`` (a background sub-agent or command done) cites the tool call
  its ``<tool-use-id>`` names, whose own result only said it was launched;
- an assistant record Claude Code writes itself (``model: "<synthetic>"``: "No response
  requested." after an interrupted turn, API error messages) is ``message/context`` with
  ``synthetic`` (and ``api_error``), not the model's words;
- a resumed session's file starts with copies of the earlier session's records (their
  ``sessionId`` the earlier one's): skipped and counted when the earlier session's own
  file is beside it, which holds them;
- a ``host-row`` record (a call that a script run by the REPL tool made, or its result:
  one ``tool_use`` or ``tool_result`` block, under the script's ``ranByToolUseId``) is a
  ``tool/call`` or ``tool/result`` of its session (``ran_by_tool_use_id`` names the
  script's call), once: a call an assistant record holds too is counted, not repeated;
- everything else (file snapshots, progress, other ``system`` records, image blocks) is
  skipped and counted. The format has no session end: ``import`` ends a session whose
  last event is older than ``--idle-seconds``, ``watch`` one whose file has not grown
  for that long.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import (
    JsonRecordConverter,
    Outgoing,
    Spawn,
    SpawnLinks,
    as_text,
    cut,
    iso_time,
    safe_id,
)

NAME: Final = "claude-code"
# Tools whose call starts a sub-agent (``Task``; ``Agent`` in later versions).
_SPAWNING_TOOLS: Final = frozenset({"Task", "Agent"})
_PROMPT: Final = "prompt:"  # links key prefix of a spawning call, by a digest of its prompt
# links key of a call a transcript left unanswered: (_OPEN_CALL, its tool_use id).
_OPEN_CALL: Final = "\0open-call"
# links key of a spawning call, for a fork whose transcript starts with a copy of it.
_SPAWN_CALL: Final = "\0spawn-call"
_PLAN_EXIT: Final = "ExitPlanMode"  # plan mode's call a "clear context" session answers
_WORKFLOWS: Final = "workflows"  # <session>/subagents/workflows/<run id>/agent-<id>.jsonl
_WORKFLOW: Final = "\0workflow:"  # links key prefix of a Workflow call, by its run id
_HEAD_BYTES: Final = 64 << 10
# A tool's result written before the reply that called it waits at most this many records
# for its parent (seen in a real 2.1.97 home: 1 to 14 records early).
_HOLD_RECORDS: Final = 32
_TIMESTAMP: Final = re.compile(rb'"timestamp":\s*"([^"]+)"')
# The model name Claude Code gives the assistant records it writes itself.
SYNTHETIC_MODEL: Final = "<synthetic>"
_NOTIFIED_CALL: Final = re.compile(
    r"<task-notification>.*?<tool-use-id>\s*([^<\s]+)\s*</tool-use-id>", re.S
)
_COMMAND_NAME: Final = re.compile(r"<command-name>\s*([^<]*?)\s*</command-name>")


def harness_kind(text: str, *, meta: bool) -> tuple[str, str]:
    """(event type, surface) of a user record's text: ``message/user`` unless the harness
    wrote it (a command, its output, a notification or other context)."""
    type_ = harness_type(text)
    if type_ is not None:
        return type_, harness.SURFACES[type_]
    if meta:
        return "message/context", "system"
    return "message/user", "user"


class ClaudeCodeConverter(JsonRecordConverter):
    def __init__(
        self, path: Path, *, links: SpawnLinks | None = None, name: str = NAME, id_prefix: str = ""
    ) -> None:
        # ``name``, ``id_prefix``: a fork writing the same transcripts (Qoder CLI) under its
        # own name, its session ids prefixed.
        super().__init__(path, name)
        self.id_prefix = id_prefix
        self.links: SpawnLinks = {} if links is None else links
        # tool_use id -> (session, seq, tool name) of its tool/call, for the result's citation.
        self.tool_calls: dict[str, tuple[str, int, object]] = {}
        self.answered: set[str] = set()  # tool_use ids whose result this file holds
        # uuid of a sidechain record (main-file sidechains) -> its child session.
        self.side_threads: dict[str, str] = {}
        # Summaries whose leaf record is not read yet: leafUuid -> titles.
        self.pending_titles: dict[str, list[str]] = {}
        self.record_session: dict[str, str] = {}  # record uuid -> the session it is in
        self.custom_titled: set[str] = set()  # sessions a custom-title names: summaries lose
        self.pending_custom: dict[str, str] = {}  # session -> custom title read before it
        self.pending_ai: dict[str, str] = {}  # session -> generated title read before it
        self.ai_titles: dict[str, str] = {}  # session -> the last generated title published
        self.task_descriptions: dict[str, str] = {}  # tool_use id of a Task -> description
        self.boundary: dict[str, dict[str, Any]] = {}  # session -> its pending compact boundary
        self.last_seq: dict[str, int] = {}  # record uuid -> seq of its last event
        self.copies: dict[str, bool] = {}  # sessionId -> its records here are copies
        # A fork's transcript opens with the parent's spawning call and its result, copied:
        # True from its ``fork-context-ref`` until that result; the copied call ids.
        self.fork_head = False
        self.fork_copies: set[str] = set()
        # Results read before their call's record (its ``parentUuid`` not read yet), each
        # with the records it may still wait: published right after their parent.
        self.held: list[tuple[dict[str, Any], int]] = []
        self.raw_sessions: set[str] = set()  # sessionIds with a record read here
        self.seen: set[str] = set()  # uuids of the records read here

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        out = self._due()
        if self._early(record):  # the file's order is not the records' (``parentUuid``)
            self.held.append((record, _HOLD_RECORDS))
            return out
        out.extend(self._converted(record))
        return out

    def _early(self, record: dict[str, Any]) -> bool:
        """A result of a call not read yet whose parent record, in a session this file
        already has, is not read yet either: Claude Code wrote it before the reply that
        called it. A result opening its session's file answers a call of another file."""
        parent, raw = record.get("parentUuid"), record.get("sessionId")
        if (
            record.get("type") != "user"
            or not isinstance(parent, str)
            or raw not in self.raw_sessions
        ):
            return False
        if parent in self.seen:
            return False
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        ids = [b.get("tool_use_id") for b in content if isinstance(b, dict)
               and b.get("type") == "tool_result"] if isinstance(content, list) else []  # fmt: skip
        return bool(ids) and all(
            isinstance(i, str) and i not in self.tool_calls and (_OPEN_CALL, i) not in self.links
            for i in ids
        )

    def _due(self) -> list[Outgoing]:
        """Held results that waited their last record, in the order read."""
        out: list[Outgoing] = []
        waiting = []
        for record, left in self.held:
            if left <= 1:
                out.extend(self._converted(record, hold=False))
            else:
                waiting.append((record, left - 1))
        self.held = waiting
        return out

    def _release(self, uuid: object) -> list[Outgoing]:
        out: list[Outgoing] = []
        ready = [record for record, _ in self.held if record.get("parentUuid") == uuid]
        if ready:
            self.held = [(r, left) for r, left in self.held if r.get("parentUuid") != uuid]
        for record in ready:
            out.extend(self._converted(record))
        return out

    def _flush_held(self) -> list[Outgoing]:
        held, self.held = self.held, []
        return [o for record, _ in held for o in self._converted(record, hold=False)]

    def _converted(self, record: dict[str, Any], *, hold: bool = True) -> list[Outgoing]:
        out = self._one(record)
        if isinstance(record.get("sessionId"), str):
            self.raw_sessions.add(record["sessionId"])
        if isinstance(record.get("uuid"), str):
            self.seen.add(record["uuid"])
        if hold:
            out.extend(self._release(record.get("uuid")))
        return out

    def _one(self, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        if kind == "summary":
            return self._title(record)
        if kind == "custom-title":
            return self._custom_title(record)
        if kind == "ai-title":
            return self._ai_title(record)
        if kind == "host-row":
            return self._host_row(record)
        if kind == "fork-context-ref":  # the parent history a fork inherits, by reference
            self.fork_head = True
            self.tally.skip("record:fork-context-ref")
            return []
        if kind not in ("user", "assistant", "system"):
            self.tally.skip(f"record:{kind}")
            return []
        if self._copied(record.get("sessionId")):
            self.tally.skip(f"record:{kind}:copied")
            return []
        out: list[Outgoing] = []
        session = self._session_for(record, out)
        if session is None:
            self.tally.skip(f"record:{kind}:no-session")
            return out
        time = iso_time(record.get("timestamp"))
        if kind == "system":
            out.extend(self._system(session, record, time))
        elif kind == "assistant":
            out.extend(self._assistant(session, record, time))
        else:
            out.extend(self._user(session, record, time))
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if out and out[-1].session_id == session:
                self.last_seq[uuid] = out[-1].seq
            self.record_session[uuid] = session
            out.extend(self._leaf_titles(uuid, session))
        return out

    def _host_row(self, record: dict[str, Any]) -> list[Outgoing]:
        """A call a script ran (the REPL tool's code calling tools) and its result, one
        content block a row, kept under the script's own call (``ranByToolUseId``)."""
        block = record.get("block")
        kind = block.get("type") if isinstance(block, dict) else None
        raw, agent = record.get("sessionId"), record.get("agentId")
        if not isinstance(block, dict) or kind not in ("tool_use", "tool_result"):
            # ``withheld``: the script's rows were left out of the file on purpose.
            self.tally.skip("record:host-row:withheld" if record.get("withheld") else
                            f"record:host-row:{kind}")  # fmt: skip
            return []
        if not isinstance(raw, str) or not raw:
            self.tally.skip("record:host-row:no-session")
            return []
        session = self._id(f"{raw}-agent-{agent}" if isinstance(agent, str) and agent else raw)
        if not self.sessions.has(session):
            self.tally.skip("record:host-row:no-session")
            return []
        # The same call may also be in an assistant record (a resumed script): once.
        tool_id = block.get("id") if kind == "tool_use" else block.get("tool_use_id")
        seen = self.tool_calls if kind == "tool_use" else self.answered
        if isinstance(tool_id, str) and tool_id in seen:
            self.tally.skip(f"record:host-row:{kind}:repeated")
            return []
        time = iso_time(record.get("timestamp"))
        ref = f"host-row-{record.get('rowUuid') or tool_id or ''}"
        base: dict[str, Any] = {}
        if isinstance(record.get("ranByToolUseId"), str):
            base["ran_by_tool_use_id"] = record["ranByToolUseId"]
        if kind == "tool_use":
            return [self._tool_use(session, block, base, time, ref)]
        return [self._tool_result(session, block, base, time, ref)]

    def _copied(self, raw: object) -> bool:
        """A resumed session's file starts with copies of the earlier session's records,
        under the earlier ``sessionId``: when that session's own file is beside this one,
        they are read there, once (else, here)."""
        if not isinstance(raw, str):
            return False
        if raw not in self.copies:
            path = Path(self.path)
            own = raw == path.stem or path.parent.name == "subagents"
            self.copies[raw] = not own and (path.parent / f"{raw}.jsonl").is_file()
        return self.copies[raw]

    def _session_for(self, record: dict[str, Any], out: list[Outgoing]) -> str | None:
        """The session this record belongs to, started (with its held titles) if new."""
        raw = record.get("sessionId")
        if not isinstance(raw, str) or not raw:
            return None
        main = self._id(raw)
        session, parent = main, None
        agent = record.get("agentId")
        if record.get("isSidechain") is True:
            parent = main
            if isinstance(agent, str) and agent:
                session = self._id(f"{raw}-agent-{agent}")
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
            run = Path(self.path).parent
            if spawn is None and isinstance(agent, str) and run.parent.name == _WORKFLOWS:
                spawn = self.links.get((raw, f"{_WORKFLOW}{run.name}"))
            if spawn is None and isinstance(agent, str) and self.fork_head:
                spawn = next(filter(None, (self.links.get((_SPAWN_CALL, call))
                                           for call in _tool_use_ids(record))), None)  # fmt: skip
            if spawn is None and isinstance(agent, str):  # its call has no result (yet)
                spawn = self.links.pop((main, _prompt_key(_first_text(record))), None)
            out.append(
                self.sessions.start(
                    session,
                    time=time,
                    cwd=cwd,
                    parent=parent,
                    extra=extra,
                    cites=[(spawn.session_id, spawn.seq)] if spawn else None,
                )
            )
            if spawn is not None and spawn.description:
                payload = {"title": cut(spawn.description)}
                out.append(self.sessions.emit(session, "session/title", "system", None,
                                              payload, "tool_use:description"))  # fmt: skip
            generated = self.pending_ai.pop(session, None)
            if generated is not None and session not in self.custom_titled:
                self.ai_titles[session] = generated
                out.append(self._title_event(session, generated, "ai-title"))
            custom = self.pending_custom.pop(session, None)
            if custom is not None:
                out.append(self._title_event(session, custom, "custom-title"))
        return session

    def _side_thread(self, raw_session: str, record: dict[str, Any]) -> str:
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else ""
        parent_uuid = record.get("parentUuid")
        thread = self.side_threads.get(parent_uuid) if isinstance(parent_uuid, str) else None
        if thread is None:
            thread = self._id(f"{raw_session}-side-{uuid or 'unknown'}")
        if uuid:
            self.side_threads[uuid] = thread
        return thread

    def _title(self, record: dict[str, Any]) -> list[Outgoing]:
        title = record.get("summary")
        leaf = record.get("leafUuid")
        if not isinstance(title, str) or not title.strip():
            self.tally.skip("record:summary:empty")
            return []
        if not isinstance(leaf, str):
            self.tally.skip("record:summary:no-leaf")
            return []
        session = self.record_session.get(leaf)
        if session is None:  # usually first in the file, before its leaf; or another file's
            self.pending_titles.setdefault(leaf, []).append(title)
            return []
        return self._summary_titles(session, [title])

    def _leaf_titles(self, uuid: str, session: str) -> list[Outgoing]:
        titles = self.pending_titles.pop(uuid, None)
        return self._summary_titles(session, titles) if titles else []

    def _summary_titles(self, session: str, titles: list[str]) -> list[Outgoing]:
        if session in self.custom_titled:
            self.tally.skip("record:summary:custom-title-wins")
            return []
        return [self._title_event(session, title, "summary") for title in titles]

    def _custom_title(self, record: dict[str, Any]) -> list[Outgoing]:
        title = record.get("customTitle")
        raw = record.get("sessionId")
        if not (isinstance(title, str) and title.strip() and isinstance(raw, str)):
            self.tally.skip("record:custom-title:empty")
            return []
        session = self._id(raw)
        self.custom_titled.add(session)
        if not self.sessions.has(session):  # titled when its first record starts it
            self.pending_custom[session] = title
            return []
        return [self._title_event(session, title, "custom-title")]

    def _ai_title(self, record: dict[str, Any]) -> list[Outgoing]:
        """The title Claude Code generates for a session (newer versions): the session's
        title unless a /rename names it."""
        title = record.get("aiTitle")
        raw = record.get("sessionId")
        if not (isinstance(title, str) and title.strip() and isinstance(raw, str)):
            self.tally.skip("record:ai-title:empty")
            return []
        session = self._id(raw)
        if session in self.custom_titled:
            self.tally.skip("record:ai-title:custom-title-wins")
            return []
        if not self.sessions.has(session):  # titled when its first record starts it
            self.pending_ai[session] = title
            return []
        # The metadata records are written again as they change (Qoder, at the file's end):
        # a title is published when it changes.
        if self.ai_titles.get(session) == title:
            self.tally.skip("record:ai-title:repeated")
            return []
        self.ai_titles[session] = title
        return [self._title_event(session, title, "ai-title")]

    def _id(self, raw: str) -> str:
        return safe_id(raw, prefix=self.id_prefix)

    def _title_event(self, session: str, title: str, source_type: str) -> Outgoing:
        payload = {"title": cut(title)}
        return self.sessions.emit(session, "session/title", "system", None, payload, source_type)

    def idle(self) -> list[Outgoing]:
        out = self._flush_held()
        self.tally.events += len(out)
        return out + super().idle()

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        out = self._flush_held()
        self.tally.events += len(out)
        return out + super().end_quiet(before)

    def finish(self) -> list[Outgoing]:
        held = self._flush_held()
        self.tally.events += len(held)
        # A call left unanswered here may be answered in the next session's file: "clear
        # context and implement" (plan mode) starts it with the plan's rejected
        # ExitPlanMode result, under the new sessionId (seen in real 2.1.2x homes).
        for tool_id, call in self.tool_calls.items():
            if tool_id not in self.answered:
                self.links[(_OPEN_CALL, tool_id)] = Spawn(call[0], call[1], str(call[2]))
        # Summaries of other sessions (their leaf is no record of this file) title nothing.
        for titles in self.pending_titles.values():
            for _ in titles:
                self.tally.skip("record:summary:leaf-not-in-file")
        self.pending_titles = {}
        return held

    def _system(self, session: str, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        subtype = record.get("subtype")
        content = record.get("content")
        if subtype == "local_command" and isinstance(content, str):
            # A local command's output (/rename's "Session renamed to: …") is written as a
            # system record where other commands' output is a user record: the same text.
            uuid = str(record.get("uuid") or "")
            # Harness-typed (command/output); any other text is context, not the user's words.
            event = self._user_text(session, content, True, {}, time, uuid, "system:local_command")
            return [event]
        if subtype == "compact_boundary":
            meta = record.get("compactMetadata")
            boundary = dict(meta) if isinstance(meta, dict) else {}
            # The boundary names the last record before it: what the summary stands for.
            boundary["_through"] = self.last_seq.get(str(record.get("logicalParentUuid")))
            self.boundary[session] = boundary
            self.tally.skip("system:compact_boundary (folded into the compaction)")
            return []
        self.tally.skip(f"system:{subtype}")
        return []

    def _assistant(self, session: str, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        uuid = str(record.get("uuid") or "")
        base: dict[str, Any] = {}
        # Text Claude Code writes in the assistant's place (model "<synthetic>": "No response
        # requested." after an interruption, API errors) is the harness's, not the model's.
        text_type, surface = "message/assistant", "assistant"
        if isinstance(message, dict) and message.get("model") == SYNTHETIC_MODEL:
            text_type, surface, base = "message/context", "system", {"synthetic": True}
            if record.get("isApiErrorMessage") is True:
                base["api_error"] = True
        if isinstance(content, str):
            payload = {**base, "text": cut(content)}
            return [self._emit(session, text_type, surface, time, payload, uuid)]
        out: list[Outgoing] = []
        for index, block in enumerate(content if isinstance(content, list) else []):
            ref = f"{uuid}-{index}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                if not block["text"].strip():  # a lone newline before a tool call
                    self.tally.skip("assistant-block:text:empty")
                    continue
                payload = {**base, "text": cut(block["text"])}
                out.append(self._emit(session, text_type, surface, time, payload, ref))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                if not block["thinking"].strip():  # kept without its text: the signature
                    self.tally.skip("assistant-block:thinking:encrypted")
                    continue
                payload = {**base, "thinking": cut(block["thinking"])}
                out.append(
                    self._emit(session, "message/assistant", "assistant", time, payload, ref)
                )
            elif self.fork_head and kind == "tool_use" and block.get("name") in _SPAWNING_TOOLS:
                self.fork_copies.add(str(block.get("id")))  # the parent's, read there
                self.tally.skip("record:fork-context:call")
            elif kind in ("tool_use", "server_tool_use"):
                out.append(self._tool_use(session, block, base, time, ref))
            elif isinstance(kind, str) and kind.endswith("tool_result"):
                # A server-side tool (web search, fetch) answers within the reply itself.
                out.append(self._tool_result(session, block, base, time, ref))
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
            spec = block.get("input")
            description = spec.get("description") if isinstance(spec, dict) else None
            if block.get("name") in _SPAWNING_TOOLS and isinstance(description, str):
                self.task_descriptions[tool_id] = description
            prompt = spec.get("prompt") if isinstance(spec, dict) else None
            if block.get("name") in _SPAWNING_TOOLS and isinstance(prompt, str):
                spawn = Spawn(
                    session, out.seq, description if isinstance(description, str) else None
                )
                self.links[(session, _prompt_key(prompt))] = spawn
                self.links[(_SPAWN_CALL, tool_id)] = spawn
            if block.get("name") == _PLAN_EXIT:  # answered in the next session (watch too)
                self.links[(_OPEN_CALL, tool_id)] = Spawn(session, out.seq, _PLAN_EXIT)
        return out

    def _user(self, session: str, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        uuid = str(record.get("uuid") or "")
        if record.get("isCompactSummary") is True or _continued(content):
            return [self._compaction(session, content, uuid, time)]
        self._note_spawn(record, content)
        meta = record.get("isMeta") is True or _warmup(record, content)
        base: dict[str, Any] = {"meta": True} if meta else {}
        if isinstance(content, str):
            return [self._user_text(session, content, meta, base, time, uuid)]
        out: list[Outgoing] = []
        for index, block in enumerate(content if isinstance(content, list) else []):
            ref = f"{uuid}-{index}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                out.append(self._user_text(session, block["text"], meta, base, time, ref))
            elif kind == "tool_result" and block.get("tool_use_id") in self.fork_copies:
                self.fork_head = False  # the parent's answer, copied: the fork's own follows
                self.tally.skip("record:fork-context:result")
            elif kind == "tool_result":
                out.append(self._tool_result(session, block, base, time, ref))
            else:
                self.tally.skip(f"user-block:{kind}")
        return out

    def _user_text(
        self, session: str, text: str, meta: bool, base: dict[str, Any], time: str | None,
        ref: str, source_type: str = "user",
    ) -> Outgoing:  # fmt: skip
        type_, surface = harness_kind(text, meta=meta)
        payload = {**base, "text": cut(text)}
        cites = None
        if type_ == "command":
            name = _COMMAND_NAME.search(text)
            if name is not None:
                payload["command"] = name.group(1)
        elif type_ == "message/context":
            # A background task's notification reports on the call that started it (its
            # result said only "launched"): it cites that call.
            notified = _NOTIFIED_CALL.search(text)
            call = self.tool_calls.get(notified.group(1)) if notified is not None else None
            if call is not None:
                cites = [(call[0], call[1])]
        return self.sessions.emit(
            session, type_, surface, time, payload, source_type, cites=cites, source_ref=ref
        )

    def _note_spawn(self, record: dict[str, Any], content: object) -> None:
        """A Task result names the sub-agent it ran (``toolUseResult.agentId``): remember
        which tool call spawned it, for the sub-agent's transcript."""
        result = record.get("toolUseResult")
        if not isinstance(result, dict):
            return
        agent = result.get("agentId")
        raw = record.get("sessionId")
        run = result.get("runId")
        if isinstance(run, str) and run and isinstance(raw, str):
            # A Workflow call's result names its run, whose agents' transcripts are in
            # ``subagents/workflows/<run id>/`` (2.1.16x, seen in a real home).
            agent, summary = f"{_WORKFLOW}{run}", result.get("summary")
            for block in content if isinstance(content, list) else []:
                tool_id = block.get("tool_use_id") if isinstance(block, dict) else None
                call = self.tool_calls.get(tool_id) if isinstance(tool_id, str) else None
                if call is not None:
                    about = summary if isinstance(summary, str) else None
                    self.links[(raw, agent)] = Spawn(call[0], call[1], about)
            return
        if not (isinstance(agent, str) and agent and isinstance(raw, str)):
            return
        for block in content if isinstance(content, list) else []:
            tool_id = block.get("tool_use_id") if isinstance(block, dict) else None
            call = self.tool_calls.get(tool_id) if isinstance(tool_id, str) else None
            if call is not None:
                description = self.task_descriptions.get(str(tool_id))
                self.links[(raw, agent)] = Spawn(call[0], call[1], description)
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
            self.answered.add(str(tool_id))
            self.links.pop((_OPEN_CALL, str(tool_id)), None)
            payload["tool"] = call[2]
            cites = [(call[0], call[1])]
        elif tool_id and (earlier := self.links.pop((_OPEN_CALL, tool_id), None)) is not None:
            payload["tool"] = earlier.description  # the call is in another session's file
            cites = [(earlier.session_id, earlier.seq)]
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


def _warmup(record: dict[str, Any], content: object) -> bool:
    """2.0.x warms its sub-agents' prompt cache when it starts: a sidechain opening with the
    user message "Warmup" (seen in real homes) is the harness's, not the user's."""
    return (
        record.get("isSidechain") is True
        and record.get("parentUuid") is None
        and isinstance(content, str)
        and content.strip() == "Warmup"
    )


def _continued(content: object) -> bool:
    """A continuation summary written as a plain user record (versions before the
    ``isCompactSummary`` flag): the summary of a conversation that ran out of context."""
    if isinstance(content, list) and content and isinstance(content[0], dict):
        content = content[0].get("text")
    return isinstance(content, str) and content.lstrip().startswith(harness.CONTINUATION)


def first_time(path: Path) -> str:
    """The first record time in a transcript's first bytes ("" when none, or unreadable)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return ""
    found = _TIMESTAMP.search(head)
    return found.group(1).decode("ascii", "replace") if found else ""


def _drop_none(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


def looks_like(record: dict[str, Any]) -> bool:
    """Detection: a Claude Code record has a sessionId and a uuid, or is a summary line."""
    if record.get("type") == "summary" and "leafUuid" in record:
        return True
    return isinstance(record.get("sessionId"), str) and "uuid" in record


def _prompt_key(prompt: str) -> str:
    return _PROMPT + hashlib.sha256(prompt.strip().encode()).hexdigest()


def _tool_use_ids(record: dict[str, Any]) -> list[str]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [
        b["id"]
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    ]


def _first_text(record: dict[str, Any]) -> str:
    """A user record's text: a sub-agent's first record is the prompt it was given."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return content if isinstance(content, str) else ""
