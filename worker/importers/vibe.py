"""Mistral Vibe: session logs under ``$VIBE_HOME/logs/session`` (default ``~/.vibe``).

Studied: ``mistral-vibe`` 1.0.0 and 1.3.5 (``core/interaction_logger.py``,
``core/agent.py``), 2.26.1 (``core/session/session_logger.py``, ``session_loader.py``,
``core/types.py``, ``core/compaction/manager.py``, ``app_server/_runtime.py`` and
``_sessions.py``) and 3.0.3 (whose ``app_server/_legacy_import.py`` reads the 2.x layout).
``session_logging.save_dir`` in Vibe's config moves the folder.

- v1 (1.x): one JSON document per session, ``<prefix>_<YYYYmmdd_HHMMSS>_<id8>.json``
  (``{"metadata", "messages"}``), rewritten whole after each turn; the system prompt is
  its first message. Times are local, without a zone. ``/compact`` saves the session and
  starts a new one (a new id and file) holding the summary as its first user message:
  nothing links the two.
- v2 (2.x): a folder per session, ``<prefix>_<YYYYmmdd_HHMMSS>_<id8>/``, with
  ``meta.json`` (``session_id``, ``parent_session_id``, ``start_time``, ``end_time`` of
  the last save, ``environment.working_directory``, ``origin_directory``, ``title``,
  ``child_sessions``) and ``messages.jsonl``, one message a line, appended (rewritten
  whole after a rewind). A sub-agent (the ``task`` tool) is a session folder under its
  parent's ``agents/``; the parent's ``child_sessions`` names the spawning
  ``tool_call_id``: the child's start cites that call. The folder holding ``meta.json``
  is one source with its sub-agents.
- 3.x (and 2.x's ``--experimental-harness``) keeps new sessions in a unified store,
  ``unified/<session>/``: ``CURRENT`` names the generation, whose ``manifest.json``
  lists the content-addressed chunks of its projection, the history the client shows
  (written by the native runtime; read from recordings of 2.26.1's and 3.0.3's, no
  published source). Its entries: ``message`` (user, assistant), ``reasoning`` as
  thinking, an ``effect`` of kind ``tool`` as a ``tool/call`` and its ``tool/result``
  (``outputText``, else the content, else the structured result, else the error;
  ``failed`` flagged; ``cancelled``, a tool the user stopped, flagged and marked
  ``interrupted``), a ``checkpoint`` of kind ``compaction`` as a ``compaction`` (the
  latest one's summary from the checkpoint's context, where Vibe keeps only that one),
  an ``effect`` of kind ``subagent`` (``agents.spawn``, called from ``run_typescript``)
  as a call that spawns the child it names (``childSessionId``): the child's folder,
  ``unified/child-<id>/`` beside its parent's, has no ``meta.json`` (its runtime state
  names its cwd and parent) and is read with its parent, its start citing that call
  (alone when no parent is beside it); others counted. A projection holding only its
  latest entries (a cursor before them) is reported, not read.

Messages (both layouts): ``user`` as ``message/user`` (harness text typed), ``injected``
user text (hooks, reminders) as ``message/context``, a ``manual_shell`` (``!``
commands) as ``command`` and ``command/output``, the ``context_boundary: compaction``
envelope as a ``compaction`` replacing what came before; ``assistant`` text,
``reasoning_content`` as thinking, ``tool_calls`` as ``tool/call`` (the arguments'
JSON); ``tool`` as its ``tool/result`` (``<tool_error>`` flagged; ``<user_cancellation>``, a tool
the user interrupted, flagged and marked ``interrupted``). The messages carry no
times: the start is ``start_time`` and every event takes ``end_time`` (the last save).
The cwd is where the session began (``origin_directory``), else its working directory.
Skipped and counted: the ``system`` prompt, image attachments (``images``), other roles.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import (
    Problem,
    Tally,
    as_text,
    cut,
    iso_time,
    json_value,
    load_json_line,
    safe_id,
)
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    field_of,
    from_millis,
    parents_first,
    read_document,
    said,
    tool_pair,
)
from worker.importers.whole_sources import ReadingImporter, sniffed

NAME: Final = "vibe"
PREFIX: Final = "vibe-"
META: Final = "meta.json"
MESSAGES: Final = "messages.jsonl"
AGENTS: Final = "agents"  # a v2 session's sub-agent sessions
UNIFIED_CURRENT: Final = "CURRENT"  # the unified store's pointer to its generation
# An effect's states once it has run (any other: it runs, its result waits).
_SUMMARY: Final = re.compile(r"<compaction_summary>(.*?)</compaction_summary>", re.S)
_SETTLED: Final = frozenset({"completed", "failed", "cancelled", "rejected", "denied"})
_ERROR_TAG: Final = "<tool_error>"
_CANCELLED_TAG: Final = "<user_cancellation>"


def vibe_home() -> Path:
    moved = os.environ.get("VIBE_HOME")
    return Path(moved).expanduser() if moved else Path.home() / ".vibe"


def _local(raw: object) -> str | None:
    """Vibe 1.x writes ``datetime.now()``: local time without a zone."""
    return iso_time(raw, assume=datetime.now().astimezone().tzinfo or UTC)


def read_v1(path: Path) -> SourceReading:
    """A 1.x session document; half written, it is reported and read on the next change."""
    reading = SourceReading()
    read = read_document(path, reading)
    if read is None:
        return reading
    document = read.value
    metadata = field_of(document, "metadata") if isinstance(document, dict) else {}
    messages = document.get("messages") if isinstance(document, dict) else None
    if not metadata or not isinstance(messages, list):
        reading.problems.append(Problem(str(path), 0, "not a Vibe session: no metadata"))
        return reading
    session = _session(metadata, path.stem)
    when = _local(metadata.get("end_time"))
    for index, message in enumerate(messages):
        session.items.extend(_message(f"m{index}", message, when, session.skipped))
    reading.sessions.append(session)
    return reading


def read_v2(folder: Path) -> SourceReading:
    """A 2.x session folder and the sub-agent sessions under its ``agents/``."""
    reading = SourceReading()
    _read_folder(folder, reading)
    reading.sessions = parents_first(reading.sessions)
    return reading


def _read_folder(folder: Path, reading: SourceReading) -> None:
    document = read_document(folder / META, reading)
    if document is None:
        return
    metadata = document.value
    if not isinstance(metadata, dict):
        reading.problems.append(Problem(str(folder / META), 0, "not a Vibe session"))
        return
    session = _session(metadata, folder.name)
    when = iso_time(metadata.get("end_time")) or session.time
    links = [link for link in metadata.get("child_sessions") or [] if isinstance(link, dict)]
    spawned = {str(link.get("tool_call_id")): safe_id(str(link.get("session_id")), prefix=PREFIX)
               for link in links}  # fmt: skip
    read = Tally()  # where a line that is not JSON is reported
    for number, line in enumerate(_whole_lines(folder / MESSAGES), start=1):
        message = load_json_line(line, number, str(folder / MESSAGES), read)
        if message is not None:
            ref = str(message.get("message_id") or f"m{number}")
            session.items.extend(_message(ref, message, when, session.skipped))
    reading.problems.extend(read.problems)
    for item in session.items:
        if item.type == "tool/call" and item.call in spawned:
            item.spawns = spawned[item.call]
    reading.sessions.append(session)
    for child in sorted((folder / AGENTS).glob(f"*/{META}")):
        _read_folder(child.parent, reading)


def _whole_lines(path: Path) -> list[bytes]:
    """The file's complete lines (a last line without its newline is being written)."""
    try:
        return path.read_bytes().split(b"\n")[:-1]
    except OSError:
        return []  # no message saved yet


