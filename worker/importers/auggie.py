"""Auggie (Augment Code's CLI): ``~/.augment/sessions/<sessionId>.json``, one JSON document
per session, rewritten whole after each change.

Read from the writer in the ``@augmentcode/auggie`` package 0.36.0 (its session manager,
session store, and chat exchange nodes): ``sessionId``, ``created``, ``modified``,
``title``/``customTitle``, ``parentConversationId`` (a sub-agent's parent), and
``chatHistory``, a list of exchange states (``exchange``, ``completed``, ``sequenceId``,
``finishedAt``, ``isHistorySummary``). An exchange holds the user's request
(``request_message`` and ``request_nodes``) and the model's answer (``response_nodes``):

- request nodes: text (type 0) as ``message/user`` (harness text typed), a tool result
  (type 1, ``tool_result_node``: ``tool_use_id``, ``content``, ``is_error``; the images
  among its ``content_nodes`` are counted) as the ``tool/result`` of its call, a history
  summary (type 10) as a ``compaction``; the IDE state (type 4) gives the session's cwd
  (its first workspace folder), images (type 2) and other kinds are counted;
- the answer: its thinking nodes (type 8) as one ``message/assistant`` with thinking,
  the ``response_text`` (the text nodes, type 0, are its streamed pieces) as one
  ``message/assistant``, then each tool use (type 5: ``tool_use_id``, ``tool_name``,
  ``input_json``; a partial one gives way to the whole) as a ``tool/call``, as Auggie
  replays a session from history; billing and token usage (types 9, 10) and other
  kinds are counted;
- an exchange Auggie marks ``isHistorySummary`` is its summary of the conversation: a
  ``compaction`` replacing what came before.

Records are the header, then the exchanges in ``sequenceId`` order; a record's position
is its ``sequenceId`` (in millionths: Auggie gives an exchange it inserts among earlier
ones a fractional one), so ``watch`` reads what was added after it. The last exchange
waits while it is not ``completed``; one left incomplete before others (a cancelled turn)
is counted (``exchange:incomplete``). The title (the
user's ``customTitle``, else Auggie's ``title``) is published just before the session's
end. Sub-agents are sessions of their own naming their parent; the parent's ``sub-agent``
call is in another file and is not cited. Backups (``<id>-backup<n>.json``) are not read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from worker.importers.base import (
    Converter,
    Outgoing,
    TitledAtEnd,
    as_text,
    cut,
    iso_time,
    safe_id,
)
from worker.importers.plugin import (
    SNIFF_LINES,
    ConvertOptions,
    Importer,
    Record,
    UnreadableSource,
    json_document,
)

NAME: Final = "auggie"
PREFIX: Final = "auggie-"
_BACKUP: Final = re.compile(r"-backup\d+\.json$")
# Positions: the header first, then each exchange at its sequenceId in millionths.
_SCALE: Final = 1_000_000
_HEADER_FIELDS: Final = ("sessionId", "created", "parentConversationId", "workspaceId",
                         "rootTaskUuid")  # fmt: skip


def read_session(path: Path) -> dict[str, Any]:
    document = json_document(path)
    if not isinstance(document, dict) or not isinstance(document.get("chatHistory"), list):
        raise UnreadableSource("not an Auggie session: no chatHistory list")
    return document


def session_records(document: dict[str, Any]) -> list[tuple[int, bytes]]:
    """(position, record) of a session document: its header, then its exchanges."""
    history = [item for item in document["chatHistory"] if isinstance(item, dict)]
    header = {key: document.get(key) for key in _HEADER_FIELDS}
    header |= {"type": "header", "cwd": _cwd(history)}
    records = [(1, orjson.dumps(header))]
    for index, item in enumerate(history, start=1):
        order = item.get("sequenceId")
        at = order if isinstance(order, int | float) and not isinstance(order, bool) else index
        records.append((1 + round(at * _SCALE), orjson.dumps({"type": "exchange", **item})))
    return sorted(records, key=lambda record: record[0])


def _cwd(history: list[dict[str, Any]]) -> str | None:
    """The first workspace folder of the first IDE state node (Auggie's own rule for a
    session's workspace, with the folder before its repository root)."""
    for item in history:
        for node in _nodes(item.get("exchange"), "request_nodes"):
            state = node.get("ide_state_node") if node.get("type") == 4 else None
            folders = state.get("workspace_folders") if isinstance(state, dict) else None
            if isinstance(folders, list) and folders and isinstance(folders[0], dict):
                found = folders[0].get("folder_root") or folders[0].get("repository_root")
                if isinstance(found, str) and found:
                    return found
    return None


def _nodes(exchange: object, key: str) -> list[dict[str, Any]]:
    nodes = exchange.get(key) if isinstance(exchange, dict) else None
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


class AuggieConverter(TitledAtEnd):
    def __init__(self, path: Path) -> None:
        super().__init__(path, NAME)
        self.session: str | None = None
        self.calls: dict[str, tuple[str, int, object]] = {}  # tool_use_id -> event, tool

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        if record.get("type") == "header":
            raw = record.get("sessionId")
            self.session = safe_id(raw if isinstance(raw, str) else Path(self.path).stem,
                                   prefix=PREFIX)  # fmt: skip
            parent = record.get("parentConversationId")
            cwd = record.get("cwd")
            return [self.sessions.start(
                self.session, time=iso_time(record.get("created")),
                cwd=cwd if isinstance(cwd, str) else None,
                parent=safe_id(parent, prefix=PREFIX) if isinstance(parent, str) and parent
                else None,
            )]  # fmt: skip
        if self.session is None:
            self.tally.skip("record:before-header")
            return []
        if record.get("completed") is not True:
            self.tally.skip("exchange:incomplete")
            return []
        return self._exchange(self.session, record)

    def _exchange(self, session: str, item: dict[str, Any]) -> list[Outgoing]:
        found = item.get("exchange")
        exchange: dict[str, Any] = found if isinstance(found, dict) else {}
        time = iso_time(item.get("finishedAt"))
        requests = _nodes(exchange, "request_nodes")
        out: list[Outgoing] = []
        if item.get("isHistorySummary") is True and not any(n.get("type") == 10
                                                             for n in requests):  # fmt: skip
            text = exchange.get("request_message") or exchange.get("response_text")
            return [self._compaction(session, time, as_text(text))]
        said = False
        for node in requests:
            kind = node.get("type")
            if kind == 0:
                text = _text(node)
                if text.strip():
                    out.append(self._user(session, time, text))
                    said = True
            elif kind == 1 and isinstance(node.get("tool_result_node"), dict):
                out.append(self._result(session, time, node["tool_result_node"]))
            elif kind == 10:
                summary = node.get("history_summary_node")
                text = summary.get("summary_text") if isinstance(summary, dict) else _text(node)
                out.append(self._compaction(session, time, as_text(text)))
            else:
                self.tally.skip(f"request_node:{kind}")
        message = exchange.get("request_message")
        if not said and isinstance(message, str) and message.strip():
            out.append(self._user(session, time, message))
        return out + self._response(session, time, exchange)

    def _response(self, session: str, time: str | None, exchange: dict[str, Any]) -> list[Outgoing]:
        """The answer as Auggie shows it again from history: its thinking, the
        ``response_text`` (the whole text: the text nodes are the streamed pieces of it),
        then its tool uses, once each."""
        out: list[Outgoing] = []
        nodes = _nodes(exchange, "response_nodes")
        thoughts = [
            as_text(n["thinking"].get("summary") or n["thinking"].get("content"))
            for n in nodes
            if n.get("type") == 8 and isinstance(n.get("thinking"), dict)
        ]
        if any(thought.strip() for thought in thoughts):
            thinking = {"thinking": cut("\n".join(t for t in thoughts if t.strip()))}
            out.append(self._assistant(session, time, thinking, "response:thinking"))
        text = exchange.get("response_text")
        if not isinstance(text, str) or not text.strip():
            text = "".join(
                n["content"]
                for n in nodes
                if n.get("type") == 0 and isinstance(n.get("content"), str)
            )
        if text.strip():
            out.append(self._assistant(session, time, {"text": cut(text)}, "response_text"))
        uses: dict[object, dict[str, Any]] = {}  # a partial tool use gives way to the whole
        for node in nodes:
            kind = node.get("type")
            use = node.get("tool_use")
            if kind == 5 and isinstance(use, dict):
                key = use.get("tool_use_id") or id(node)
                if key not in uses or uses[key].get("is_partial") is True:
                    uses[key] = use
            elif kind not in (0, 8):
                self.tally.skip(f"response_node:{kind}")
        out += [self._call(session, time, use) for use in uses.values()]  # fmt: skip
        return out

    def _assistant(
        self, session: str, time: str | None, payload: dict[str, Any], source: str
    ) -> Outgoing:
        return self.sessions.emit(session, "message/assistant", "assistant", time, payload, source)

    def _user(self, session: str, time: str | None, text: str) -> Outgoing:
        type_ = harness.harness_type(text) or "message/user"
        surface = harness.SURFACES.get(type_, "user")
        return self.sessions.emit(session, type_, surface, time, {"text": cut(text)}, "request")

    def _call(self, session: str, time: str | None, use: dict[str, Any]) -> Outgoing:
        raw = use.get("input_json")
        try:
            arguments = orjson.loads(raw) if isinstance(raw, str) else raw
        except orjson.JSONDecodeError:
            arguments = raw
        call_id = use.get("tool_use_id")
        payload = {"tool": use.get("tool_name"), "call_id": call_id, "arguments": arguments}
        out = self.sessions.emit(session, "tool/call", "assistant", time, payload,
                                 "response:tool_use")  # fmt: skip
        if isinstance(call_id, str):
            self.calls[call_id] = (session, out.seq, use.get("tool_name"))
        return out

    def _result(self, session: str, time: str | None, result: dict[str, Any]) -> Outgoing:
        call_id = result.get("tool_use_id")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        payload: dict[str, Any] = {"tool": call[2] if call else None, "call_id": call_id,
                                   "output": as_text(result.get("content"))}  # fmt: skip
        if result.get("is_error") is True:
            payload["is_error"] = True
        # ``content`` is the result's text; ``content_nodes`` repeat it in pieces beside the
        # images a tool returned (type 2), which are counted.
        for node in _nodes(result, "content_nodes"):
            if node.get("type") == 2:
                self.tally.skip("tool_result:image")
        cites = [call[:2]] if call else None
        return self.sessions.emit(session, "tool/result", "tool", time, payload,
                                  "request:tool_result", cites=cites)  # fmt: skip

    def _compaction(self, session: str, time: str | None, summary: str) -> Outgoing:
        return self.sessions.compaction(session, time, {"summary": summary}, "history_summary")

    def _end_title(self) -> tuple[str | None, str | None]:
        """The title in the file now: the user's ``customTitle``, else Auggie's."""
        try:
            document = read_session(Path(self.path))
        except (OSError, UnreadableSource):
            return self.session, None
        title = document.get("customTitle") or document.get("title")
        return self.session, title if isinstance(title, str) else None


def _looks_like_session(head: Sequence[bytes]) -> bool:
    """Written with two-space indentation: the id is the first field, the history after
    the times."""
    return any(line.strip().startswith(b'"sessionId"') for line in head[:3]) and any(
        line.strip().startswith(b'"chatHistory"') for line in head
    )


def _text(node: dict[str, Any]) -> str:
    inner = node.get("text_node")
    content = inner.get("content") if isinstance(inner, dict) else node.get("content")
    return content if isinstance(content, str) else ""


class AuggieImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Auggie (Augment Code CLI) sessions (~/.augment/sessions/*.json)"
    detect_order: ClassVar[int] = 58
    pattern: ClassVar[str] = "*.json"

    def default_locations(self) -> list[Path]:
        # Auggie's home is $HOME (then USERPROFILE), not a variable of its own.
        home = os.environ.get("HOME") or os.environ.get("USERPROFILE") or Path.home()
        return [Path(home) / ".augment" / "sessions"]

    def accepts(self, path: Path) -> bool:
        """A session file: not a backup, and its first lines are a session's."""
        if path.suffix != ".json" or _BACKUP.search(path.name) or path.parent.name != "sessions":
            return False
        try:
            with path.open("rb") as fh:
                head = [fh.readline() for _ in range(SNIFF_LINES)]
        except OSError:
            return False
        return _looks_like_session(head)

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        return (
            path.suffix == ".json"
            and not _BACKUP.search(path.name)
            and path.parent.name == "sessions"
            and _looks_like_session(head)
        )

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        try:
            found = session_records(read_session(path))
        except UnreadableSource:
            if complete:
                raise
            return  # being written: read again on the next poll
        for index, (position, data) in enumerate(found, start=1):
            if position <= after:
                continue
            if (
                not complete
                and index == len(found)
                and orjson.loads(data).get("completed") is False
            ):
                return  # the last exchange, still running: read again on the next poll
            number += 1
            yield Record(number, data, position)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return AuggieConverter(path)
