"""nanobot (PyPI ``nanobot-ai``, HKUDS): one JSON Lines file per chat key (``cli:direct`` for
the CLI, ``<channel>:<chat id>`` for the chat channels), rewritten whole after each turn:
``~/.nanobot/sessions/<workspace id>/<base64url of the key>.jsonl`` (the folder of the
config file, ``-c``, holds ``sessions``; ``.workspace`` beside the files names the
workspace folder; older releases wrote ``<workspace>/sessions/<key with _>.jsonl``, by
default in ``~/.nanobot/workspace``, or ``~/.nanobot/sessions/<key with _>.jsonl``). A
``<same>.checkpoint.json`` beside a file holds the turn in flight (the model's message,
its pending and finished calls) until the turn is saved.

Read from the writer in ``nanobot-ai`` 0.3.5 (``session/manager.py``, ``session/recovery.py``,
``agent/loop.py`` ``_save_turn``, ``agent/subagent.py``) and recorded from it:

- the first line (``_type: metadata``): the key, ``created_at``, the ``metadata`` (a
  ``title`` the web interface sets); a ``provider_state`` line (the provider's own replay
  state) is counted;
- the messages (OpenAI chat shapes, each with a local ``timestamp``): ``user`` as
  ``message/user`` (harness text typed; text parts of a list), ``assistant``
  ``reasoning_content`` as thinking, its text, each ``tool_calls`` entry as a ``tool/call``;
  ``tool`` as the ``tool/result`` of ``tool_call_id`` (an error when it starts with
  ``Error`` or ``exec`` reports a non-zero ``Exit code``); a sub-agent's report
  (``injected_event: subagent_result``: the sub-agent runs in memory, only its result is
  written) as ``message/context`` citing the ``spawn`` call that started it (its
  ``subagent_task_id`` is the id the call's result names: ``Subagent [<label>] started
  (id: <task id>)``, ``agent/subagent.py``); a scheduled job's prompt (nanobot's, in the
  user's place) as ``message/context``;
- the session is the conversation: ``nanobot-<file name>-<first message's time>`` (``/new``
  empties the file and starts another);
- a checkpoint newer than the file, of its messages: the model's text and thinking now; its
  calls and results come with the saved turn (``checkpoint:tool_call``, counted); an
  interrupted turn's checkpoint is restored into the file when the session is next used
  (its unfinished calls answered "Task interrupted before this tool finished.": marked
  ``interrupted``).

Skipped and counted: the hidden marker a working-memory summary inserts
(``message:hidden``: the transcript stays whole; the summary itself, kept in
``metadata._last_summary``, is counted), images and other parts, other roles.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from worker.importers.base import Converter, Problem, as_text, cut, iso_time, safe_id
from worker.importers.plugin import ConvertOptions
from worker.importers.source_reading import (
    Item,
    ReadingConverter,
    SessionCache,
    SourceReading,
    SourceSession,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed

NAME: Final = "nanobot"
PREFIX: Final = "nanobot-"
CHECKPOINT: Final = ".checkpoint.json"
HIDDEN: Final = "_hidden_history"
SUBAGENT_RESULT: Final = "subagent_result"
# What nanobot answers, on restoring an interrupted turn, for a call that did not finish.
INTERRUPTED: Final = "Error: Task interrupted before this tool finished."
# A scheduled job's turn: nanobot's prompt in the user's place (0.3.5's cron_reminder.md;
# older releases' "[Scheduled Task]" notice).
CRON_PROMPTS: Final = (
    "The scheduled time has arrived. Execute this scheduled cron job now",
    "[Scheduled Task] Timer finished.",
)
_EXIT: Final = re.compile(r"\n\s*Exit code: (-?\d+)\s*\Z")
# The ``spawn`` tool's result (0.3.5's ``SubagentManager.spawn``): the sub-agent's task id.
_SPAWNED: Final = re.compile(r"^Subagent \[.*?\] started \(id: ([^)\s]+)\)")


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_session(path: Path, assume_tz: tzinfo | None = None) -> SourceReading:
    """One session file (and its checkpoint) as they are now."""
    reading = SourceReading()
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        reading.problems.append(Problem(str(path), 0, f"not readable: {exc}"))
        return reading
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            reading.problems.append(Problem(str(path), number, f"not JSON: {exc}"))
            return reading  # rewritten whole: read again on the next change
        records.append(_object(record))
    if not records or records[0].get("_type") != "metadata":
        reading.problems.append(Problem(str(path), 1, "not a nanobot session"))
        return reading
    zone = assume_tz or datetime.now().astimezone().tzinfo or UTC
    session = _NanobotReader(path, records, zone).session
    if session is not None:
        reading.sessions.append(session)
    return reading


def _workspace(path: Path) -> str | None:
    """The ``.workspace`` marker's folder; older releases kept the sessions in
    ``<workspace>/sessions`` (the global ``~/.nanobot/sessions`` names none)."""
    try:
        text = (path.parent / ".workspace").read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    if text:
        return text
    if path.parent.name == "sessions" and path.parent.parent.name != ".nanobot":
        return str(path.parent.parent)
    return None


class _NanobotReader:
    def __init__(self, path: Path, records: list[dict[str, Any]], zone: tzinfo) -> None:
        self.path, self.zone = path, zone
        header = records[0]
        messages = [r for r in records[1:] if "_type" not in r]
        self.skipped_kinds = [f"record:{r['_type']}" for r in records[1:] if "_type" in r]
        first = messages[0].get("timestamp") if messages else None
        if not isinstance(first, str):
            self.session: SourceSession | None = None  # nothing said yet
            return
        digits = re.sub(r"\D", "", first)
        stem = path.name.removesuffix(".jsonl")
        metadata = _object(header.get("metadata"))
        title = metadata.get("title")
        self.session = SourceSession(
            session_id=safe_id(f"{stem}-{digits}", prefix=PREFIX),
            cwd=_workspace(path),
            time=self._time(first),
            title=title.strip() if isinstance(title, str) and title.strip() else None,
        )
        self.sid, self.skipped = self.session.session_id, self.session.skipped
        for kind in self.skipped_kinds:
            self.skipped[kind] += 1
        if isinstance(metadata.get("_last_summary"), dict):
            self.skipped["metadata:_last_summary"] += 1
        self.tools: dict[str, object] = {}
        self.tasks: dict[str, str] = {}  # a sub-agent's task id -> the spawn call's key
        self.time = self.session.time
        items = self.session.items
        for index, message in enumerate(messages):
            stamp = self._time(message.get("timestamp"))
            self.time = stamp or self.time
            items.extend(self._message(f"m{index}", message))
        items.extend(self._checkpoint(len(messages)))

    def _time(self, raw: object) -> str | None:
        return iso_time(raw, assume=self.zone)

    def _text(self, content: object, where: str) -> str:
        if isinstance(content, list):
            for part in content:
                kind = _object(part).get("type")
                if kind != "text":
                    self.skipped[f"{where}:{kind}"] += 1
            return as_text([p for p in content if _object(p).get("type") == "text"])
        return content if isinstance(content, str) else ""

    def _message(self, ref: str, message: dict[str, Any]) -> list[Item]:
        role = message.get("role")
        if message.get(HIDDEN):
            self.skipped["message:hidden"] += 1
            return []
        if role == "user":
            text = self._text(message.get("content"), "user")
            if not text.strip():
                self.skipped["message:user:empty"] += 1
                return []
            if text.startswith(CRON_PROMPTS):
                return [Item(ref, "message/context", "system", {"text": cut(text)}, "user:cron",
                             self.time)]  # fmt: skip
            type_ = harness.harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            return [Item(ref, type_, surface, {"text": cut(text)}, "user", self.time)]
        if role == "assistant":
            return self._assistant(ref, message)
        if role == "tool":
            return [self._result(ref, message)]
        self.skipped[f"message:{role}"] += 1
        return []

    def _assistant(self, ref: str, message: dict[str, Any], *, calls: bool = True) -> list[Item]:
        items: list[Item] = []
        text = self._text(message.get("content"), "assistant")
        if message.get("injected_event") == SUBAGENT_RESULT:
            # A sub-agent's report, rendered by nanobot for the model: not the model's words.
            payload = {"text": cut(text)}
            task = message.get("subagent_task_id")
            spawn = self.tasks.get(task) if isinstance(task, str) else None
            return [Item(ref, "message/context", "system", payload, "assistant:subagent_result",
                         self.time, cites_call=spawn)]  # fmt: skip
        thought = message.get("reasoning_content")
        if isinstance(thought, str) and thought.strip():
            thinking = {"thinking": cut(thought)}
            items.append(Item(f"{ref}-thinking", "message/assistant", "assistant", thinking,
                              "assistant:reasoning", self.time))  # fmt: skip
        if text.strip():
            items.append(Item(f"{ref}-text", "message/assistant", "assistant",
                              {"text": cut(text)}, "assistant", self.time))  # fmt: skip
        tool_calls = message.get("tool_calls")
        for index, call in enumerate(tool_calls if isinstance(tool_calls, list) else []):
            if not calls:
                self.skipped["checkpoint:tool_call"] += 1
                continue
            items.append(self._call(f"{ref}-call-{index}", _object(call)))
        if not items and calls:
            self.skipped["message:assistant:empty"] += 1
        return items

    def _call(self, ref: str, call: dict[str, Any]) -> Item:
        function = _object(call.get("function"))
        arguments = function.get("arguments")
        try:
            parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        except orjson.JSONDecodeError:
            parsed = arguments
        call_id = call.get("id")
        self.tools[str(call_id)] = function.get("name")
        payload: dict[str, Any] = {"tool": function.get("name"), "input": parsed}
        if isinstance(call_id, str):
            payload["call_id"] = call_id
        return Item(ref, "tool/call", "assistant", payload, "assistant:tool_call", self.time,
                    call=f"{self.sid}:{call_id or ref}")  # fmt: skip

    def _result(self, ref: str, message: dict[str, Any]) -> Item:
        call_id = message.get("tool_call_id")
        name = message.get("name") or self.tools.get(str(call_id))
        text = self._text(message.get("content"), "tool")
        payload: dict[str, Any] = {"tool": name, "output": cut(text)}
        if isinstance(call_id, str):
            payload["call_id"] = call_id
        code = _EXIT.search(text) if name == "exec" else None
        if code is not None:
            payload["exit_code"] = int(code.group(1))
        if text.startswith("Error") or (code is not None and code.group(1) != "0"):
            payload["is_error"] = True
        if text == INTERRUPTED:
            payload["interrupted"] = True
        cites = f"{self.sid}:{call_id}" if isinstance(call_id, str) and call_id else None
        spawned = _SPAWNED.match(text) if name == "spawn" and cites else None
        if spawned is not None and cites is not None:
            self.tasks[spawned.group(1)] = cites
        return Item(ref, "tool/result", "tool", payload, "tool", self.time, result_of=cites)

    def _checkpoint(self, count: int) -> list[Item]:
        """The turn in flight: the model's words now (the same leading items the saved turn
        gives), its calls and results once the turn is saved."""
        path = self.path.with_name(self.path.name.removesuffix(".jsonl") + CHECKPOINT)
        try:
            if path.stat().st_mtime_ns < self.path.stat().st_mtime_ns:
                return []  # nanobot drops a checkpoint older than its file
            data = _object(orjson.loads(path.read_bytes()))
        except (OSError, orjson.JSONDecodeError):
            return []
        checkpoint = _object(data.get("checkpoint"))
        if data.get("base_message_count") != count or not checkpoint:
            return []
        finished = checkpoint.get("completed_tool_results")
        if isinstance(finished, list) and finished:
            self.skipped["checkpoint:tool_result"] += len(finished)
        assistant = _object(checkpoint.get("assistant_message"))
        return self._assistant(f"m{count}", assistant, calls=False) if assistant else []


class NanobotImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "nanobot sessions, <workspace id>/<key>.jsonl (~/.nanobot/sessions)"
    detect_order: ClassVar[int] = 59

    def default_locations(self) -> list[Path]:
        # Older releases kept them in the workspace, by default ~/.nanobot/workspace.
        home = Path.home() / ".nanobot"
        return [home / "sessions", home / "workspace" / "sessions"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``.jsonl`` whose first line is nanobot's metadata record (``json.dumps``'s
        spacing; the key first)."""
        first = head[0] if head else b""
        return path.suffix == ".jsonl" and first.startswith(b'{"_type": "metadata", "key": ')

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(root, "*.jsonl", lambda path: sniffed(self, path))

    def last_change(self, path: Path) -> float:
        checkpoint = path.with_name(path.name.removesuffix(".jsonl") + CHECKPOINT)
        try:
            return max(path.stat().st_mtime, checkpoint.stat().st_mtime)
        except OSError:
            return path.stat().st_mtime

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_session(path)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        # The messages' times have no zone: read in --timezone's when given.
        zone = options.assume_tz
        return ReadingConverter(self.name, lambda: read_session(path, zone), idle_s=options.idle_s)