def _session(metadata: dict[str, Any], fallback_id: str) -> SourceSession:
    environment = field_of(metadata, "environment")
    cwd = metadata.get("origin_directory") or environment.get("working_directory")
    parent, title = metadata.get("parent_session_id"), metadata.get("title")
    start = metadata.get("start_time")
    extra = {
        k: metadata[k] for k in ("git_branch", "git_commit") if isinstance(metadata.get(k), str)
    }
    return SourceSession(
        session_id=safe_id(str(metadata.get("session_id") or fallback_id), prefix=PREFIX),
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        time=_local(start),
        title=title if isinstance(title, str) and title.strip() else None,
        parent=safe_id(parent, prefix=PREFIX) if isinstance(parent, str) and parent else None,
        extra=extra,
    )


def _message(ref: str, message: object, when: str | None, skipped: Counter[str]) -> list[Item]:
    if not isinstance(message, dict):
        skipped["message:not-an-object"] += 1
        return []
    role, content = message.get("role"), message.get("content")
    text = content if isinstance(content, str) else as_text(content)
    if message.get("images"):
        skipped["message:images"] += 1
    if role == "user":
        return _user(ref, message, text, when)
    if role == "assistant":
        items: list[Item] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning.strip():
            items.append(Item(f"{ref}-think", "message/assistant", "assistant",
                              {"thinking": cut(reasoning)}, "reasoning_content", when))  # fmt: skip
        if text.strip():
            items.append(said(ref, "assistant", text, when, "assistant"))
        for n, call in enumerate(message.get("tool_calls") or []):
            function = field_of(call, "function") if isinstance(call, dict) else {}
            raw_id = call.get("id") if isinstance(call, dict) else None
            call_id = str(raw_id or f"{ref}-{n}")
            payload = {"tool": function.get("name"), "input": json_value(function.get("arguments"))}
            items.append(Item(f"{ref}-call{n}", "tool/call", "assistant", payload, "tool_call",
                              when, call=call_id))  # fmt: skip
        return items
    if role == "tool":
        result: dict[str, Any] = {"output": cut(text)}
        if text.lstrip().startswith(_ERROR_TAG):
            result["is_error"] = True
        elif text.lstrip().startswith(_CANCELLED_TAG):  # the user interrupted the tool
            result |= {"is_error": True, "interrupted": True}
        if field_of(message, "tool_result").get("cancelled") is True:
            result["cancelled"] = True
        return [Item(ref, "tool/result", "tool", result, "tool", when,
                     result_of=str(message.get("tool_call_id")))]  # fmt: skip
    skipped[f"message:{role}"] += 1
    return []


