"""What every format converter shares: ids, times, the per-session numbering, the tallies.

A converter turns the lines of one source file into our session events. It is fed one
complete line at a time (``feed``) so ``watch`` can drive it as a file grows, and says
when the file is done (``finish``) or has gone quiet (``idle``). It never touches NATS:
events come back as :class:`Outgoing` values and the publisher sends them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable
from urllib.parse import unquote, urlparse

import orjson

from contracts.partitions import NO_CWD_KEY, workspace_key
from contracts.redaction import Redactor

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
MAX_ID: Final = 128
# Longer strings are cut on import: the index refuses events over its size limit
# (contracts.limits.MAX_EVENT_BYTES by default) and caps the searchable text per event anyway.
MAX_TEXT_CHARS: Final = 200_000
EPOCH: Final = "1970-01-01T00:00:00Z"
# Events a compaction never replaces: the session's frame, not its conversation.
_NOT_REPLACEABLE: Final = frozenset({"session/start", "session/title", "session/end", "compaction"})


def safe_id(raw: str, *, prefix: str = "") -> str:
    """``raw`` as an id matching ``[A-Za-z0-9_-]{1,128}``, the same for the same input.

    An id that had to change (unsafe characters, too long) gets a digest of the original,
    so two sources that differ only in unsafe characters still get different ids.
    """
    value = prefix + raw
    cleaned = _UNSAFE.sub("-", value)
    if cleaned == value and 0 < len(cleaned) <= MAX_ID:
        return cleaned
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{cleaned[: MAX_ID - 17]}-{digest}" if cleaned else digest


def iso_time(raw: object, *, assume: tzinfo = UTC) -> str | None:
    """A timezone-qualified ISO 8601 UTC string, or None when ``raw`` is not a time.

    A time without a zone is taken to be in ``assume`` (UTC unless the format says).
    """
    if not isinstance(raw, str) or not raw:
        return None
    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=assume)
    utc = parsed.astimezone(UTC)
    if utc.year < 1000:  # strftime's %Y does not pad such a year, isoformat does
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    # The same text as the strftime above (milliseconds truncated), at a third of its cost:
    # an importer calls this for every record.
    return utc.isoformat(timespec="milliseconds")[:-6] + "Z"


def file_time(path: Path) -> str | None:
    """When ``path`` was last modified, as an event time (a format that writes no times)."""
    try:
        stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


# A Windows drive in a file URI's path: "/c:/Users/..." ("c%3A" unquoted).
_URI_DRIVE: Final = re.compile(r"^/([A-Za-z]):(/.*)?$")


def file_uri_path(uri: str) -> str | None:
    """The path a ``file://`` URI names, as its platform writes a cwd: on Windows (a drive,
    or a share) ``C:\\Users\\me``, as Windows programs report it and other agents record
    it, not the URI's ``/c:/Users/me``; else the POSIX path. None for another scheme."""
    if not uri.startswith("file://"):
        return None
    parsed = urlparse(uri)
    path = unquote(parsed.path)
    drive = _URI_DRIVE.match(path)
    if drive is not None:
        return f"{drive.group(1).upper()}:" + (drive.group(2) or "/").replace("/", "\\")
    if parsed.netloc and parsed.netloc != "localhost":  # a UNC share: \\server\share
        return "\\\\" + parsed.netloc + path.replace("/", "\\")
    return path or None


