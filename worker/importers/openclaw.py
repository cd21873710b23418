"""OpenClaw: each agent's SQLite store, ``$OPENCLAW_STATE_DIR/agents/<agent>/agent/
openclaw-agent.sqlite`` (default ``~/.openclaw``), and the older per-agent transcripts,
``agents/<agent>/sessions/<sessionId>.jsonl`` with their ``sessions.json``.

Read from the writer in the ``openclaw`` package 2026.9.6 (``session-manager``,
``session-accessor.sqlite-transcript-store``, ``transcript-payload``, the store's schema,
and the doctor's reader of the older files). OpenClaw's transcript is Pi's session format
(``pi.py``; header version 4): a ``session`` header, then entries in a tree by
``id``/``parentId``. What differs, read here:

- the store: ``transcript_events`` rows (``session_id``, ``seq``, the entry as
  ``event_json``, or zstd-compressed in ``event_zstd`` when it is 1 KiB or more and the
  agent's Node has zstd) read in row order, the row id being the position ``watch``
  keeps; ``session_windows`` says who a session is: ``spawned_by`` (the parent's session
  key: a sub-agent run by ``sessions_spawn``), ``previous_session_id`` and ``reason``
  (a reset, rollover, fork, rewind, compaction window continuing another), the title
  (``session_nodes.label``, else the ``display_name`` OpenClaw generates);
- the header's ``parentSession`` is a session id (Pi names a file);
- ``leaf`` control entries move the branch being continued: the entry after one hangs
  logically from its ``targetId`` although it is written after the physical tail
  (``appendParentId``), so a rewind forks as in Pi; ``reset`` entries (a fresh history
  window) and ``leaf`` entries are counted, not published;
- a sub-agent's start cites its parent's oldest ``sessions_spawn`` call still waiting for
  its result when the child's transcript began (the child is created while the call
  runs); in the older files the parent comes from ``sessions.json``'s ``spawnedBy``.

A tool result whose call the transcript never wrote: OpenClaw's session guard
(``installSessionToolResultGuard``) sanitizes each assistant message before writing it
(``sanitizeToolCallInputs``): a call naming a tool the session does not have, or with no
input or id, is dropped, and a message left empty is not written at all; but the agent
loop had already answered the call (``Tool <name> not found``, or its arguments' error,
without running it), and results are written as they come. Seen in real transcripts
(``Tool google:search not found``: a local model calling tools it was never given). Such
a result is a ``tool/result`` keeping its ``call_id`` and tool name, citing nothing (the
import summary counts it among the "tool results citing no call"), and, being an error
the loop gave before running anything, it is marked ``not_run``.

A compressed row is decoded when this Python has zstd (``worker.importers.zstd``);
otherwise it is reported as a problem naming the extra to install, and its entry waits.
A transcript rewrite writes the entries it keeps again under new row ids: those already
read are counted (``entry:rewritten``); when its rows take back the row ids of the rows it
deleted (the end of the table), ``watch``, which keeps the last row id read, misses them.
Sessions moved to cold storage (opt-in) are counted (``session:cold-archived``), not read.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers import zstd
from worker.importers.base import (
    Converter,
    Outgoing,
    Problem,
    Tally,
    TitledAtEnd,
    load_json_line,
    safe_id,
)
from worker.importers.pi import PiConverter
from worker.importers.plugin import (
    ConvertOptions,
    Importer,
    Record,
    UnreadableSource,
    json_objects,
)
from worker.importers.readonly_db import read_only, tables

NAME: Final = "openclaw"
PREFIX: Final = "openclaw-"
DATABASE: Final = "openclaw-agent.sqlite"
SPAWN_TOOL: Final = "sessions_spawn"
# Tool search (on by default in 2026.9.6) offers the deferred tools, sessions_spawn among
# them, through this tool: its ``id`` argument names the tool run (``sessions_spawn``, or a
# search result's id such as ``openclaw:core:sessions_spawn``).
SEARCH_CALL: Final = "tool_call"
# The custom message OpenClaw writes for a tool run through ``tool_call`` (its input and
# result): the outer call and its result already carry both.
NESTED_TOOL: Final = "openclaw.nested-tool.v1"
# The child's session key in a spawn's result (``{"status": "accepted", "childSessionKey":
# ...}``; JSON inside JSON when the spawn ran through ``tool_call``).
_CHILD_KEY: Final = re.compile(r'childSessionKey\\*"\s*:\s*\\*"([^"\\]+)')
# Rows read per transaction: a store holds every session of an agent.
BATCH: Final = 500
# Files beside the transcripts that are not sessions: a transcript's copy kept at a
# compaction (``<id>.checkpoint.<uuid>.jsonl``) and runtime trajectories.
_NOT_TRANSCRIPTS: Final = (".checkpoint.", ".trajectory.jsonl")


class OpenClawConverter(TitledAtEnd, PiConverter):
    """One OpenClaw transcript: Pi's entries, OpenClaw's ids, parents and branch moves."""

    prefix: ClassVar[str] = PREFIX

    def __init__(
        self, path: Path, *, parent: str | None = None, cites: list[tuple[str, int]] | None = None,
        title: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(path, NAME)
        self.parent = parent  # from the store or sessions.json (a sub-agent's parent)
        self.cites = cites
        self.title = title  # the store's title: published just before the session's end
        self.leaf_target: dict[str, str | None] = {}  # leaf control id -> the entry it names
        # After a leaf moved the branch: (the physical tail, the entry to hang from).
        self.moved: tuple[str | None, str | None] | None = None

    def _parent_of(self, header: dict[str, Any]) -> str | None:
        if self.parent is not None:
            return self.parent
        raw = header.get("parentSession")
        return safe_id(raw, prefix=PREFIX) if isinstance(raw, str) and raw else None

    def _start_cites(self) -> list[tuple[str, int]] | None:
        return self.cites

    def _unwritten_call(self, message: dict[str, Any]) -> dict[str, Any]:
        # The guard dropped the call before writing it; the loop's error result for it
        # (an unknown tool, arguments it could not use) means the tool never ran.
        return {"not_run": True} if message.get("isError") is True else {}

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        entry_id = record.get("id")
        if isinstance(entry_id, str) and (entry_id in self.entry_session or
                                          entry_id in self.leaf_target):  # fmt: skip
            # A transcript rewrite deletes the rows from a point and writes them again:
            # the entries kept come back under new row ids, already published.
            self.tally.skip("entry:rewritten")
            return []
        if record.get("type") == "leaf":
            target = record.get("targetId") if isinstance(record.get("targetId"), str) else None
            tail = record.get("appendParentId", target)
            if isinstance(entry_id, str):
                self.leaf_target[entry_id] = target
            self.moved = (tail if isinstance(tail, str) else None, target)
            self.tally.skip("record:leaf")
            return []
        parent = record.get("parentId")
        if isinstance(parent, str) and parent in self.leaf_target:
            record = {**record, "parentId": self.leaf_target[parent]}
        elif self.moved is not None and parent == self.moved[0] and "parentId" in record:
            record = {**record, "parentId": self.moved[1]}
        if "parentId" in record:
            self.moved = None
        return super()._record(record)

    def _entry(
        self, session: str, kind: object, record: dict[str, Any], time: str | None
    ) -> list[Outgoing]:
        if kind == "reset":  # a fresh model window; what came before stays the history
            self.tally.skip("record:reset")
            return []
        message = record.get("message")
        if (kind == "message" and isinstance(message, dict) and message.get("role") == "custom"
                and message.get("customType") == NESTED_TOOL):  # fmt: skip
            self.tally.skip(f"message:custom:{NESTED_TOOL}")
            return []
        return super()._entry(session, kind, record, time)

    def _end_title(self) -> tuple[str | None, str | None]:
        return self.main, self.title


class StoreConverter:
    """An agent's ``openclaw-agent.sqlite``: each session's rows to its own transcript
    converter; the sessions' links from ``session_windows`` and ``session_nodes``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tally = Tally()
        self.by_session: dict[str, OpenClawConverter] = {}  # OpenClaw's session id -> it
        self.spawns: dict[str, list[tuple[str, int]]] = {}  # our session -> open spawn calls
        # A child's session key -> the spawn call whose result named it.
        self.spawned: dict[str, tuple[str, int]] = {}
        self.windows: dict[str, dict[str, Any]] = {}

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]:
        self.tally.lines += 1
        record = load_json_line(line, line_no, str(self.path), self.tally)
        if record is None:
            return []
        raw = record.get("session_id")
        event = record.get("event")
        if record.get("skip") == "event:zstd":  # a setup problem, not format drift: said
            self.tally.problems.append(Problem(str(self.path), line_no, (
                f"a zstd-compressed row and this Python has no zstd: {zstd.INSTALL_HINT}"
                " to read it")))  # fmt: skip
            return []
        if not isinstance(raw, str) or not isinstance(event, dict):
            self.tally.skip(str(record.get("skip", "event:unreadable")))
            return []
        converter = self.by_session.get(raw) or self._open(raw)
        out = converter._record(event)
        self._follow_spawns(out)
        self.tally.events += len(out)
        return out

    def _open(self, raw: str) -> OpenClawConverter:
        """A session seen for the first time: who it is, from the store."""
        if raw not in self.windows:
            self.windows = _windows(self.path, self.tally)
        window = self.windows.get(raw, {})
        parent_raw = window.get("parent")
        parent = safe_id(parent_raw, prefix=PREFIX) if isinstance(parent_raw, str) else None
        cites = None
        named = self.spawned.pop(str(window.get("key")), None)
        if window.get("spawned") and parent is not None and named is not None:
            cites = [named]  # the spawn's result named this child: it began after it
        elif window.get("spawned") and parent is not None and self.spawns.get(parent):
            cites = [self.spawns[parent].pop(0)]
        converter = OpenClawConverter(self.path, parent=parent, cites=cites,
                                      title=window.get("title"))  # fmt: skip
        converter.tally = self.tally  # one tally for the store
        self.by_session[raw] = converter
        return converter

    def _follow_spawns(self, out: list[Outgoing]) -> None:
        """``sessions_spawn`` calls waiting for their results (direct, or through tool
        search's ``tool_call``): the next sub-agent session to begin was started by the
        oldest; once a result names the child's session key (a Gateway run writes the
        child's transcript after it), that child was started by its call."""
        for event in out:
            if event.kind not in ("tool/call", "tool/result"):
                continue
            body = orjson.loads(event.body)
            waiting = self.spawns.setdefault(event.session_id, [])
            if event.kind == "tool/call":
                if _is_spawn(body.get("payload", {})):
                    waiting.append((event.session_id, event.seq))
                continue
            for cited in body.get("cites", []):
                key = (cited.get("session_id"), cited.get("seq"))
                if key in waiting:
                    waiting.remove(key)
                    output = body.get("payload", {}).get("output")
                    child = _CHILD_KEY.search(output) if isinstance(output, str) else None
                    if child is not None:
                        self.spawned[child.group(1)] = key

    def _each(self, end: Callable[[OpenClawConverter], list[Outgoing]]) -> list[Outgoing]:
        out = [event for converter in self.by_session.values() for event in end(converter)]
        return out

    def idle(self) -> list[Outgoing]:
        return self._each(lambda converter: converter.idle())

    def finish(self) -> list[Outgoing]:
        """Sessions whose rows OpenClaw moved to cold storage (opt-in, zstd archives) are
        not read: counted, with the rest of the summary."""
        try:
            with read_only(self.path) as conn:
                if "session_transcript_cold_archives" in tables(conn):
                    row = conn.execute("SELECT COUNT(*) FROM session_transcript_cold_archives")
                    cold = int(row.fetchone()[0])
                    if cold:
                        self.tally.skipped["session:cold-archived"] += cold
        except sqlite3.Error as exc:
            self.tally.problems.append(Problem(str(self.path), 0, f"cannot read: {exc}"))
        return []

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        return self._each(lambda converter: converter.end_quiet(before))