def _user(ref: str, message: dict[str, Any], text: str, when: str | None) -> list[Item]:
    if message.get("context_boundary") == "compaction":
        return [Item(ref, "compaction", "system", {"summary": cut(text)}, "compaction", when)]
    shell = field_of(message, "manual_shell")
    if shell:
        output = shell.get("output_text") or "\n".join(
            str(shell[k]) for k in ("stdout", "stderr") if shell.get(k)
        )
        ran = {"text": as_text(shell.get("command"))}
        out = {"text": as_text(output), "exit_code": shell.get("exit_code")}
        return [
            Item(f"{ref}-command", "command", "user", ran, "manual_shell", when),
            Item(f"{ref}-output", "command/output", "tool", out, "manual_shell", when),
        ]
    if message.get("injected") is True:
        return [Item(ref, "message/context", "system", {"text": cut(text)}, "injected", when)]
    return [said(ref, "user", text, when, "user")] if text.strip() else []


def _is_session(folder: Path) -> bool:
    """A 2.x session folder: its ``meta.json`` names a ``session_id`` (other agents keep
    a ``meta.json`` of their own: Kimi's sub-agents; 3.x's unified store one too)."""
    try:
        return b'"session_id"' in (folder / META).read_bytes() and not _is_unified(folder)
    except OSError:
        return False


def _is_unified(folder: Path) -> bool:
    """A session of the unified store (3.x, and 2.x's ``--experimental-harness``):
    ``unified/<session>/`` with ``CURRENT``, ``meta.json``, ``generations/``, ``journal/``,
    ``chunks/``; a child (3.x, ``unified/child-<id>/``) has no ``meta.json``."""
    return (folder / UNIFIED_CURRENT).is_file() and (
        (folder / META).is_file() or (folder / "generations").is_dir()
    )