def cut(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    omitted = len(text) - MAX_TEXT_CHARS
    return text[:MAX_TEXT_CHARS] + f"\n[cut on import: {omitted} more characters]"


def as_text(value: object) -> str:
    """Tool output as text: strings as they are, text blocks joined, anything else as JSON."""
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif isinstance(item, str):
                parts.append(item)
        if parts:
            return cut("\n".join(parts))
    if value is None:
        return ""
    return cut(orjson.dumps(value, default=str).decode())


def json_value(raw: object) -> object:
    """A tool call's arguments as the model wrote them (JSON text): their value when the
    text parses, else the text."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


class Spawn(NamedTuple):
    """The tool call that spawned a sub-agent: its event, and the call's description of
    the sub-agent's task (the sub-agent session's title)."""

    session_id: str
    seq: int
    description: str | None = None
    # For a format that does not name the sub-agent in the call (older Gemini CLI): what
    # the call returned, when it was made and the parent's cwd, to tell which it spawned.
    result: str | None = None
    time: str | None = None
    cwd: str | None = None


# What one file tells the files read after it: (transcript id, sub-agent id) -> the
# tool call that spawned that sub-agent. One table per import or watch run; files are
# read in path order, so a transcript comes before its sub-agents.
SpawnLinks = dict[tuple[str, str], Spawn]


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One event ready to publish: its subject tokens, dedup key and exact bytes."""

    session_id: str
    seq: int
    body: bytes
    # The session's workspace key (contracts.partitions), its subject's first token; None
    # when this file does not hold the session's start: the publisher asks the stream.
    key: str | None = None
    # An event for a session that ``watch`` already ended as idle: the index would refuse
    # it (nothing follows a session/end), so it is counted instead of published.
    dropped: bool = False
    # The event's type: the publisher checks the session's order with it (session/start
    # first, nothing after session/end) without parsing the body again.
    kind: str = ""

    @property
    def msg_id(self) -> str:
        # The same source position always gives the same (session_id, seq), so a re-import
        # or a grown file is dropped by the stream's duplicate window and, past it, by the
        # index, which stores each (session_id, seq) once.
        return f"{self.session_id}:{self.seq}"


# Problems are printed (``import``, ``watch``) and kept in the summary, and a message can
# echo a source's text (a refused record's field name): it goes through the rules whatever
# the run's redaction setting, as the worker's dead-letter reasons do.
_PROBLEMS: Final = Redactor()


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    line_no: int
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _PROBLEMS.redact(self.message))

    def __str__(self) -> str:
        return f"{self.path}:{self.line_no}: {self.message}"


@dataclass
class Tally:
    """What a conversion did besides producing events.

    Every record left out is counted by kind in ``skipped``. A kind is either skipped by
    design (``why`` holds the reason: known bookkeeping, said at the call site with
    ``skip(what, why=...)`` or by the format's table, ``Importer.skip_reason``) or
    unknown: a kind the importer has never heard of, which is format drift and is shown
    as such (``unknown``).
    """

    events: int = 0
    lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    why: dict[str, str] = field(default_factory=dict)  # kind skipped by design -> reason

    def skip(self, what: str, why: str | None = None) -> None:
        self.skipped[what] += 1
        if why is not None:
            self.why[what] = why

    def explain(self, reason: Callable[[str], str | None]) -> None:
        """Give the kinds skipped without a reason the one ``reason`` knows (a format's
        table of known skips); the others stay unknown."""
        for what in self.skipped:
            if what not in self.why:
                found = reason(what)
                if found is not None:
                    self.why[what] = found

    @property
    def unknown(self) -> Counter[str]:
        """Kinds skipped that no reason explains: drift."""
        return Counter({k: n for k, n in self.skipped.items() if n and k not in self.why})

    @property
    def by_design(self) -> Counter[str]:
        return Counter({k: n for k, n in self.skipped.items() if n and k in self.why})

    def merge(self, other: Tally) -> None:
        self.events += other.events
        self.lines += other.lines
        for what in other.unknown:
            # The same kind may be known to one format and not to another: unknown wins,
            # so drift is never hidden by a merge.
            self.why.pop(what, None)
        for what, reason in other.why.items():
            if what not in self.skipped or what in self.why:
                self.why[what] = reason
        self.skipped.update(other.skipped)
        self.problems.extend(other.problems)


class Converter(Protocol):
    """Source lines in, events out. One converter per source file."""

    tally: Tally

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]: ...

    def idle(self) -> list[Outgoing]:
        """The file stopped growing: emit what is held back and end sessions the format
        leaves open. Called by ``watch`` only."""
        ...

    def finish(self) -> list[Outgoing]:
        """The whole file was read (``import``): emit what is held back."""
        ...

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        """After ``finish``: end the sessions the format left open whose last event is
        older than ``before`` (``import``: the file's own times say they are over)."""
        ...


