"""GitHub Copilot CLI sessions: ``$COPILOT_HOME/session-state/<id>/events.jsonl`` (default
``~/.copilot``; older versions wrote ``session-state/<id>.jsonl``).

One event per line: ``{"type", "id", "parentId", "timestamp", "data"}``. Mapping:

- ``session.start`` (``sessionId``, ``copilotVersion``, ``context.cwd``/``branch``/
  ``repository``) is the ``session/start``; without a ``context`` the cwd comes from the
  session folder's ``workspace.yaml`` (``cwd:``), else there is none (the no-cwd
  workspace). That file's ``name:`` (1.0.x; a name the user gave first) or ``summary:``
  (older) titles the session at its first shutdown, else with its end;
- ``user.message`` is ``message/user`` (harness text typed by ``contracts.harness``; its
  attachments are counted as skipped), ``assistant.message`` with text
  ``message/assistant`` (its ``reasoningText`` a ``message/assistant`` with ``thinking``
  before it), ``assistant.reasoning`` a ``message/assistant`` with ``thinking``;
  ``tool.execution_start`` is the ``tool/call`` and ``tool.execution_complete`` its
  ``tool/result`` (``result.content``, or the error's message when it failed; a shell
  command's non-zero exit code flags it too), citing the call (the assistant message's
  ``toolRequests`` repeat the calls and are not read again);
- a sub-agent's records (1.0.x writes them into its parent's file with the sub-agent's
  ``agentId``) are its child session: ``subagent.started`` starts it citing the ``task``
  call, titled with the task's description, ``subagent.completed``/``failed`` ends it;
- ``session.compaction_complete`` with its ``summaryContent`` is a ``compaction`` that
  replaces what came before it; ``session.info``, ``session.warning``, ``session.error``,
  ``abort`` and ``system.notification`` (what the CLI tells the model, e.g. that a
  background shell ended) are ``message/context``; a call still running when its turn is
  aborted (SIGINT, Esc) never completes: the abort gives it a result marked
  ``interrupted``;
- ``session.shutdown`` (``shutdownType``: ``routine`` or ``error``) is not the end yet:
  ``copilot --resume`` appends ``session.resume`` (``resumeTime``, ``eventCount``, the
  context at resume) and the session goes on in the same file. The ``session/end`` (the
  index takes nothing after it) is published only when the shutdown is the last record
  and the file is quiet: ``watch``'s ``--idle-seconds``, or, on ``import``, a shutdown
  older than that. It carries the shutdown's time and type.

Everything else (turn boundaries, model changes, truncation notices, usage, compaction
starts and the compaction's model-call trace, resumes, new event types) is skipped and
counted. A session that never shut down is ended by ``--idle-seconds`` as well.
No version keeps the conversation in a database instead of the event log. 1.0.60 (its
``app.js``, on ``node:sqlite``) and 1.0.102 (its native ``runtime.node``, read for its SQL)
write two SQLite files beside it, neither read
but each reported by name (counted as ``file:<name>`` with its reason, in the summary and
``--dry-run``): ``$COPILOT_HOME/session-store.db``, its cross-session index ("Chronicle":
``sessions``, ``turns`` with each turn's user message and answer, ``checkpoints``,
``session_files``, ``session_refs``, usage), filled from the sessions as they run and
rebuilt from ``session-state`` by its reindex; and ``session-state/<id>/session.db``, the
per-session database the agent's ``sql`` tool creates its own tables in (todos it tracks)
and its workflow runs keep their bookkeeping in (runs, phases, progress, sub-agents).
A session the index lists without an events file (deleted, or kept in the cloud store)
would be lost: it is imported from the index as what the index keeps, each event marked
``from_index`` (its turns' user message and answer, text only, in turn order; its
checkpoints' summaries as ``message/context``; the index's summary as its title; ended, as
nothing more can come). A session with its events file is never read from the index.
Their ``embedding-cache.db`` holds vectors of text for the index's search, nothing else.

Studied: the event schemas bundled in the ``@github/copilot`` package (1.0.60's
``app.js``; 1.0.102's ``schemas/session-events.schema.json`` in the package its binary
unpacks) and a recording of 1.0.102 (``tests/importers/recorded/copilot-cli``).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    Problem,
    Sessions,
    Tally,
    as_text,
    cut,
    interrupted_results,
    iso_time,
    safe_id,
)
from worker.importers.plugin import ConvertOptions, Importer, Record, json_objects
from worker.importers.readonly_db import read_only, tables

NAME: Final = "copilot-cli"
STATE_DIR: Final = "session-state"
EVENTS_FILE: Final = "events.jsonl"
# The SQLite files 1.0.102 writes besides the event log (reported, not read).
STORE_DB: Final = "session-store.db"  # in $COPILOT_HOME: the cross-session index
SESSION_DB: Final = "session.db"  # in a session's folder: the sql tool's own tables
_CONTEXT_EVENTS: Final = {
    "session.info": "info",
    "session.warning": "warning",
    "session.error": "error",
    "abort": "abort",
}
# Summaries the CLI records (1.0.102's event schema): a completed task, a handoff.
_SUMMARY_EVENTS: Final = {"session.task_complete": "task complete", "session.handoff": "handoff"}
# A top-level ``key: value`` line of workspace.yaml (the values read here are one line).
_YAML_LINE: Final = re.compile(r"^([A-Za-z_]+):[ \t]*(.*?)[ \t]*$")
# The system prompt's statement of the cwd, and how far into a file it is looked for.
_PROMPT_CWD: Final = re.compile(r"^\* Current working directory: (.+)$", re.M)
_PROMPT_LINES: Final = 16


def workspace_fields(folder: Path) -> dict[str, str]:
    """The one-line top-level values of a session folder's ``workspace.yaml``."""
    try:
        text = (folder / "workspace.yaml").read_text("utf-8")
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        found = _YAML_LINE.match(line)
        if found and found.group(2) and found.group(2) not in ("|", ">", "|-", ">-"):
            fields[found.group(1)] = found.group(2).strip("\"'")
    return fields