def _in_unified(path: Path) -> bool:
    return any(_is_unified(folder) for folder in list(path.parents)[:3])


def read_unified(folder: Path) -> SourceReading:
    """A unified-store session: ``CURRENT`` names the generation, whose ``manifest.json``
    lists the content-addressed chunks of its projection (the history the client shows:
    ``message``, ``reasoning``, ``effect`` and ``checkpoint`` entries). Read only when the
    projection holds the whole history (its cursor has nothing before it); else reported.
    The children its ``agents.spawn`` effects name (3.x: ``child-<id>/`` folders beside
    it) are read with it."""
    reading = SourceReading()
    children: list[str] = []
    session = _read_store(folder, reading, None, children)
    if session is None:
        return reading
    reading.sessions.append(session)
    for name in children:
        beside = folder.parent / name
        if _is_unified(beside):
            child = _read_store(beside, reading, session, [])
            if child is not None:
                reading.sessions.append(child)
    return reading


def _read_store(
    folder: Path, reading: SourceReading, parent: SourceSession | None, children: list[str]
) -> SourceSession | None:
    """One unified-store session folder; None, with the problem reported, when it cannot
    be read now. A child has no ``meta.json``: its runtime state names its cwd and
    parent, its projection its start."""
    try:
        current = orjson.loads((folder / UNIFIED_CURRENT).read_bytes())
        generation = folder / "generations" / str(current["generation"])
        manifest = orjson.loads((generation / "manifest.json").read_bytes())
        state = orjson.loads((generation / "projection-state.json").read_bytes())
        entries: list[object] = []
        for chunk in manifest["projection_state"]["chunks"]:
            value = orjson.loads((folder / "chunks" / f"{chunk}.json").read_bytes())
            entries.extend(value if isinstance(value, list) else [value])
        if (folder / META).is_file():
            metadata = orjson.loads((folder / META).read_bytes())
        else:
            metadata = _child_metadata(generation, state, folder.name)
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        # Written by renames as the session runs: read again on its next change.
        what = f"a Mistral Vibe unified-store session not readable now: {exc!r}"
        reading.problems.append(Problem(str(folder), 0, what))
        return None
    history = field_of(field_of(state, "snapshot"), "history")
    if field_of(history, "cursor").get("before") is not None:
        what = ("a Mistral Vibe unified-store session whose projection holds only its latest"
                " entries: not read")  # fmt: skip
        reading.problems.append(Problem(str(folder), 0, what))
        return None
    session = _session(metadata, folder.name)
    if parent is not None:
        session.parent = parent.session_id
        session.cwd = session.cwd or parent.cwd
    # The checkpoint's context holds the latest compaction's summary only.
    latest = max((n for n, e in enumerate(entries) if _is_compaction(e)), default=-1)
    summary = _latest_summary(folder, manifest) if latest >= 0 else None
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            session.skipped["entry:not-an-object"] += 1
        elif n == latest:
            session.items.append(_compaction(entry, summary))
        elif _is_compaction(entry):
            session.items.append(_compaction(entry, None))
        else:
            session.items.extend(_entry(entry, n == len(entries) - 1, session.skipped, children))
    return session


def _child_metadata(generation: Path, state: dict[str, Any], name: str) -> dict[str, Any]:
    """A child's ``meta.json`` fields, from its runtime state (``session_metadata``: cwd,
    parent) and its projection (its id and start)."""
    runtime = orjson.loads((generation / "runtime-state.json").read_bytes())
    facts = field_of(runtime, "session_metadata")
    shown = field_of(field_of(state, "snapshot"), "session")
    return {
        "session_id": shown.get("id") or name,
        "parent_session_id": facts.get("parent_session_id") or shown.get("parentSessionId"),
        "origin_directory": facts.get("cwd"),
        "start_time": from_millis(shown.get("createdAt")),
    }