def _is_spawn(call: dict[str, Any]) -> bool:
    """A ``sessions_spawn`` call, made directly or through tool search's ``tool_call``."""
    tool = call.get("tool")
    if tool == SPAWN_TOOL:
        return True
    arguments = call.get("arguments")
    named = arguments.get("id") if isinstance(arguments, dict) else None
    return (tool == SEARCH_CALL and isinstance(named, str)
            and named.rsplit(":", 1)[-1] == SPAWN_TOOL)  # fmt: skip


def store_rows(path: Path, after: int) -> Iterator[Record]:
    """The transcript rows after row id ``after``, a batch per short transaction, each as
    the record a :class:`StoreConverter` reads: its session and its entry."""
    decompress, number = zstd.decompressor(), 0
    while True:
        with read_only(path) as conn:
            batch = conn.execute(
                "SELECT rowid, session_id, seq, event_json, event_zstd FROM transcript_events"
                " WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, BATCH)
            ).fetchall()  # fmt: skip
        for row in batch:
            number += 1
            after = int(row[0])
            yield Record(number, _line(row, decompress), after)
        if len(batch) < BATCH:
            return


def _line(row: sqlite3.Row, decompress: Callable[[bytes], bytes] | None) -> bytes:
    text: str | bytes | None = row["event_json"]
    if text is None and row["event_zstd"] is not None:
        if decompress is None:
            return orjson.dumps({"session_id": row["session_id"], "skip": "event:zstd"})
        try:
            text = decompress(bytes(row["event_zstd"]))
        except Exception:  # any codec's error: the row is counted, the rest imports
            return orjson.dumps({"session_id": row["session_id"], "skip": "event:zstd-bad"})
    try:
        event = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        event = None
    return orjson.dumps({"session_id": row["session_id"], "seq": row["seq"], "event": event})