def _prompt_cwd(path: Path) -> str | None:
    """The cwd the first system prompt states (``* Current working directory: ...`` in
    its environment context): versions before 1.0 record it nowhere else (seen in a real
    0.0.343 home). Looked for in the file's first records only."""
    try:
        with path.open("rb") as fh:
            head = [fh.readline() for _ in range(_PROMPT_LINES)]
    except OSError:
        return None
    for record in json_objects(head):
        data = record.get("data")
        if record.get("type") != "system.message" or not isinstance(data, dict):
            continue
        content = data.get("content")
        found = _PROMPT_CWD.search(content) if isinstance(content, str) else None
        return found.group(1).strip() if found else None
    return None


class CopilotConverter(JsonRecordConverter):
    def __init__(self, path: Path) -> None:
        super().__init__(path, NAME)
        in_folder = path.name == EVENTS_FILE
        self.workspace = workspace_fields(path.parent) if in_folder else {}
        self.fallback_id = path.parent.name if in_folder else path.stem
        self.session: str | None = None
        self.titled = False
        # toolCallId -> (the session it is in, its seq, the tool's name)
        self.calls: dict[str, tuple[str, int, object]] = {}
        self.cwd: str | None = None
        # Calls without their result yet: toolCallId -> the session they are in.
        self.open_calls: dict[str, str] = {}
        # A sub-agent's records carry its ``agentId``: agentId -> its child session.
        self.children: dict[str, str] = {}
        # The last record's ``session.shutdown`` (its time, its type), None once anything
        # follows it: a resumed session goes on, so its end waits until the file is quiet.
        self.shutdown: tuple[str | None, str] | None = None

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        data = _fields(record.get("data"))
        time = iso_time(record.get("timestamp"))
        if kind == "session.start":
            return self._start(data, time)
        if self.session is None:
            self.tally.skip(f"record:{kind}:before-session.start")
            return []
        self.shutdown = None  # something follows the shutdown: the session went on
        agent = record.get("agentId")
        if isinstance(agent, str) and agent:
            return self._subagent(agent, str(kind), data, time)
        return self._event(self.session, str(kind), data, time)

    def _subagent(
        self, agent: str, kind: str, data: dict[str, Any], time: str | None
    ) -> list[Outgoing]:
        """A sub-agent's record (1.0.x writes them into its parent's file, each with the
        sub-agent's ``agentId``): its own child session, started by ``subagent.started``
        (citing the ``task`` call that ran it) and ended by ``subagent.completed`` or
        ``subagent.failed``."""
        out: list[Outgoing] = []
        child = self.children.get(agent)
        if child is None:
            out += self._start_child(agent, data, time)
            child = self.children[agent]
            if kind == "subagent.started":
                return out
        if kind in ("subagent.completed", "subagent.failed"):
            failed = kind == "subagent.failed" or data.get("cancelled") is True
            end = self.sessions.end(child, reason="failed" if failed else "completed",
                                    source_type=kind, time=time)  # fmt: skip
            return out + ([end] if end else [])
        return out + self._event(child, kind, data, time)

    def _start_child(self, agent: str, data: dict[str, Any], time: str | None) -> list[Outgoing]:
        assert self.session is not None
        child = safe_id(f"{self.session}-agent-{agent}")
        self.children[agent] = child
        # ``subagent.started`` names the call; the sub-agent's other records its
        # ``parentToolCallId``.
        call_id = data.get("toolCallId", data.get("parentToolCallId"))
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        extra = {
            name: value
            for name, value in (
                ("agent_type", data.get("agentType", data.get("agentName"))),
                ("agent_name", data.get("agentDisplayName")),
            )
            if isinstance(value, str)
        }
        out = [self.sessions.start(child, time=time, cwd=self.cwd, parent=self.session,
                                   extra=extra,
                                   cites=[(call[0], call[1])] if call else None)]  # fmt: skip
        title = data.get("agentDescription", data.get("agentDisplayName"))
        if isinstance(title, str) and title.strip():
            out.append(self.sessions.emit(child, "session/title", "system", time,
                                          {"title": cut(title)}, "subagent.started"))  # fmt: skip
        return out

    def _event(
        self, session: str, kind: str, data: dict[str, Any], time: str | None
    ) -> list[Outgoing]:
        source = kind
        if kind == "user.message":
            for attachment in data.get("attachments") or []:
                # Files and images attached to the prompt: the prompt's text is imported.
                kind_of = attachment.get("type") if isinstance(attachment, dict) else None
                self.tally.skip(f"attachment:{kind_of}")
            text = as_text(data.get("content"))
            type_ = harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            return [self.sessions.emit(session, type_, surface, time, {"text": text}, source)]
        if kind == "assistant.message":
            out = []
            reasoning = data.get("reasoningText")
            if isinstance(reasoning, str) and reasoning.strip():
                # 1.0.x keeps the turn's reasoning on its message (no assistant.reasoning).
                out.append(self.sessions.emit(session, "message/assistant", "assistant", time,
                                              {"thinking": reasoning},
                                              "assistant.message:reasoningText"))  # fmt: skip
            text = as_text(data.get("content"))
            if text.strip():  # else only tool requests: their tool.execution_start follow
                out.append(self.sessions.emit(session, "message/assistant", "assistant", time,
                                              {"text": text}, source))  # fmt: skip
            return out
        if kind == "assistant.reasoning":
            payload = {"thinking": as_text(data.get("content"))}
            return [self.sessions.emit(session, "message/assistant", "assistant", time,
                                       payload, source)]  # fmt: skip
        if kind == "tool.execution_start":
            return [self._call(session, data, time)]
        if kind == "tool.execution_complete":
            return [self._result(session, data, time)]
        if kind == "session.compaction_complete" and data.get("success") is not False:
            payload = {"summary": as_text(data.get("summaryContent"))}
            return [self.sessions.compaction(session, time, payload, source)]
        if kind == "system.notification":
            # What the CLI tells the model between turns (a background shell finished).
            payload = {"text": f"notification: {as_text(data.get('content'))}"}
            return [self.sessions.emit(session, "message/context", "system", time, payload,
                                       source)]  # fmt: skip
        if kind in _SUMMARY_EVENTS:
            # The agent's summary of a task it completed, or of a session handed over to
            # this one (with its context): what the session says it did.
            texts = [as_text(data[k]) for k in ("summary", "context") if data.get(k)]
            if not texts:
                self.tally.skip(f"record:{kind}:empty")
                return []
            payload = {"text": f"{_SUMMARY_EVENTS[kind]}: " + "\n\n".join(texts)}
            return [self.sessions.emit(session, "message/context", "system", time, payload,
                                       source)]  # fmt: skip
        if kind in _CONTEXT_EVENTS:
            # An aborted turn's running tool never completes (no tool.execution_complete).
            out = self._interrupted(session, time) if kind == "abort" else []
            text = as_text(data.get("message", data.get("reason")))
            payload = {"text": f"{_CONTEXT_EVENTS[kind]}: {text}"}
            said = self.sessions.emit(session, "message/context", "system", time, payload,
                                      source)  # fmt: skip
            return [*out, said]
        if kind == "session.shutdown" and session == self.session:
            # ``routine``, or ``error``: it crashed (older versions wrote other values).
            crashed = data.get("shutdownType") == "error"
            self.shutdown = (time, "shutdown:error" if crashed else "shutdown")
            return self._title()
        self.tally.skip(f"record:{kind}")
        return []

    def _start(self, data: dict[str, Any], time: str | None) -> list[Outgoing]:
        if self.session is not None:
            self.tally.skip("record:session.start:repeated")
            return []
        raw = data.get("sessionId") if isinstance(data.get("sessionId"), str) else None
        self.session = safe_id(raw or self.fallback_id)
        context = _fields(data.get("context"))
        cwd = context.get("cwd") if isinstance(context.get("cwd"), str) else None
        extra = {
            name: value
            for name, value in (
                ("version", data.get("copilotVersion")),
                ("git_branch", context.get("branch")),
                ("repository", context.get("repository")),
            )
            if isinstance(value, str)
        }
        start_time = iso_time(data.get("startTime")) or time
        self.cwd = cwd or self.workspace.get("cwd") or _prompt_cwd(Path(self.path))
        return [self.sessions.start(self.session, time=start_time, cwd=self.cwd,
                                    extra=extra)]  # fmt: skip

    def _call(self, session: str, data: dict[str, Any], time: str | None) -> Outgoing:
        call_id = data.get("toolCallId") if isinstance(data.get("toolCallId"), str) else None
        name = data.get("toolName")
        payload = {"tool": name, "call_id": call_id, "arguments": data.get("arguments")}
        if isinstance(data.get("mcpServerName"), str):
            payload["mcp_server"] = data["mcpServerName"]
        out = self.sessions.emit(session, "tool/call", "assistant", time, payload,
                                 "tool.execution_start")  # fmt: skip
        if call_id:
            self.calls[call_id] = (session, out.seq, name)
            self.open_calls[call_id] = session
        return out

    def _interrupted(self, session: str, time: str | None) -> list[Outgoing]:
        """A result marked ``interrupted`` for each of the session's calls still running
        when its turn was aborted: Copilot writes none for them."""
        return interrupted_results(self.sessions, session, self.open_calls,
                                   lambda call_id: self.calls[call_id][1:],
                                   time, "abort")  # fmt: skip

    def _result(self, session: str, data: dict[str, Any], time: str | None) -> Outgoing:
        call_id = data.get("toolCallId") if isinstance(data.get("toolCallId"), str) else None
        call = self.calls.get(call_id) if call_id else None
        if call_id:
            self.open_calls.pop(call_id, None)
        result, error = data.get("result"), data.get("error")
        if isinstance(result, dict):
            output = as_text(result.get("content", result.get("detailedContent")))
        elif isinstance(error, dict):
            output = as_text(error.get("message"))
        else:
            output = as_text(result if result is not None else error)
        payload: dict[str, Any] = {"call_id": call_id, "output": output}
        if call is not None:
            payload["tool"] = call[2]
        # A shell command that failed is a successful tool call (1.0.x): its exit code says.
        exit_code = _fields(data.get("shellExecution")).get("exitCode")
        failed = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0
        if data.get("success") is False or failed:
            payload["is_error"] = True
        return self.sessions.emit(session, "tool/result", "tool", time, payload,
                                  "tool.execution_complete",
                                  cites=[(call[0], call[1])] if call else None)  # fmt: skip

    def _title(self) -> list[Outgoing]:
        """``workspace.yaml``'s name (1.0.x: the first prompt, or what ``--name`` or a
        rename gave) or, in older versions, its summary, once, while the session is open."""
        named = self.workspace.get("name") if self.workspace.get("user_named") == "true" else None
        summary = named or self.workspace.get("summary") or self.workspace.get("name")
        if self.titled or self.session is None or not summary:
            return []
        self.titled = True
        payload = {"title": cut(summary)}
        return [self.sessions.emit(self.session, "session/title", "system", None, payload,
                                   "workspace.yaml:summary")]  # fmt: skip

    def finish(self) -> list[Outgoing]:
        # Not the title: ``watch`` never calls this, and the file read so far must give
        # what ``import`` gives. The title comes at a shutdown, or with the quiet end.
        return []

    def idle(self) -> list[Outgoing]:
        out = self._title() + self._end()
        self.tally.events += len(out)
        return out

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        last = self.shutdown[0] if self.shutdown and self.shutdown[0] else None
        state = self.sessions.by_id.get(self.session) if self.session else None
        if state is None or datetime.fromisoformat(last or state.last_time) >= before:
            return []
        out = self._title() + self._end()
        self.tally.events += len(out)
        return out

    def _end(self) -> list[Outgoing]:
        """The session's end: at its shutdown when that is the last record, else idle; a
        sub-agent that never said it was done ends with it."""
        if self.session is None:
            return []
        children = [self.sessions.end(child, reason="idle") for child in self.children.values()]
        return [end for end in children if end] + self._end_main()

    def _end_main(self) -> list[Outgoing]:
        assert self.session is not None
        if self.shutdown is None:
            end = self.sessions.end(self.session, reason="idle")
        else:
            time, reason = self.shutdown
            end = self.sessions.end(self.session, reason=reason, source_type="session.shutdown",
                                    time=time)  # fmt: skip
        return [end] if end else []