def _unified_parent(folder: Path) -> Path | None:
    """A child folder's parent beside it (it is read with that one), else None."""
    if (folder / META).is_file():
        return None
    try:
        current = orjson.loads((folder / UNIFIED_CURRENT).read_bytes())
        generation = folder / "generations" / str(current["generation"])
        state = orjson.loads((generation / "projection-state.json").read_bytes())
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return None
    parent = field_of(field_of(state, "snapshot"), "session").get("parentSessionId")
    beside = folder.parent / parent if isinstance(parent, str) and parent else None
    return beside if beside is not None and _is_unified(beside) else None


def _is_compaction(entry: object) -> bool:
    return isinstance(entry, dict) and (entry.get("type"), entry.get("kind")) == (
        "checkpoint",
        "compaction",
    )


def _latest_summary(folder: Path, manifest: dict[str, Any]) -> str | None:
    """The summary the model was given after the latest compaction: the checkpoint's
    context (the model's messages now) opens with Vibe's messages around it, the summary
    inside ``<compaction_summary>``. None when there is none (another checkpoint layout,
    a chunk not there)."""
    chunks = field_of(manifest, "checkpoint").get("chunks")
    for chunk in chunks if isinstance(chunks, list) else []:
        try:
            value = orjson.loads((folder / "chunks" / f"{chunk}.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None  # the summary is then Vibe's own note; the history is read whole
        for stored in value if isinstance(value, list) else [value]:
            if not isinstance(stored, dict) or stored.get("source") != "injection":
                continue
            message = field_of(stored, "message")
            if message.get("role") != "user":
                continue
            found = _SUMMARY.search(as_text(message.get("content")))
            if found:
                return found.group(1).strip()
    return None


def _compaction(entry: dict[str, Any], summary: str | None) -> Item:
    """A ``checkpoint`` entry of kind ``compaction`` (3.x): the context was compacted at
    this point of the history; it replaces what came before. Only the latest summary is
    kept by Vibe: an earlier one is named by Vibe's own message ("Context compacted")."""
    details = field_of(entry, "details")
    trigger = {"automatic": "auto", "manual": "manual"}.get(str(details.get("trigger")))
    payload: dict[str, Any] = {"summary": cut(summary or str(entry.get("message") or ""))}
    if trigger:
        payload["trigger"] = trigger
    item = Item(str(entry.get("id")), "compaction", "system", payload, "checkpoint:compaction",
                from_millis(entry.get("createdAt")))  # fmt: skip
    item.complete = entry.get("generationStatus", "completed") == "completed"
    return item


def _entry(
    entry: dict[str, Any], last: bool, skipped: Counter[str], children: list[str]
) -> list[Item]:
    """One projection entry: a message, reasoning, or an effect (a tool's run; its result
    waits while it runs, unless the history went on past it)."""
    kind, ref = entry.get("type"), str(entry.get("id"))
    time = from_millis(entry.get("createdAt"))
    done = entry.get("generationStatus", "completed") == "completed"
    if kind == "message" and entry.get("role") in ("user", "assistant"):
        text = as_text(entry.get("content"))
        if not text.strip():
            return []
        item = said(ref, str(entry["role"]), text, time, f"message:{entry['role']}")
        item.complete = done
        return [item]
    if kind == "reasoning" and isinstance(entry.get("text"), str) and entry["text"].strip():
        thought = {"thinking": cut(entry["text"])}
        return [Item(ref, "message/assistant", "assistant", thought, "reasoning", time,
                     complete=done)]  # fmt: skip
    detail = field_of(entry, "detail")
    child = detail.get("childSessionId")
    if kind == "effect" and detail.get("kind") == "subagent" and isinstance(child, str) and child:
        # A child spawned (3.x, ``agents.spawn`` from run_typescript): its folder is beside
        # this one; it answers later, by a notification the projection does not show.
        children.append(child)
        state = field_of(entry, "state")
        output = field_of(state, "output")
        status = state.get("status")
        call, answer = tool_pair(
            ref, ref, detail.get("toolName") or entry.get("title"), detail.get("input"), time,
            "effect", output=state.get("outputText") or output.get("structured_content"),
            answered=status in _SETTLED or not last, error=status == "failed",
        )  # fmt: skip
        call.spawns = safe_id(child, prefix=PREFIX)
        return [call, answer]
    if kind == "effect" and detail.get("kind") == "tool":
        state = field_of(entry, "state")
        output = field_of(state, "output")
        error = field_of(state, "error") or field_of(output, "error")
        # What the model was given: the text, else the content blocks, else the
        # structured result, else the error.
        shown = next((value for value in (state.get("outputText"), output.get("content"),
                                          output.get("structured_content"), error.get("message"))
                      if value), None)  # fmt: skip
        status = state.get("status")
        # A tool the user stopped (Ctrl-C): "cancelled", the reason instead of an output.
        cancelled = status == "cancelled"
        pair = tool_pair(
            ref, ref, detail.get("toolName") or entry.get("title"), detail.get("input"), time,
            "effect", output=shown or (state.get("reason") if cancelled else None),
            answered=status in _SETTLED or not last, error=status == "failed" or cancelled,
        )  # fmt: skip
        if cancelled:
            pair[-1].payload["interrupted"] = True
        return pair
    skipped[f"entry:{kind}" if kind != "effect" else f"entry:effect:{detail.get('kind')}"] += 1
    return []


def _is_child(folder: Path) -> bool:
    """A sub-agent's folder: under ``agents/`` of a session folder (read with it)."""
    return folder.parent.name == AGENTS and _is_session(folder.parent.parent)


class VibeImporter(ReadingImporter):
    name: ClassVar[str] = "vibe"
    help: ClassVar[str] = "Mistral Vibe sessions: 1.x, 2.x and unified-store logs ($VIBE_HOME/logs)"
    env_vars: ClassVar[tuple[str, ...]] = ("VIBE_HOME",)
    detect_order: ClassVar[int] = 59
    skipped_by_design: ClassVar[Mapping[str, str]] = {
        "message:system": "the system prompt",
        "message:images": "image attachments (the message's text is imported)",
    }

    def default_locations(self) -> list[Path]:
        return [vibe_home() / "logs" / "session"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.is_dir():
            return (_is_session(path) and not _is_child(path)) or _is_unified(path)
        if _in_unified(path):
            return True  # the unified store's journal and chunks: Vibe's, not a source
        if path.name in (META, MESSAGES) and _is_session(path.parent):
            return True  # part of a session folder: Vibe's, but not a source (accepts)
        text = b"".join(head)
        return (
            path.suffix == ".json"
            and path.name != META
            and all(key in text for key in (b'"metadata"', b'"session_id"', b'"username"'))
        )

    def accepts(self, path: Path) -> bool:
        """A 2.x folder's own files are read with the folder (its source), not alone:
        ``--format auto`` over a tree finds ``messages.jsonl`` among every JSON Lines
        file, and counts it as not a source."""
        return path.is_dir() or (path.name not in (META, MESSAGES) and not _in_unified(path))

    def sources(self, root: Path) -> Iterator[Path]:
        if root.is_file() or _is_session(root) or _is_unified(root):
            yield root
            return
        for meta in root.rglob(META):
            folder = meta.parent
            if _is_unified(folder) or (_is_session(folder) and not _is_child(folder)):
                yield folder
        for current in root.rglob(UNIFIED_CURRENT):
            folder = current.parent
            # A child is read with its parent beside it; without one, alone.
            if not (folder / META).exists() and _is_unified(folder) and not _unified_parent(folder):
                yield folder
        for path in root.rglob("*.json"):
            if path.name != META and not (path.parent / META).exists() and not _in_unified(
                path
            ) and sniffed(self, path):  # fmt: skip
                yield path

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        if _is_unified(path):
            return read_unified(path)
        return read_v2(path) if path.is_dir() else read_v1(path)
