"""Whole sources: agents that keep a session as a database or a tree of JSON files.

OpenCode, Kilo, Goose, Cline, Roo Code, OpenHands and VS Code Copilot Chat do not append
lines to one file: they write rows, or files, and rewrite some of them while a turn runs.
A format module reads its source into a :class:`SourceReading` (sessions, each an ordered
list of :class:`Item`, one per event it will be), without I/O of its own beyond the read
and without NATS; the :class:`ReadingConverter` turns successive readings of the same
source into events.

Each session's items are published in order, once: the converter remembers how many it
published (``done``) and publishes the ones after them, stopping at the first item the
agent is still writing (``complete=False``: a running tool, a streaming answer), so the
numbering never changes under a session. A session's position, the tool calls waiting for
their results and the sub-agents' spawning calls are its resume token (``token``), kept
by ``watch`` so a restart picks up where it stopped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from contracts import harness
from worker.importers.base import (
    Outgoing,
    Problem,
    Sessions,
    SessionState,
    Tally,
    as_text,
    cut,
    quiet_since,
)

_ANSWERED: Final = 256  # answered calls remembered for a second answer


@dataclass
class Item:
    """One event-to-be of a session, in the order the source gives it."""

    ref: str  # the source's own id of the record: names the event (event_id)
    type: str
    surface: str
    payload: dict[str, Any]
    source_type: str
    time: str | None = None
    # False while the agent is still writing it (a running tool, a streaming answer): it,
    # and everything after it in its session, waits for a later look.
    complete: bool = True
    call: str | None = None  # a tool/call's id, named by its result
    result_of: str | None = None  # a tool/result's call id: the result cites that call
    spawns: str | None = None  # a tool/call that started a sub-agent: the child's session id
    # A call this event reports on without being its result (a sub-agent's report citing
    # the call that spawned it): the event cites that call, its payload unchanged.
    cites_call: str | None = None
    also_spawns: tuple[str, ...] = ()  # the other sub-agents one call started (a batch)


@dataclass
class SourceSession:
    session_id: str  # ours: safe, the same for the same source record
    cwd: str | None
    time: str | None  # when it started
    items: list[Item] = field(default_factory=list)
    title: str | None = None
    parent: str | None = None  # the parent session's id (a sub-agent, a fork)
    extra: dict[str, Any] = field(default_factory=dict)  # more session/start payload
    # What reading it left out, counted: kept with the session, so a reader may reuse an
    # unchanged session's reading (and its counts) instead of reading it again.
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass
class SourceReading:
    """What a source holds now: its sessions, parents before their children."""

    sessions: list[SourceSession] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def skipped(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for session in self.sessions:
            total.update(session.skipped)
        return total


@dataclass(frozen=True)
class Document:
    """A JSON document read whole; its ``value`` may be the literal ``null``."""

    value: Any


def read_document(path: Path, reading: SourceReading, *, optional: bool = False) -> Document | None:
    """The JSON document at ``path``, or None when it cannot be had, said in ``reading``'s
    problems (a missing file as "missing", unless ``optional``; an unreadable or
    half-written one as "not readable JSON", read again on a later look). A file holding
    ``null`` is a :class:`Document` whose value is None, told apart from one not read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if not optional:
            reading.problems.append(Problem(str(path), 0, "missing"))
        return None
    except OSError as exc:
        reading.problems.append(Problem(str(path), 0, f"not readable JSON: {exc}"))
        return None
    try:
        return Document(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        reading.problems.append(Problem(str(path), 0, f"not readable JSON: {exc}"))
        return None


def field_of(record: dict[str, Any], key: str) -> dict[str, Any]:
    """``record[key]`` when it is an object, else an empty one (sources omit and vary)."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def from_seconds(value: object, *, per_second: int = 1) -> str | None:
    """A Unix time (Goose: seconds; OpenCode, Cline and Roo: ``per_second=1000``) as ISO
    UTC, or None when ``value`` is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    try:
        moment = datetime.fromtimestamp(value / per_second, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def from_millis(value: object) -> str | None:
    return from_seconds(value, per_second=1000)


def said(ref: str, role: str, text: str, time: str | None, source_type: str) -> Item:
    """A text of the user or the assistant; harness text in the user's turn (context
    dumps, command wrappers) typed for what it is (``contracts.harness``)."""
    if role == "assistant":
        return Item(ref, "message/assistant", "assistant", {"text": cut(text)}, source_type, time)
    type_ = harness.harness_type(text) or "message/user"
    surface = harness.SURFACES.get(type_, "user")
    return Item(ref, type_, surface, {"text": cut(text)}, source_type, time)


def tool_pair(
    ref: str,
    call_id: str,
    tool: object,
    arguments: object,
    time: str | None,
    source_type: str,
    *,
    output: object = None,
    answered: bool = True,
    error: bool = False,
) -> list[Item]:
    """A tool call and its result, for sources that keep both in one record; the result
    waits (``complete=False``) while the tool runs."""
    call = Item(f"{ref}-call", "tool/call", "assistant", {"tool": tool, "input": arguments},
                source_type, time, call=call_id)  # fmt: skip
    result: dict[str, Any] = {"output": as_text(output)}
    if error:
        result["is_error"] = True
    answer = Item(f"{ref}-result", "tool/result", "tool", result, source_type, time,
                  complete=answered, result_of=call_id)  # fmt: skip
    return [call, answer]


def parents_first(sessions: list[SourceSession]) -> list[SourceSession]:
    """Sessions in source order, except that a parent always comes before its children
    (a child's start can then cite the parent's spawning call)."""
    by_id = {s.session_id: s for s in sessions}
    ordered: list[SourceSession] = []
    placed: set[str] = set()

    def place(session: SourceSession, chain: set[str]) -> None:
        if session.session_id in placed:
            return
        parent = by_id.get(session.parent or "")
        if parent is not None and parent.session_id not in chain:
            place(parent, chain | {session.session_id})
        placed.add(session.session_id)
        ordered.append(session)

    for session in sessions:
        place(session, set())
    return ordered


@dataclass
class _Published:
    done: int = 0  # items published
    title: str | None = None  # the source's title when last read: published at the end


class ReadingConverter:
    """Readings of one source in (``read``, called on each ``feed``), each session's new
    complete items out as events.

    A session's title is published just before its end (the source's, when the session
    is over: idle, or ended by the source): agents name a session after its first turns
    and rename it later, and a title published where it was first seen would take a seq
    that a later import of the same source gives to another event.
    """

    def __init__(
        self, name: str, read: Callable[[], SourceReading], *, idle_s: float | None = None
    ) -> None:
        self.read = read
        # ``watch``: each reading also ends the sessions quiet for this long (a database
        # holds every session of an agent, and is rarely quiet as a whole).
        self.idle_s = idle_s
        self.tally = Tally()
        self.sessions = Sessions(name)
        self.progress: dict[str, _Published] = {}
        self.calls: dict[str, tuple[str, int, object]] = {}  # call id -> its event, tool
        # Calls answered lately: a call may be answered twice (OpenHands: an error, then
        # the output), and the second answer cites it too; a later report on it
        # (``Item.cites_call``) as well. Bounded, and kept in watch's token.
        self.answered: dict[str, tuple[str, int, object]] = {}
        self.spawned: dict[str, tuple[str, int]] = {}  # child session -> spawning call
        self._seen_problems: set[str] = set()

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]:
        """A record of a whole source says only "it changed": read it again."""
        self.tally.lines += 1
        out = self.update(self.read())
        if self.idle_s is not None:
            out += self.end_quiet(quiet_since(self.idle_s))
        return out

    def finish(self) -> list[Outgoing]:
        return []

    def update(self, reading: SourceReading) -> list[Outgoing]:
        # A source is read whole each time: its skips are this reading's, not a sum.
        self.tally.skipped = Counter(reading.skipped)
        for problem in reading.problems:
            if str(problem) not in self._seen_problems:
                self._seen_problems.add(str(problem))
                self.tally.problems.append(problem)
        out: list[Outgoing] = []
        for session in reading.sessions:
            out.extend(self._session(session))
        self.tally.events += len(out)
        return out

    def _session(self, source: SourceSession) -> list[Outgoing]:
        sid = source.session_id
        out: list[Outgoing] = []
        progress = self.progress.get(sid)
        if progress is None:
            progress = self.progress[sid] = _Published()
            spawn = self.spawned.get(sid)
            out.append(self.sessions.start(
                sid, time=source.time, cwd=source.cwd, parent=source.parent,
                extra=source.extra, cites=[spawn] if spawn else None,
            ))  # fmt: skip
        if source.title and source.title.strip():
            progress.title = source.title
        for item in source.items[progress.done :]:
            if not item.complete:
                break
            out.extend(self._item(sid, item))
            progress.done += 1
        return out

    def _item(self, sid: str, item: Item) -> list[Outgoing]:
        if item.type == "compaction":
            return [self.sessions.compaction(sid, item.time, item.payload, item.source_type)]
        payload = dict(item.payload)
        cites = None
        call = self.calls.pop(item.result_of, None) if item.result_of else None
        if call is None and item.result_of:
            call = self.answered.get(item.result_of)
        elif call is not None and item.result_of:
            self.answered[item.result_of] = call
            if len(self.answered) > _ANSWERED:
                del self.answered[next(iter(self.answered))]
        if call is not None:
            cites = [(call[0], call[1])]
            payload.setdefault("tool", call[2])
        elif item.cites_call:
            cited = self.calls.get(item.cites_call) or self.answered.get(item.cites_call)
            cites = [(cited[0], cited[1])] if cited is not None else None
        out = self.sessions.emit(
            sid, item.type, item.surface, item.time, payload, item.source_type,
            cites=cites, source_ref=f"{sid}-{item.ref}",
        )  # fmt: skip
        if item.call:
            self.calls[item.call] = (sid, out.seq, payload.get("tool"))
        for child in (item.spawns, *item.also_spawns):
            if child:
                self.spawned[child] = (sid, out.seq)
        return [out]

    def _close(self, sid: str, reason: str) -> list[Outgoing]:
        """The session's title (when it has one), then its end."""
        state = self.sessions.by_id.get(sid)
        if state is None or state.ended:
            return []
        out = []
        title = self.progress[sid].title
        if title:
            payload = {"title": cut(title)}
            out.append(self.sessions.emit(sid, "session/title", "system", None, payload, "title"))
        ended = self.sessions.end(sid, reason=reason)
        return out + ([ended] if ended is not None else [])

    def idle(self) -> list[Outgoing]:
        # Read once more before the ends: a part that waited only because the source had
        # just changed (an answer maybe still streaming) is whole now that it is quiet.
        out = self.update(self.read())
        closed = [event for sid in self.progress for event in self._close(sid, "idle")]
        self.tally.events += len(closed)
        return out + closed

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        quiet = [sid for sid, state in self.sessions.by_id.items()
                 if datetime.fromisoformat(state.last_time) < before]  # fmt: skip
        out = [event for sid in quiet for event in self._close(sid, "idle")]
        self.tally.events += len(out)
        return out

    def token(self) -> dict[str, Any]:
        """Where each session stands: enough to carry on after a restart."""
        return {
            "sessions": {
                sid: [p.done, p.title, _state(self.sessions.by_id[sid])]
                for sid, p in self.progress.items()
            },
            "calls": {k: list(v) for k, v in self.calls.items()},
            "answered": {k: list(v) for k, v in self.answered.items()},
            "spawned": {k: list(v) for k, v in self.spawned.items()},
        }

    def restore(self, token: dict[str, Any]) -> None:
        for sid, (done, title, state) in token.get("sessions", {}).items():
            self.progress[sid] = _Published(int(done), title)
            runs = state.pop("replaceable")
            self.sessions.by_id[sid] = SessionState(sid, **state, replaceable=_from_runs(runs))
        self.calls = {k: (v[0], int(v[1]), v[2]) for k, v in token.get("calls", {}).items()}
        self.answered = {k: (v[0], int(v[1]), v[2]) for k, v in token.get("answered", {}).items()}
        self.spawned = {k: (v[0], int(v[1])) for k, v in token.get("spawned", {}).items()}


def _state(state: SessionState) -> dict[str, Any]:
    # The token is one KV value: the seqs a compaction would replace are kept as runs
    # (nearly contiguous), and an ended session needs none of them.
    return {
        "key": state.key, "next_seq": state.next_seq, "last_time": state.last_time,
        "ended": state.ended, "replaceable": [] if state.ended else _runs(state.replaceable),
    }  # fmt: skip


def _runs(seqs: list[int]) -> list[list[int]]:
    """Sorted seqs as ``[first, last]`` runs of consecutive numbers."""
    runs: list[list[int]] = []
    for seq in seqs:
        if runs and runs[-1][1] == seq - 1:
            runs[-1][1] = seq
        else:
            runs.append([seq, seq])
    return runs


def _from_runs(runs: list[list[int]]) -> list[int]:
    return [seq for first, last in runs for seq in range(first, last + 1)]


# What a reader compares to tell whether a session changed since it was read: counts,
# lengths, times of its rows, as the reader's cheap query gives them.
Stamp = tuple[object, ...]


@dataclass
class SessionCache:
    """Each session's last reading with the stamp of its rows then: a reader of a database
    rebuilds only the sessions whose stamp changed (an agent's database holds thousands of
    quiet sessions beside the one being written)."""

    entries: dict[str, tuple[Stamp, SourceSession]] = field(default_factory=dict)

    def get(self, key: str, stamp: Stamp) -> SourceSession | None:
        entry = self.entries.get(key)
        return entry[1] if entry is not None and entry[0] == stamp else None

    def put(self, key: str, stamp: Stamp, session: SourceSession) -> SourceSession:
        self.entries[key] = (stamp, session)
        return session
