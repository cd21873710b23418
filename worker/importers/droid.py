"""Factory Droid sessions: ``~/.factory/sessions/<slug>/<session id>.jsonl``.

The first line is a ``session_start`` record (``id``, ``title``, ``cwd``, ``version``,
``isSessionTitleManuallySet``; a sub-agent's session names the session that called it,
``callingSessionId``), rewritten in place as the title changes; the other lines are
appended: ``message`` records (``id``, ``parentId``, ``timestamp``, ``message`` with a
``role`` and Anthropic-style ``content`` blocks: ``text``, ``thinking``, ``tool_use``,
``tool_result``). Mapping:

- ``session_start`` is the ``session/start`` (cwd, version; the calling session as the
  parent); its ``title``, unless it is the placeholder "New Session", the
  ``session/title``, read again when the file is done or quiet (it changes in place);
- a ``compaction_state`` record (``summaryText``: Droid compacted the conversation, asking
  the model for the summary) is a ``compaction`` replacing the events since the previous one;
- user text blocks are ``message/user`` (harness text typed by ``contracts.harness``),
  assistant text ``message/assistant``, thinking ``message/assistant`` with
  ``thinking``, ``tool_use`` ``tool/call``, ``tool_result`` ``tool/result`` citing its
  call.

Since the first line may change length, a record's position (what ``watch`` stores) is
counted from the end of the first line: the appended lines keep their place. The
``.settings.json`` beside a session (model, token counts) is not read. Other record types
and blocks (images) are skipped and counted; sessions are ended by ``--idle-seconds``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    cut,
    file_time,
    iso_time,
    safe_id,
)
from worker.importers.blocks import Blocks
from worker.importers.plugin import ConvertOptions, Importer, Record, json_objects

NAME: Final = "droid"
PLACEHOLDER_TITLE: Final = "new session"
_TITLE_FIELDS: Final = frozenset({"sessionTitle", "isSessionTitleManuallySet"})


def _first_line(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.readline()


class DroidConverter(JsonRecordConverter):
    def __init__(self, path: Path) -> None:
        super().__init__(path, NAME)
        self.session: str | None = None
        # The session_start read, held until the first message gives the session's time.
        self.header: dict[str, Any] | None = None
        self.title: str | None = None
        self.blocks = Blocks(self.sessions, self.tally)

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        if kind == "session_start":
            if self.header is not None:
                self.tally.skip("record:session_start:repeated")
            else:
                self.header = record
            return []
        if self.header is None:
            self.tally.skip(f"record:{kind}:before-session_start")
            return []
        if kind == "compaction_state" and self.session is not None:
            return [self._compaction(self.session, record)]
        message = record.get("message")
        if kind != "message" or not isinstance(message, dict):
            self.tally.skip(f"record:{kind}")
            return []
        time = iso_time(record.get("timestamp"))
        out = self._start(self.header, time) if self.session is None else []
        assert self.session is not None  # _start named it
        role, content = str(message.get("role")), _documents_read(message.get("content"))
        return out + self.blocks.message(self.session, role, content, time, "message")

    def _compaction(self, session: str, record: dict[str, Any]) -> Outgoing:
        """A ``compaction_state`` (Droid summarised the conversation so far; the next request
        carries the summary instead): a compaction replacing the session's events since the
        previous one."""
        payload: dict[str, Any] = {"summary": cut(str(record.get("summaryText") or ""))}
        for source, key in (("summaryKind", "kind"), ("removedCount", "removed_count")):
            if isinstance(record.get(source), str | int):
                payload[key] = record[source]
        time = iso_time(record.get("timestamp"))
        return self.sessions.compaction(session, time, payload, "compaction_state")

    def _start(self, record: dict[str, Any], time: str | None) -> list[Outgoing]:
        """The session's start, at its first message's time (the record has none)."""
        raw = record.get("id")
        self.session = safe_id(raw if isinstance(raw, str) and raw else Path(self.path).stem)
        cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else None
        calling = record.get("callingSessionId")
        parent = safe_id(calling) if isinstance(calling, str) and calling else None
        extra = {"version": record["version"]} if isinstance(record.get("version"), int) else {}
        out = [self.sessions.start(self.session, time=time, cwd=cwd or None, parent=parent,
                                   extra=extra)]  # fmt: skip
        return out + self._title(record)

    def _title(self, record: dict[str, Any]) -> list[Outgoing]:
        title = record.get("title")
        if self.session is None or not isinstance(title, str):
            return []
        if title.strip().lower() in ("", PLACEHOLDER_TITLE) or title == self.title:
            return []
        self.title = title
        manual = record.get("isSessionTitleManuallySet") is True
        source = "session_start:manual" if manual else "session_start"
        payload = {"title": cut(title)}
        return [self.sessions.emit(self.session, "session/title", "system", None, payload, source)]

    def _retitle(self) -> list[Outgoing]:
        """The first line as it is now: a title set since it was read. A session with no
        message yet starts here, at the file's time."""
        out = []
        if self.session is None and self.header is not None:
            out += self._start(self.header, file_time(Path(self.path)))
        try:
            header = orjson.loads(_first_line(Path(self.path)))
        except (OSError, orjson.JSONDecodeError):
            header = None
        out += self._title(header) if isinstance(header, dict) else []
        self.tally.events += len(out)
        return out

    def finish(self) -> list[Outgoing]:
        return self._retitle()

    def idle(self) -> list[Outgoing]:
        return self._retitle() + super().idle()


class DroidImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Factory Droid sessions (~/.factory/sessions)"
    detect_order: ClassVar[int] = 40

    def default_locations(self) -> list[Path]:
        return [Path.home() / ".factory" / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        # Pi's header is "session": "session_start" with Droid's title fields, or in its folder.
        return any(
            r.get("type") == "session_start" and isinstance(r.get("id"), str)
            and (_TITLE_FIELDS & r.keys() or ".factory" in path.parts)
            for r in json_objects(head)
        )  # fmt: skip

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        """JSON Lines whose positions count from the end of the first line (position 1:
        the first line itself), since only the first line is rewritten."""
        first = _first_line(path)
        if not first.endswith(b"\n") and not complete:
            return
        if after == 0:
            yield Record(1, first.rstrip(b"\r\n"), 1)
            after, number = 1, 1
        rest = super().records(path, after=len(first) + after - 1, number=number,
                               complete=complete)  # fmt: skip
        for record in rest:
            yield Record(record.number, record.data, record.position - len(first) + 1)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return DroidConverter(path)


def _documents_read(content: object) -> object:
    """A ``document`` block (0.225: a file attached to a message) as the text block of its
    text: a text document's ``data``, a PDF's ``parsedData``; one without text stays (a
    PDF's bytes: counted)."""
    if not isinstance(content, list):
        return content
    read: list[object] = []
    for block in content:
        source = block.get("source") if isinstance(block, dict) else None
        text = None
        if isinstance(block, dict) and block.get("type") == "document" and isinstance(source, dict):
            text = source.get("data") if source.get("type") == "text" else source.get("parsedData")
        if isinstance(text, str) and text.strip():
            name = source.get("name") if isinstance(source, dict) else None
            read.append({"type": "text", "text": f"[{name}]\n{text}" if name else text})
        else:
            read.append(block)
    return read