def _fields(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def looks_like(record: dict[str, Any]) -> bool:
    data = record.get("data")
    return (
        record.get("type") == "session.start"
        and isinstance(data, dict)
        and data.get("producer") == "copilot-agent"
    )


class CopilotCliImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "GitHub Copilot CLI sessions ($COPILOT_HOME/session-state)"
    env_vars: ClassVar[tuple[str, ...]] = ("COPILOT_HOME",)
    detect_order: ClassVar[int] = 40

    def default_locations(self) -> list[Path]:
        home = os.environ.get("COPILOT_HOME") or Path.home() / ".copilot"
        return [Path(home) / STATE_DIR]

    def accepts(self, path: Path) -> bool:
        # A session folder's events, or an older version's flat file; or one of the
        # databases beside them, read only to be reported.
        return path.name == EVENTS_FILE or path.parent.name == STATE_DIR or _noted(path)

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return any(looks_like(record) for record in json_objects(head))

    def files(self, root: Path) -> list[Path]:
        """The event logs, and the databases beside them (each to be reported by name):
        the index lives in ``$COPILOT_HOME``, the parent of ``session-state``."""
        found = set(super().files(root)) | set(root.rglob(SESSION_DB)) | set(root.rglob(STORE_DB))
        if root.name == STATE_DIR and (root.parent / STORE_DB).is_file():
            found.add(root.parent / STORE_DB)
        return sorted((path for path in found if self.accepts(path)), key=str)

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        if not _noted(path):
            yield from super().records(path, after=after, number=number, complete=complete)
        elif after == 0:  # a database is looked at once: what it holds is reported
            yield Record(number + 1, b"", 1)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return NotedDatabase(path) if _noted(path) else CopilotConverter(path)


def _noted(path: Path) -> bool:
    return path.suffix == ".db" and (
        path.name == STORE_DB or (path.name == SESSION_DB and path.parent.parent.name == STATE_DIR)
    )


class NotedDatabase:
    """One of the SQLite files 1.0.102 writes beside the event logs, reported by name (the
    event log has the conversation). From the index, a session it lists whose event log is
    gone is imported as the index keeps it (see :class:`IndexedSessions`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tally = Tally()
        self.sessions = Sessions(NAME)

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]:
        self.tally.lines += 1
        self.tally.skip(f"file:{self.path.name}")
        if self.path.name != STORE_DB:
            return []
        out = self._orphans()
        self.tally.events += len(out)
        return out

    def _orphans(self) -> list[Outgoing]:
        """The sessions the index lists with no event log, each read from the index: a
        session that has its log is never read here (its turns are copies of the log's)."""
        state = self.path.parent / STATE_DIR
        try:
            with read_only(self.path) as conn:
                known = tables(conn)
                if "sessions" not in known:
                    return []
                conn.row_factory = sqlite3.Row
                rows = conn.execute("SELECT * FROM sessions ORDER BY id").fetchall()
                gone = [dict(row) for row in rows if not _has_events(state, str(row["id"]))]
                return [event for row in gone for event in self._session(conn, row, known)]
        except sqlite3.Error as exc:
            self.tally.problems.append(Problem(str(self.path), 0, f"cannot read: {exc}"))
            return []

    def _session(
        self, conn: sqlite3.Connection, row: dict[str, Any], known: Collection[str]
    ) -> list[Outgoing]:
        """One session as the index keeps it: its turns' user message and answer (text
        only: the tool calls, reasoning and attachments were in the deleted log) and its
        checkpoints' summaries, each marked ``from_index``."""
        sid = str(row["id"])
        session = safe_id(sid)
        mark = {"from_index": True}
        turns = (
            conn.execute(
                "SELECT turn_index, user_message, assistant_response, timestamp FROM turns"
                " WHERE session_id = ? ORDER BY turn_index",
                (sid,),
            ).fetchall()
            if "turns" in known
            else []
        )
        checkpoints = (
            conn.execute(
                "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY checkpoint_number",
                (sid,),
            ).fetchall()
            if "checkpoints" in known
            else []
        )
        extra = {
            name: row[column]
            for name, column in (("git_branch", "branch"), ("repository", "repository"))
            if isinstance(row.get(column), str)
        }
        cwd = row.get("cwd") if isinstance(row.get("cwd"), str) else None
        out = [self.sessions.start(session, time=iso_time(row.get("created_at")), cwd=cwd,
                                   extra={**extra, **mark})]  # fmt: skip
        # Turns and checkpoints in time order (a checkpoint after the turns it summed up).
        moments: list[tuple[str, int, int, Any]] = [
            (iso_time(t["timestamp"]) or "", 0, n, t) for n, t in enumerate(turns)
        ] + [(iso_time(c["created_at"]) or "", 1, n, c) for n, c in enumerate(checkpoints)]
        for time, is_checkpoint, _, found in sorted(moments, key=lambda m: m[:3]):
            when = time or None
            if is_checkpoint:
                text = _checkpoint_text(dict(found))
                if text:
                    out.append(self.sessions.emit(session, "message/context", "system", when,
                                                  {"text": cut(text), **mark},
                                                  "session-store.db:checkpoint"))  # fmt: skip
                continue
            for column, type_, surface in (
                ("user_message", "message/user", "user"),
                ("assistant_response", "message/assistant", "assistant"),
            ):
                text = found[column]
                if isinstance(text, str) and text.strip():
                    out.append(self.sessions.emit(session, type_, surface, when,
                                                  {"text": cut(text), **mark},
                                                  f"session-store.db:turn:{column}"))  # fmt: skip
        summary = row.get("summary")
        if isinstance(summary, str) and summary.strip():
            out.append(self.sessions.emit(session, "session/title", "system", None,
                                          {"title": cut(summary)},
                                          "session-store.db:summary"))  # fmt: skip
        # Its log is gone: nothing more will be written to it.
        end = self.sessions.end(session, reason="idle", source_type="session-store.db",
                                time=iso_time(row.get("updated_at")))  # fmt: skip
        return out + ([end] if end else [])

    def idle(self) -> list[Outgoing]:
        return []

    def finish(self) -> list[Outgoing]:
        return []

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        return []


# A checkpoint's sections, as 1.0.102's index keeps them (its compaction summaries).
_CHECKPOINT_SECTIONS: Final = (
    "overview", "history", "work_done", "technical_details", "important_files", "next_steps",
)  # fmt: skip


def _checkpoint_text(row: dict[str, Any]) -> str:
    title = row.get("title")
    parts = [f"Checkpoint: {title}"] if isinstance(title, str) and title.strip() else []
    for name in _CHECKPOINT_SECTIONS:
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            parts.append(f"{name.replace('_', ' ')}: {value}")
    return "\n\n".join(parts)


def _has_events(state: Path, sid: str) -> bool:
    return (state / sid / EVENTS_FILE).is_file() or (state / f"{sid}.jsonl").is_file()