@runtime_checkable
class Resumable(Protocol):
    """A converter of a whole source (a database, a folder), which cannot be brought back
    by feeding it the records before the stored position: ``watch`` stores its ``token``
    with the position and gives it back with ``restore`` after a restart."""

    def token(self) -> dict[str, Any]: ...

    def restore(self, token: dict[str, Any]) -> None: ...


@dataclass
class SessionState:
    session_id: str
    key: str = NO_CWD_KEY  # the workspace key of the session/start's cwd
    next_seq: int = 1
    last_time: str = EPOCH
    ended: bool = False
    # Content events since the previous compaction: what the next compaction replaces.
    replaceable: list[int] = field(default_factory=list)


class Sessions:
    """Numbers events per session (seq from 1, contiguous, in file order) and builds them."""

    def __init__(self, source: str) -> None:
        self.source = source  # the format's name, kept in every payload
        self.by_id: dict[str, SessionState] = {}
        self.events = 0

    def start(
        self,
        session_id: str,
        *,
        time: str | None,
        cwd: str | None,
        parent: str | None = None,
        extra: dict[str, Any] | None = None,
        cites: list[tuple[str, int]] | None = None,
    ) -> Outgoing:
        state = SessionState(session_id, workspace_key(cwd))
        self.by_id[session_id] = state
        payload: dict[str, Any] = {
            "cwd": cwd, "parent_session_id": parent, "source": self.source, **(extra or {})
        }  # fmt: skip
        return self.emit(
            session_id, "session/start", "system", time, payload, "session", cites=cites
        )

    def has(self, session_id: str) -> bool:
        return session_id in self.by_id

    def emit(
        self,
        session_id: str,
        type_: str,
        surface: str,
        time: str | None,
        payload: dict[str, Any],
        source_type: str,
        *,
        replaces: list[int] | None = None,
        cites: list[tuple[str, int]] | None = None,
        source_ref: str | None = None,
    ) -> Outgoing:
        state = self.by_id[session_id]
        if state.ended:
            return Outgoing(session_id, state.next_seq - 1, b"", state.key, dropped=True)
        seq = state.next_seq
        state.next_seq += 1
        if time is not None:
            state.last_time = time
        body: dict[str, Any] = {
            "session_id": session_id,
            "seq": seq,
            "event_id": safe_id(f"{source_ref or session_id}-{seq}", prefix="e-"),
            "type": type_,
            "surface": surface,
            "time": state.last_time,
            # Every string in a payload is searchable text: the source's own ids and the
            # format's name stay out of it (the event id and session/start carry them).
            "payload": {**payload, "source_type": source_type},
        }
        if replaces:
            body["replaces"] = replaces
        if cites:
            body["cites"] = [{"session_id": sid, "seq": s} for sid, s in cites]
        self.events += 1
        if type_ not in _NOT_REPLACEABLE:
            state.replaceable.append(seq)
        return Outgoing(session_id, seq, orjson.dumps(body), state.key, kind=type_)

    def compaction(
        self,
        session_id: str,
        time: str | None,
        payload: dict[str, Any],
        source_type: str,
        *,
        through: int | None = None,
    ) -> Outgoing:
        """A compaction replacing the content events since the previous one, up to
        ``through`` when the source names the last event it summarised."""
        state = self.by_id[session_id]
        limit = state.next_seq if through is None else through
        replaced = [seq for seq in state.replaceable if seq <= limit]
        state.replaceable = [seq for seq in state.replaceable if seq > limit]
        return self.emit(
            session_id, "compaction", "system", time, payload, source_type, replaces=replaced
        )

    def end(
        self, session_id: str, *, reason: str, source_type: str = "idle", time: str | None = None
    ) -> Outgoing | None:
        """The session's end; ``source_type`` is the record that showed it (``idle``: none
        did, the file stopped growing)."""
        state = self.by_id.get(session_id)
        if state is None or state.ended:
            return None
        payload = {"reason": reason}
        out = self.emit(session_id, "session/end", "system", time, payload, source_type)
        state.ended = True
        return out

    def end_all(self, *, reason: str) -> list[Outgoing]:
        ends = [self.end(sid, reason=reason) for sid in self.by_id]
        return [out for out in ends if out is not None]

    def end_quiet(self, before: datetime, *, keep: Collection[str] = ()) -> list[Outgoing]:
        """End (``idle``, at its last event's time) each open session but ``keep`` whose
        last event is older than ``before``. The end takes the seq after the file's last
        event of the session, so importing the file again gives the same ``Nats-Msg-Id``:
        the stream and the index keep it once."""
        ends = [
            self.end(sid, reason="idle")
            for sid, state in self.by_id.items()
            if sid not in keep and datetime.fromisoformat(state.last_time) < before
        ]
        return [out for out in ends if out is not None]