class _NotASession(PiConverter):
    """A file beside the transcripts that repeats one (a compaction checkpoint's copy) or
    is not one (a trajectory): its lines are counted, not imported."""

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        self.tally.skip("record:checkpoint-or-trajectory-file")
        return []


def _windows(path: Path, tally: Tally) -> dict[str, dict[str, Any]]:
    """Each session id -> its parent (OpenClaw's id), whether a spawn made it, its title."""
    try:
        with read_only(path) as conn:
            have = tables(conn)
            if "session_windows" not in have:
                return {}
            windows = [dict(row) for row in conn.execute(
                "SELECT session_id, session_key, previous_session_id, reason, created_at,"
                " spawned_by, display_name FROM session_windows ORDER BY created_at"
            )]  # fmt: skip
            nodes = {} if "session_nodes" not in have else {
                str(row[0]): (row[1], row[2]) for row in
                conn.execute("SELECT session_key, current_session_id, label FROM session_nodes")
            }  # fmt: skip
    except sqlite3.Error as exc:
        tally.problems.append(Problem(str(path), 0, f"cannot read the session windows: {exc}"))
        return {}
    by_key: dict[str, list[dict[str, Any]]] = {}
    for window in windows:
        by_key.setdefault(str(window["session_key"]), []).append(window)
    found: dict[str, dict[str, Any]] = {}
    for window in windows:
        current, label = nodes.get(str(window["session_key"]), (None, None))
        title = (label if current == window["session_id"] else None) or window["display_name"]
        spawner = by_key.get(str(window["spawned_by"] or ""), [])
        # The spawning session: its window current when the child was created.
        before = [w for w in spawner if (w["created_at"] or 0) <= (window["created_at"] or 0)]
        parent = (before or spawner)[-1]["session_id"] if spawner else None
        found[str(window["session_id"])] = {
            "key": window["session_key"],
            "parent": parent or window["previous_session_id"],
            "spawned": parent is not None,
            "title": title if isinstance(title, str) and title.strip() else None,
        }
    return found


