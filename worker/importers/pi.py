"""Pi coding agent sessions: ``$PI_CODING_AGENT_DIR/sessions/--<cwd>--/<time>_<id>.jsonl``
(default ``~/.pi/agent``), and Oh My Pi's, the same format (``$OMP_AGENT_DIR``, default
``~/.omp/agent``).

A header record (``type: session``, ``id``, ``cwd``, ``timestamp``, ``version``; a session
forked into a new file names its ``parentSession`` file), then entries that form a tree
by ``id``/``parentId`` (version 1 files have no ids: a line each after the other). The
entry a new one hangs from is usually the last one; when it is an earlier one the user
went back and branched (``/tree``): the branch is a fork, a child session
``<session>-fork-<entry id>`` whose start cites the event the branch grows from, and the
entries that follow it belong to it. Mapping of ``message`` entries by role:

- ``user``: ``message/user`` (harness text typed by ``contracts.harness``);
  ``assistant``: per content block, ``text`` as ``message/assistant``, ``thinking`` as
  ``message/assistant`` with ``thinking``, ``toolCall`` as ``tool/call``; ``toolResult``:
  ``tool/result`` citing its call (a call still open when the session's next prompt
  comes was interrupted, Pi writes no result for it: it gets one marked ``interrupted``,
  ``is_error``, no output); ``bashExecution`` (the user's ``!`` commands):
  ``command`` and its ``command/output``; ``custom`` (extension messages):
  ``message/context``;
- ``compaction``: a ``compaction`` replacing the events before ``firstKeptEntryId``;
  ``branch_summary`` (what an abandoned branch did) and ``custom_message`` entries:
  ``message/context``; ``session_info``'s ``name``: ``session/title``.

Model and thinking-level changes, labels, extension state (``custom``), image blocks (of
prompts too), thinking kept only encrypted (empty text, the reasoning in its signature) and
new entry types are skipped and counted. The format has no session end: sessions are
ended by ``--idle-seconds``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    as_text,
    cut,
    interrupted_results,
    iso_time,
    safe_id,
)
from worker.importers.plugin import ConvertOptions, Importer, json_objects

NAME: Final = "pi"
# ``<time>_<uuid>.jsonl``: the session id a forked session's header names by its file.
_FILE_ID: Final = re.compile(r"_([^_/\\]+)\.jsonl$")
_SKIPPED_ENTRIES: Final = frozenset({"model_change", "thinking_level_change", "label", "custom"})


class PiConverter(JsonRecordConverter):
    # OpenClaw writes the same entries: its converter (``openclaw.py``) prefixes the ids
    # and reads the header's parent and the start's citation its own way.
    prefix: ClassVar[str] = ""

    def __init__(self, path: Path, name: str = NAME) -> None:
        # ``name``: another agent writing Pi's session format (Letta Code's local backend).
        super().__init__(path, name)
        self.main: str | None = None
        self.cwd: str | None = None
        self.entry_session: dict[str, str] = {}  # entry id -> the session it is in
        self.tip: dict[str, str] = {}  # session -> its last entry's id
        self.anchor: dict[str, int] = {}  # entry id -> its session's last seq after it
        self.first_seq: dict[str, int] = {}  # entry id -> seq of its first event
        self.calls: dict[str, tuple[str, int, object]] = {}  # tool call id -> event, name
        self.open_calls: dict[str, str] = {}  # tool call id -> session, until its result
        self.last_entry: str | None = None  # version 1: entries chain in file order

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        if kind == "session":
            return self._header(record)
        if self.main is None:
            self.tally.skip(f"record:{kind}:before-header")
            return []
        out: list[Outgoing] = []
        entry_id = record.get("id") if isinstance(record.get("id"), str) else None
        parent_id = record.get("parentId") if "parentId" in record else self.last_entry
        session = self._session_of(entry_id, parent_id, record, out)
        time = iso_time(record.get("timestamp"))
        before = len(out)
        out += self._entry(session, kind, record, time)
        if entry_id is not None:
            self.last_entry = entry_id
            self.entry_session[entry_id] = session
            self.tip[session] = entry_id
            if len(out) > before:
                self.first_seq[entry_id] = out[before].seq
            self.anchor[entry_id] = self.sessions.by_id[session].next_seq - 1
        return out

    def _header(self, record: dict[str, Any]) -> list[Outgoing]:
        if self.main is not None:
            self.tally.skip("record:session:repeated")
            return []
        raw, cwd = record.get("id"), record.get("cwd")
        self.main = safe_id(raw if isinstance(raw, str) else Path(self.path).stem,
                            prefix=self.prefix)  # fmt: skip
        self.cwd = cwd if isinstance(cwd, str) and cwd else None  # old sessions: ""
        extra = {"version": record["version"]} if isinstance(record.get("version"), int) else {}
        return [self.sessions.start(self.main, time=iso_time(record.get("timestamp")),
                                    cwd=self.cwd, parent=self._parent_of(record),
                                    extra=extra, cites=self._start_cites())]  # fmt: skip

    def _parent_of(self, header: dict[str, Any]) -> str | None:
        """The session a header continues: Pi names its file (``<time>_<id>.jsonl``)."""
        parent_file = header.get("parentSession")
        found = _FILE_ID.search(parent_file) if isinstance(parent_file, str) else None
        return safe_id(found.group(1)) if found else None

    def _start_cites(self) -> list[tuple[str, int]] | None:
        """The event that started this session (Pi's files say none)."""
        return None

    def _session_of(
        self, entry_id: str | None, parent_id: object, record: dict[str, Any], out: list[Outgoing]
    ) -> str:
        """The session an entry belongs to; a branch from an earlier entry starts a fork."""
        assert self.main is not None
        if not isinstance(parent_id, str) or parent_id not in self.entry_session:
            return self._main_for(parent_id)
        session = self.entry_session[parent_id]
        if self.tip.get(session) == parent_id or entry_id is None:
            return session
        fork = safe_id(f"{self.main}-fork-{entry_id}")
        out.append(self.sessions.start(
            fork, time=iso_time(record.get("timestamp")), cwd=self.cwd, parent=session,
            extra={"fork_of_entry": parent_id},
            cites=[(session, self.anchor[parent_id])],
        ))  # fmt: skip
        return fork

    def _main_for(self, parent_id: object) -> str:
        """An entry hanging from nothing read (the first, or a lost parent): the main one."""
        assert self.main is not None
        if parent_id is not None:
            self.tally.skip("entry:unknown-parent")
        return self.main

    def _entry(
        self, session: str, kind: object, record: dict[str, Any], time: str | None
    ) -> list[Outgoing]:
        source = str(kind)
        if kind == "message" and isinstance(record.get("message"), dict):
            return self._message(session, record["message"], time)
        if kind == "compaction":
            kept = record.get("firstKeptEntryId")
            first = self.first_seq.get(kept) if isinstance(kept, str) else None
            payload = {"summary": as_text(record.get("summary"))}
            if isinstance(record.get("tokensBefore"), int):
                payload["tokens_before"] = record["tokensBefore"]
            through = first - 1 if first is not None else None
            return [self.sessions.compaction(session, time, payload, source, through=through)]
        if kind in ("branch_summary", "custom_message"):
            text = as_text(record.get("summary", record.get("content")))
            return [self.sessions.emit(session, "message/context", "system", time,
                                       {"text": text}, source)]  # fmt: skip
        if kind == "session_info" and isinstance(record.get("name"), str) and record["name"]:
            payload = {"title": cut(record["name"])}
            return [self.sessions.emit(session, "session/title", "system", None, payload, source)]
        if kind == "session_info" and record.get("name") == "":
            # An empty name clears the title (pi's writer trims it): the title stays here.
            self.tally.skip("record:session_info:cleared")
            return []
        self.tally.skip(f"record:{kind}" if kind in _SKIPPED_ENTRIES else f"record:{kind}:new")
        return []

    def _message(self, session: str, message: dict[str, Any], time: str | None) -> list[Outgoing]:
        role = message.get("role")
        source = f"message:{role}"
        content = message.get("content")
        if role == "user":
            for block in content if isinstance(content, list) else []:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind != "text":  # an image: not searchable text
                    self.tally.skip(f"user-block:{kind}")
            text = as_text(content)
            type_ = harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            ended = self._interrupted(session, time)
            said = self.sessions.emit(session, type_, surface, time, {"text": text}, source)
            return [*ended, said]
        if role == "assistant":
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            return [out for block in blocks if (out := self._block(session, block, time))]
        if role == "toolResult":
            call_id = message.get("toolCallId")
            call = self.calls.get(call_id) if isinstance(call_id, str) else None
            if isinstance(call_id, str):
                self.open_calls.pop(call_id, None)
            payload = {"tool": message.get("toolName"), "call_id": call_id,
                       "output": as_text(content)}  # fmt: skip
            if message.get("isError") is True:
                payload["is_error"] = True
            if call is None:  # published citing nothing; the import summary counts it
                payload.update(self._unwritten_call(message))
            return [self.sessions.emit(session, "tool/result", "tool", time, payload, source,
                                       cites=[call[:2]] if call else None)]  # fmt: skip
        if role == "bashExecution":
            command = {"text": as_text(message.get("command"))}
            output = {"text": as_text(message.get("output")), "exit_code": message.get("exitCode")}
            ran = self.sessions.emit(session, "command", "user", time, command, source)
            return [
                ran,
                self.sessions.emit(session, "command/output", "tool", time, output, source),
            ]
        if role in ("custom", "hookMessage"):
            return [self.sessions.emit(session, "message/context", "system", time,
                                       {"text": as_text(content)}, source)]  # fmt: skip
        self.tally.skip(f"{source}:new")
        return []

    def _unwritten_call(self, message: dict[str, Any]) -> dict[str, Any]:
        """What a result whose call the transcript never wrote says of it (OpenClaw's
        writer drops calls it rejects): nothing more, in Pi's transcripts."""
        return {}

    def _interrupted(self, session: str, time: str | None) -> list[Outgoing]:
        """The session's calls still without a result when its next prompt comes: Pi wrote
        none (a tool interrupted by Ctrl-C), so each gets one marked ``interrupted``."""
        return interrupted_results(self.sessions, session, self.open_calls,
                                   lambda call_id: self.calls[call_id][1:],
                                   time, "toolResult:missing")  # fmt: skip

    def _block(self, session: str, block: object, time: str | None) -> Outgoing | None:
        if not isinstance(block, dict):
            return None
        kind = block.get("type")
        source = f"message:assistant:{kind}"
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            return self.sessions.emit(session, "message/assistant", "assistant", time,
                                      {"text": cut(block["text"])}, source)  # fmt: skip
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            if not block["thinking"].strip():  # the reasoning only in its signature
                self.tally.skip(f"{source}:encrypted")
                return None
            return self.sessions.emit(session, "message/assistant", "assistant", time,
                                      {"thinking": cut(block["thinking"])}, source)  # fmt: skip
        if kind == "toolCall":
            call_id = block.get("id") if isinstance(block.get("id"), str) else None
            payload = {"tool": block.get("name"), "call_id": call_id,
                       "arguments": block.get("arguments")}  # fmt: skip
            out = self.sessions.emit(session, "tool/call", "assistant", time, payload, source)
            if call_id:
                self.calls[call_id] = (session, out.seq, block.get("name"))
                self.open_calls[call_id] = session
            return out
        self.tally.skip(source)
        return None


class PiImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Pi coding agent and Oh My Pi sessions ($PI_CODING_AGENT_DIR/sessions)"
    env_vars: ClassVar[tuple[str, ...]] = ("PI_CODING_AGENT_DIR", "OMP_AGENT_DIR")
    detect_order: ClassVar[int] = 40

    def default_locations(self) -> list[Path]:
        # Oh My Pi, a fork, writes the same format under its own folder.
        pi = os.environ.get("PI_CODING_AGENT_DIR") or Path.home() / ".pi" / "agent"
        omp = os.environ.get("OMP_AGENT_DIR") or Path.home() / ".omp" / "agent"
        return [Path(pi) / "sessions", Path(omp) / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return any(
            r.get("type") == "session" and isinstance(r.get("id"), str) and "cwd" in r
            for r in json_objects(head)
        )

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return PiConverter(path)