def interrupted_results(
    sessions: Sessions,
    session: str,
    open_calls: dict[str, str],
    call_of: Callable[[str], tuple[int, object]],
    time: str | None,
    source: str,
) -> list[Outgoing]:
    """A result marked ``interrupted`` for each of ``session``'s calls still open
    (``open_calls``: call id -> its session; ``call_of``: a call's seq and tool): agents
    write none for a call cut off by Ctrl-C or an aborted turn, and it cites its call."""
    out = []
    for call_id, owner in list(open_calls.items()):
        if owner != session:
            continue
        del open_calls[call_id]
        seq, tool = call_of(call_id)
        payload = {"tool": tool, "call_id": call_id, "output": "", "is_error": True,
                   "interrupted": True}  # fmt: skip
        out.append(sessions.emit(session, "tool/result", "tool", time, payload, source,
                                 cites=[(session, seq)]))  # fmt: skip
    return out


def quiet_since(idle_s: float) -> datetime:
    """The time before which a session's last event means it is over (``import`` reads it
    from the source's own times, as ``watch`` ends what has been quiet that long)."""
    try:
        return datetime.now(UTC) - timedelta(seconds=idle_s)
    except OverflowError:  # inf, or further back than datetime reaches: nothing is over
        return datetime.min.replace(tzinfo=UTC)


def load_json_line(line: bytes, line_no: int, path: str, tally: Tally) -> dict[str, Any] | None:
    """One JSON object, or None after reporting why the line is not one (blank: silently)."""
    if not line.strip():
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        tally.problems.append(Problem(path, line_no, f"invalid JSON: {exc}"))
        return None
    if not isinstance(value, dict):
        tally.problems.append(Problem(path, line_no, "not a JSON object"))
        return None
    return value


class JsonRecordConverter:
    """A converter of a JSON Lines format (one record per line): the line handling and the
    tally live here; a format converts one parsed record in ``_record``."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = str(path)
        self.tally = Tally()
        self.sessions = Sessions(name)

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]:
        self.tally.lines += 1
        record = load_json_line(line, line_no, self.path, self.tally)
        if record is None:
            return []
        out = self._record(record)
        self.tally.events += len(out)
        return out

    def idle(self) -> list[Outgoing]:
        out = self.sessions.end_all(reason="idle")
        self.tally.events += len(out)
        return out

    def finish(self) -> list[Outgoing]:
        return []

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        out = self.sessions.end_quiet(before)
        self.tally.events += len(out)
        return out

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        raise NotImplementedError


class TitledAtEnd(JsonRecordConverter):
    """A converter whose source titles a session apart from its records (a row of the
    agent's store, a field of its document): the title is published just before the
    session's end, as ``source_reading.ReadingConverter`` does, since agents name a session
    after its first turns and rename it later."""

    def _end_title(self) -> tuple[str | None, str | None]:
        """(the titled session, its title now); (None, None) when there is none."""
        return None, None

    def _titled(self, before: datetime | None) -> list[Outgoing]:
        session, title = self._end_title()
        state = self.sessions.by_id.get(session or "")
        if state is None or state.ended or not title or not title.strip():
            return []
        if before is not None and datetime.fromisoformat(state.last_time) >= before:
            return []
        self.tally.events += 1
        return [self.sessions.emit(state.session_id, "session/title", "system", None,
                                   {"title": cut(title)}, "title")]  # fmt: skip

    def idle(self) -> list[Outgoing]:
        return self._titled(None) + super().idle()

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        return self._titled(before) + super().end_quiet(before)