def _legacy_links(path: Path) -> tuple[str | None, str | None]:
    """An older transcript's parent (``spawnedBy``'s session) and title from the
    ``sessions.json`` beside it (key -> entry)."""
    try:
        store = orjson.loads((path.parent / "sessions.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None, None
    if not isinstance(store, dict):
        return None, None
    entries = {k: v for k, v in store.items() if isinstance(v, dict)}
    own_id = path.name.removesuffix(".jsonl").split("-topic-")[0]
    entry = next((e for e in entries.values() if e.get("sessionId") == own_id), {})
    spawner = entries.get(str(entry.get("spawnedBy")), {})
    parent = spawner.get("sessionId")
    title = entry.get("label") or entry.get("displayName")
    return (safe_id(parent, prefix=PREFIX) if isinstance(parent, str) else None,
            title if isinstance(title, str) and title.strip() else None)  # fmt: skip


def state_dir() -> Path:
    """``$OPENCLAW_STATE_DIR``, else ``.openclaw`` in ``$OPENCLAW_HOME`` or the home."""
    moved = os.environ.get("OPENCLAW_STATE_DIR")
    if moved:
        return Path(moved).expanduser()
    return Path(os.environ.get("OPENCLAW_HOME") or Path.home()) / ".openclaw"


def _in_agent_sessions(path: Path) -> bool:
    """``agents/<agent>/sessions/<file>``: where OpenClaw kept its transcripts."""
    parts = path.parts
    return len(parts) >= 4 and parts[-2] == "sessions" and parts[-4] == "agents"


class OpenClawImporter(Importer):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = (
        "OpenClaw agents' openclaw-agent.sqlite and older sessions/*.jsonl ($OPENCLAW_STATE_DIR)"
    )
    env_vars: ClassVar[tuple[str, ...]] = ("OPENCLAW_STATE_DIR", "OPENCLAW_HOME")
    # Before Pi: the transcripts are Pi's format, told apart by where OpenClaw keeps them.
    detect_order: ClassVar[int] = 39

    def default_locations(self) -> list[Path]:
        return [state_dir() / "agents"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        # A checkpoint copy is claimed too (and counted, not imported): Pi would take it.
        if path.name == DATABASE:
            return True
        return _in_agent_sessions(path) and any(
            r.get("type") == "session" and isinstance(r.get("id"), str)
            for r in json_objects(head[:1])
        )  # fmt: skip

    def files(self, root: Path) -> list[Path]:
        stores = root.rglob(DATABASE)
        transcripts = (p for p in root.rglob("*.jsonl") if _in_agent_sessions(p) or
                       p.parent == root)  # fmt: skip
        return sorted((*stores, *transcripts), key=str)

    def last_change(self, path: Path) -> float:
        wal = path.with_name(path.name + "-wal")
        return max(path.stat().st_mtime, wal.stat().st_mtime if wal.exists() else 0.0)

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        if path.name != DATABASE:
            yield from super().records(path, after=after, number=number, complete=complete)
            return
        try:
            for record in store_rows(path, after):
                yield Record(number + record.number, record.data, record.position)
        except sqlite3.Error as exc:  # locked past the wait, or not OpenClaw's schema
            if complete:
                raise UnreadableSource(f"cannot read the store: {exc}") from exc

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        if path.name == DATABASE:
            return StoreConverter(path)
        if any(mark in path.name for mark in _NOT_TRANSCRIPTS):
            return _NotASession(path)
        parent, title = _legacy_links(path)
        return OpenClawConverter(path, parent=parent, title=title)
