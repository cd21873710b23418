"""Gemini CLI chats: ``$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/`` (default ``~``).

Two layouts, both read:

- newer (JSON Lines, ``session-<time>-<short id>.jsonl``): a header record (``sessionId``,
  ``projectHash``, ``startTime``, ``kind``: ``main`` or ``subagent``, ``directories``),
  then message records (``id``, ``timestamp``, ``type``: ``user``, ``gemini``, ``info``,
  ``error``, ``warning``; ``content``: a string or a list of parts; a ``gemini`` message
  may carry ``thoughts`` and ``toolCalls``). The CLI appends a message again, whole, each
  time it changes (tokens counted, tool calls added, their results in): a message is
  converted once per part, each part the first time it is seen. ``{"$set": {...}}``
  records update the header (``summary`` titles the session; ``messages``, the whole
  history, is not read again, but one holding a model message the file never appended
  is a compression: a ``compaction``, see ``_compression``); ``{"$rewindTo": id}``
  marks a rewind (counted: what was published stays, and what follows continues the
  session). Sub-agents write ``chats/<parent session id>/<session id>.jsonl`` with
  ``kind: subagent``: a child session whose start cites the tool call that names it
  (``agentId``), read first since a folder's sub-agents are read after its sessions.
  A sub-agent's ``summary`` is its result, not a title: it is kept as ``message/context``
  and the sub-agent is titled by the call's description. The CLI's own background agents
  run the same way with no user session above them: its memory service's skill
  extraction (0.61.0's ``startMemoryService``: a ``LocalAgentExecutor`` whose context's
  ``promptId`` is ``skill-extraction-<8 hex>``) writes
  ``chats/skill-extraction-<8 hex>/<agent id>.jsonl``, ``kind: subagent``, whose user
  message is the service's prompt (the session index it built and its instructions).
  Such a run is a session of its own (no parent: the folder names no session), titled
  "Skill extraction", and its user messages are the harness's words: ``message/context``
  marked ``meta``, as Claude Code's ``isMeta`` messages are, never ``message/user`` nor
  a prompt to title it by.
- older (one JSON document, ``session-<time>-<short id>.json``): the header's fields and
  ``messages[]``, rewritten whole after each turn (a ``.json`` whose first line is a
  whole record holds JSON Lines, as some versions appended them, and is read so).
  ``watch`` reads the messages added since; a message changed after it was read (a tool
  result added to the last one) is not read again. When the CLI resumes such a session
  it copies it to a ``.jsonl`` file beside it and goes on there: the ``.json`` is then
  skipped (the copy holds it). Sub-agents of those versions wrote
  ``chats/<parent session id>/<agent id>.json`` (``sessionId``: the executor's short
  agent id) and the parent's call did not name them: the call is the parent's sub-agent
  call whose result holds the sub-agent's ``summary`` (the first 197 characters of its
  result and ``...``), else the one completed nearest the sub-agent's ``lastUpdated``.

The cwd: the project folder's ``.project_root`` marker (newer versions name the folder
by a slug and write the project's path in it), else ``history/<slug>``'s marker or the
path ``projects.json`` registers for the folder's slug (or digest); for a digest-named
folder, the path among those this ``~/.gemini`` names (and the folders above them, and
this machine's home) whose digest names it; else a sub-agent's first workspace
directory; else none (older versions name the folder by a digest of the path only), and
the session is in the no-cwd workspace (a sub-agent without either takes its parent's).
Tool calls become ``tool/call`` and, once their result is in, ``tool/result`` citing
the call (text parts and function responses' ``output``/``error``, else the display
text); thoughts become ``message/assistant`` with ``thinking``; ``info``, ``error`` and
``warning`` messages are ``message/context``. The format has no session end and no
compaction record: a session is ended by ``--idle-seconds`` as Claude Code's are.
A chat file with no message yet (the header, maybe the bootstrap context: the CLI writes
them before the first prompt, and a user who quits leaves the file so) publishes nothing
and is counted as ``file:header-only``: its session is published whole, from its start,
once a message is appended; the one the CLI starts when it resumes a session in a later
minute (the session goes on in its own file) is counted as ``file:resume-stub``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import (
    Converter,
    JsonRecordConverter,
    Outgoing,
    Spawn,
    SpawnLinks,
    as_text,
    cut,
    iso_time,
    safe_id,
)
from worker.importers.plugin import (
    ConvertOptions,
    Importer,
    Record,
    UnreadableSource,
    WholeSourceImporter,
    json_document,
    json_objects,
)

NAME: Final = "gemini-cli"
CHATS: Final = "chats"
PROJECT_ROOT_FILE: Final = ".project_root"
# An older project folder's name: the SHA-256 of the project's path.
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")
_WINDOWS: Final = re.compile(r"[A-Za-z]:\\")
# A path argument of a tool call in a chat file (read_file, list_directory, glob, grep,
# write_file, replace, run_shell_command), its JSON string as written.
_SHOWN_PATH: Final = re.compile(
    rb'"(?:absolute_path|file_path|dir_path|path|directory)"\s*:\s*("(?:[^"\\]|\\.)*")'
)
# An absolute POSIX path in a chat file's text, and how many distinct ones are kept.
_MENTIONED_PATH: Final = re.compile(rb"(?<![\w.:/])(/(?:[\w.@+-]+/)*[\w.@+-]+)")
_MENTIONED_PATHS: Final = 20_000
# A Windows path's parts spelled in each case at most (2 * 4 ** (parts - 1) digests).
_MAX_SPELLED_PARTS: Final = 7
# Tool call states after which the call has its result (the CLI's scheduler statuses).
_DONE: Final = frozenset({"success", "error", "cancelled"})
_CONTEXT_TYPES: Final = frozenset({"info", "error", "warning"})
# A part's fields read (or counted as media) as such; any other is counted by its name.
_PART_FIELDS: Final = frozenset({"text", "inlineData", "fileData", "thought", "thoughtSignature"})
# ``$set`` fields read, or repeated from the header: ``lastUpdated`` follows every message.
_SET_READ: Final = frozenset({"summary", "messages", "lastUpdated", "sessionId"})
# The session context the CLI bootstraps a chat with (``getEnvironmentContext``).
_BOOT_CONTEXT: Final = "<session_context>"
# How a sub-agent tool's result starts (``local-invocation.ts``): the parent's calls that
# spawned a sub-agent, in versions whose calls do not carry its ``agentId``.
_SUBAGENT_RESULT: Final = "Subagent '"
# A sub-agent's summary is its result cut to this many characters, ``...`` included.
_SUMMARY_CHARS: Final = 200
_UNNAMED: Final = "call:"  # links key prefix of a sub-agent call that names no agent
# The folder prefixes of chats the CLI's own background agents write (no user session
# above them: their user messages are the harness's prompt) -> the run's title.
_HARNESS_RUNS: Final = {"skill-extraction-": "Skill extraction"}
# A main chat file's name: its start time and the first eight characters of its session id.
_SESSION_FILE: Final = re.compile(r"session-(?P<time>[0-9T-]+)-(?P<short>[0-9a-f]{8})\.jsonl?")
# The a2a server (an editor's agent, e.g. Cloud Shell's) records its own chats under one
# fixed id in every project folder (``packages/a2a-server``: ``loadConfig`` with the task
# id ``a2a-server``), one file per start: each is a session of its own.
_A2A_SERVER: Final = "a2a-server"
_A2A_FILE: Final = re.compile(r"session-(?P<time>[0-9T-]+)-a2a-serv\.jsonl?")
# The skip key of a chat file holding no message (its header, maybe its bootstrap
# context): an empty session is noise in lists and searches, published once it has one.
EMPTY_CHAT: Final = "file:header-only"
# The skip key of such a file the CLI started when it resumed a session in a later minute
# (``_resume_stub``): the session goes on in its own, earlier file.
RESUME_STUB: Final = "file:resume-stub"


def parts_text(content: object) -> str:
    """The text of a ``PartListUnion``: a string, a part, or a list of either."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def result_text(call: dict[str, Any]) -> str:
    """A tool call's result: its text parts and function responses, else its display."""
    texts = []
    result = call.get("result")
    for part in result if isinstance(result, list) else [result]:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        response = part.get("functionResponse")
        if isinstance(response, dict) and isinstance(response.get("response"), dict):
            body = response["response"]
            value = body.get("output", body.get("error", body))
            texts.append(value if isinstance(value, str) else as_text(value))
    if texts:
        return cut("\n".join(texts))
    return as_text(call.get("resultDisplay"))


def project_cwd(chats_file: Path) -> str | None:
    """The project path the CLI wrote beside its chats (newer versions); for an older
    folder without it, the path of the folder the CLI moved its chats to; else None."""
    for folder in chats_file.parents:
        if folder.name == CHATS:
            marker = _marker(folder.parent) or _registered(folder.parent)
            if marker is None:
                newer = _moved_to(folder)
                marker = _marker(newer) if newer is not None else None
            return (
                marker
                or _digest_of_known(folder.parent)
                or _digest_of_shown(folder)
                or _slug_of_shown(folder)
            )
    return None


def _digest_of_known(project: Path) -> str | None:
    """For an older folder named by a path's digest that no newer folder continues (seen
    in a real home: the CLI run once in the home folder): the path whose digest names it
    among the paths this ``~/.gemini`` names (markers, the registry), the folders above
    them, and this machine's home. A digest names one path: nothing is guessed."""
    if not _DIGEST.fullmatch(project.name):
        return None
    gemini = project.parent.parent
    try:  # remembered until a project folder comes or goes
        changed = project.parent.stat().st_mtime_ns
    except OSError:
        return None
    return _known_digests(gemini, changed).get(project.name)


@functools.lru_cache(maxsize=16)
def _known_digests(gemini: Path, changed: int) -> dict[str, str]:  # changed: the cache key
    paths = {str(Path.home())}
    for folder in ("tmp", "history"):
        try:
            projects = list((gemini / folder).iterdir())
        except OSError:
            continue
        paths.update(m for m in map(_marker, projects) if m is not None)
    try:
        registry = orjson.loads((gemini / "projects.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        registry = None
    listed = registry.get("projects") if isinstance(registry, dict) else None
    if isinstance(listed, dict):
        paths.update(p for p in listed if isinstance(p, str))
    found: dict[str, str] = {}
    for above in sorted({above for path in paths for above in _and_above(path)}):
        for spelling in _spellings(above):
            found.setdefault(hashlib.sha256(spelling.encode()).hexdigest(), spelling)
    return found


def _digest_of_shown(chats: Path) -> str | None:
    """For an older folder named by a path's digest that no path this ``~/.gemini`` names
    explains (another machine's home: seen in real homes): the path whose digest names it
    among the absolute paths the chats show (tool calls' arguments, and the text: its own
    chats', else those of the other project folders beside it), and the folders above
    them. A digest names one path: nothing is guessed."""
    if not _DIGEST.fullmatch(chats.parent.name):
        return None
    try:  # remembered until a chat comes, goes or is rewritten
        changed = max((p.stat().st_mtime_ns for p in chats.iterdir()), default=0)
        tmp = chats.parent.parent
        # Each project folder's chats folder and when it last changed.
        beside = tuple(sorted(
            (p.name, (p / CHATS).stat().st_mtime_ns) for p in tmp.iterdir()
            if p.name != chats.parent.name and (p / CHATS).is_dir()
        ))  # fmt: skip
    except OSError:
        return None
    own = _shown_digests(chats, changed).get(chats.parent.name)
    if own is not None:
        return own
    for name, mtime in beside:
        named = _shown_digests(tmp / name / CHATS, mtime).get(chats.parent.name)
        if named is not None:
            return named
    return None


def _slug_of_shown(chats: Path) -> str | None:
    """For a newer folder (named by the slug of the project folder's name) without its
    marker or a registry (seen in a real home): the one folder among those its chats' tool
    calls show, and the folders above them, whose name gives that slug; None for none or
    several."""
    if _DIGEST.fullmatch(chats.parent.name):
        return None
    try:
        changed = max((p.stat().st_mtime_ns for p in chats.iterdir()), default=0)
    except OSError:
        return None
    named = {
        above
        for path in _shown_paths(chats, changed)
        for above in _and_above(path)
        if _slug(re.split(r"[\\/]", above.rstrip("\\/"))[-1]) == chats.parent.name
    }
    return named.pop() if len(named) == 1 else None


def _slug(name: str) -> str:
    """The CLI's slug of a project folder's name (``ProjectRegistry.slugify``)."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", name.lower())).strip("-") or "project"


@functools.lru_cache(maxsize=64)
def _shown_digests(chats: Path, changed: int) -> dict[str, str]:  # changed: the cache key
    # Any path the chats name will do (older chats name them only in their text): the
    # digest tells the one it is.
    paths = _shown_paths(chats, changed) | _mentioned_paths(chats, changed)
    found: dict[str, str] = {}
    for above in sorted({above for path in paths for above in _and_above(path)}):
        for spelling in (above, above.lower()):  # as shown, and as newer versions lower it
            found.setdefault(hashlib.sha256(spelling.encode()).hexdigest(), spelling)
    return found


@functools.lru_cache(maxsize=64)
def _mentioned_paths(chats: Path, changed: int) -> frozenset[str]:  # changed: the cache key
    """The absolute POSIX paths a folder's chat files name anywhere (their text), at most
    ``_MENTIONED_PATHS`` of them."""
    paths: set[str] = set()
    try:
        files = sorted(p for p in chats.iterdir() if p.is_file())
    except OSError:
        files = []
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            continue
        for found in _MENTIONED_PATH.findall(data):
            paths.add(found.decode("utf-8", "replace"))
            if len(paths) >= _MENTIONED_PATHS:
                return frozenset(paths)
    return frozenset(paths)


@functools.lru_cache(maxsize=64)
def _shown_paths(chats: Path, changed: int) -> frozenset[str]:  # changed: the cache key
    """The absolute paths the tool calls of a folder's chat files show."""
    paths: set[str] = set()
    try:
        files = sorted(chats.iterdir())
    except OSError:
        files = []
    for file in files:
        try:
            data = file.read_bytes() if file.is_file() else b""
        except OSError:
            continue
        for literal in _SHOWN_PATH.findall(data):
            try:
                path = orjson.loads(literal)
            except orjson.JSONDecodeError:
                continue
            if isinstance(path, str) and (path.startswith("/") or _WINDOWS.match(path)):
                paths.add(path)
    return frozenset(paths)


def _and_above(path: str) -> Iterator[str]:
    sep = "\\" if _WINDOWS.match(path) else "/"
    parts = path.rstrip(sep).split(sep)
    for end in range(len(parts), 0, -1):
        yield sep.join(parts[:end]) or sep
    if sep == "\\":
        yield parts[0] + sep  # the drive's root


def _spellings(path: str) -> Iterator[str]:
    """The path as written, and a Windows path in the cases Windows writes it (newer
    versions lower the whole path; older ones hashed the path as the shell or the editor
    gave it: a folder named in capitals, seen in a real home, is one of those cases)."""
    yield path
    if not _WINDOWS.match(path):
        return
    parts = path.split("\\")
    if len(parts) > _MAX_SPELLED_PARTS:
        return
    drive = sorted({parts[0].upper(), parts[0].lower()})
    choices = [drive] + [
        sorted({p, p.lower(), p.upper(), p[:1].upper() + p[1:]}) for p in parts[1:]
    ]
    for spelled in itertools.product(*choices):
        yield "\\".join(spelled)


def _marker(project: Path) -> str | None:
    try:
        text = (project / PROJECT_ROOT_FILE).read_text("utf-8").strip()
    except OSError:
        return None
    return text or None


def _registered(project: Path) -> str | None:
    """Newer versions register each project in ``~/.gemini/projects.json`` (its path -> the
    slug naming its folders) and mark ``history/<slug>`` too: a ``tmp`` folder without its
    marker (seen in a real home) is found there; one named by a path's digest as well."""
    gemini = project.parent.parent
    history = _marker(gemini / "history" / project.name)
    if history is not None:
        return history
    try:
        registry = orjson.loads((gemini / "projects.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    projects = registry.get("projects") if isinstance(registry, dict) else None
    if not isinstance(projects, dict):
        return None
    named = [
        path
        for path, slug in projects.items()
        if slug == project.name or hashlib.sha256(path.encode()).hexdigest() == project.name
    ]
    return named[0] if len(named) == 1 else None


def _moved_to(chats: Path) -> Path | None:
    """For an older project folder (named by a digest of the path, no marker): the newer
    folder of the same project, which the CLI gave a marker and copied these chats to
    under the same names (seen in real homes), or whose marker's digest names this one."""
    try:  # asked once per file: remembered until a project folder comes or goes
        changed = chats.parent.parent.stat().st_mtime_ns
    except OSError:
        return None
    return _moved_to_as_of(chats, changed)


@functools.lru_cache(maxsize=256)
def _moved_to_as_of(chats: Path, changed: int) -> Path | None:  # changed: the cache key
    try:
        names = {p.name for p in chats.iterdir() if p.name.startswith("session-")}
        siblings = [p for p in chats.parent.parent.iterdir() if p != chats.parent]
    except OSError:
        return None
    for sibling in sorted(siblings):
        marker = _marker(sibling)
        if marker is None:
            continue
        if hashlib.sha256(marker.encode()).hexdigest() == chats.parent.name:
            return sibling
        try:
            if names & {p.name for p in (sibling / CHATS).iterdir()}:
                return sibling
        except OSError:
            continue
    return None


class GeminiConverter(JsonRecordConverter):
    def __init__(self, path: Path, *, links: SpawnLinks | None = None, name: str = NAME) -> None:
        super().__init__(path, name)
        self.links: SpawnLinks = {} if links is None else links
        self.cwd = project_cwd(path)
        # A sub-agent's folder is named by its parent session's id, or, for a run of the
        # CLI's own (skill extraction), by that run's prompt id: no session is its parent.
        folder = path.parent.name if path.parent.name != CHATS else None
        self.harness_run = next(
            (title for prefix, title in _HARNESS_RUNS.items()
             if folder is not None and folder.startswith(prefix)),
            None,
        )  # fmt: skip
        self.parent_raw = None if self.harness_run else folder
        self.raw_id: str | None = None
        self.session: str | None = None
        self.subagent = False
        self.result: str | None = None  # a sub-agent's summary (its result), once kept
        self.title: str | None = None
        # message id -> the parts already converted ("text", "thought:<n>", "call:<id>",
        # "result:<id>"), so a message appended again gives only what is new.
        self.seen: dict[str, set[str]] = {}
        self.calls: dict[str, int] = {}  # tool call id -> seq of its tool/call
        self.prompts: list[tuple[str, int]] = []  # user texts and their first event's seq
        # The session's events held back until it says something (a message, a
        # sub-agent's result): the CLI writes a chat's header (and its bootstrap context)
        # before the first prompt, and a chat the user quit before one stays so. None
        # once published (or before the header).
        self.held: list[Outgoing] | None = None
        self.spoke = False

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        out = self._convert(record)
        if self.held is None:
            return out
        self.held += out
        if not self.spoke:
            return []
        out, self.held = self.held, None
        for key in (EMPTY_CHAT, RESUME_STUB):  # counted while it was empty: not now
            self.tally.skipped.pop(key, None)
        return out

    def _empty(self) -> bool:
        """The chat has no message yet: counted (once) as skipped, nothing published; a
        resume's stub by that name, so the summary says why."""
        if self.held is None:
            return False
        key = RESUME_STUB if _resume_stub(Path(self.path)) else EMPTY_CHAT
        if not self.tally.skipped[key]:
            self.tally.skipped.pop(EMPTY_CHAT if key == RESUME_STUB else RESUME_STUB, None)
            self.tally.skip(key)
        return True

    def idle(self) -> list[Outgoing]:
        # Not ended: ``watch`` publishes it whole once a message is appended.
        return [] if self._empty() else super().idle()

    def finish(self) -> list[Outgoing]:
        self._empty()
        return super().finish()

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        return [] if self.held is not None else super().end_quiet(before)

    def _convert(self, record: dict[str, Any]) -> list[Outgoing]:
        if isinstance(record.get("$rewindTo"), str):
            self.tally.skip("record:$rewindTo")
            return []
        if isinstance(record.get("$set"), dict):
            for key in sorted(record["$set"].keys() - _SET_READ):
                self.tally.skip(f"record:$set:{key}")
            booted = self._bootstrap(record["$set"])
            if booted is not None:
                return booted + self._update({k: v for k, v in record["$set"].items()
                                              if k != "messages"})  # fmt: skip
            return self._compression(record["$set"]) + self._update(record["$set"])
        if isinstance(record.get("id"), str):
            head: list[Outgoing] = []
            if self.session is None and _SESSION_FILE.fullmatch(Path(self.path).name):
                # A chat file whose first lines are gone, its header with them (seen in a
                # real home): the session is named by the file, from its first message.
                self.tally.skip("record:header:missing")
                stem = Path(self.path).stem
                head = self._header({"sessionId": stem, "startTime": record.get("timestamp")})
            if self.session is None:
                self.tally.skip("record:message:no-header")
                return []
            self.spoke = True
            said = self._message(self.session, record)
            text = parts_text(record.get("content")) if record.get("type") == "user" else ""
            if said and text:
                self.prompts.append((text, said[0].seq))
            return head + said
        if isinstance(record.get("sessionId"), str):
            return self._header(record)
        self.tally.skip("record:unknown")
        return []

    def _bootstrap(self, fields: dict[str, Any]) -> list[Outgoing] | None:
        """The bootstrap history a new session's file opens with (since May 2026 the CLI
        syncs it to the recording as a ``$set`` of ``messages``, never appended: seen in
        a real home): its session context turns, published as context. None for any other
        ``$set``: after a message was read, or holding more than session context."""
        messages = fields.get("messages")
        if self.session is None or self.seen or not isinstance(messages, list) or not messages:
            return None
        texts = []
        for message in messages:
            if not (isinstance(message, dict) and isinstance(message.get("id"), str)):
                return None
            text = parts_text(message.get("content"))
            if message.get("type") != "user" or not text.lstrip().startswith(_BOOT_CONTEXT):
                return None
            texts.append((message, text))
        out = []
        for message, text in texts:
            self.seen.setdefault(message["id"], set()).add("text")
            time = iso_time(message.get("timestamp"))
            payload = {"text": cut(text)}
            out.append(self.sessions.emit(self.session, "message/context", "system", time,
                                          payload, "$set:messages:bootstrap"))  # fmt: skip
        return out

    def _compression(self, fields: dict[str, Any]) -> list[Outgoing]:
        """A ``$set`` of ``messages`` written by compression (``/compress``, or the CLI near
        its context limit): the history replaced by the summary as a user message, the
        model's acknowledgement, then the recent turns it keeps, copied under new ids. A
        resume rewrites the history too, with the ids it had (tool responses under ids of
        their own): only a model message never appended tells a compression. The copies
        are not published again; the compaction replaces what precedes the first kept
        user message (all since the last compaction when none is found)."""
        messages = fields.get("messages")
        if self.session is None or not isinstance(messages, list):
            return []
        fresh = [
            m for m in messages
            if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"] not in self.seen
        ]  # fmt: skip
        ack = next((i for i, m in enumerate(fresh) if m.get("type") == "gemini"), None)
        if ack is None:
            return []
        for message in fresh:
            self.seen.setdefault(message["id"], set())
        summary = "\n".join(
            parts_text(m.get("content")) for m in fresh[:ack] if m.get("type") == "user"
        )
        kept = next(
            (text for m in fresh[ack + 1 :] if m.get("type") == "user"
             for text in [parts_text(m.get("content"))] if text),
            None,
        )  # fmt: skip
        through = None
        if kept is not None:
            seqs = [seq for text, seq in self.prompts if text == kept]
            through = seqs[-1] - 1 if seqs else None
        payload = {"summary": cut(summary)}
        time = iso_time(fields.get("lastUpdated"))
        self.spoke = True
        return [self.sessions.compaction(self.session, time, payload, "$set:messages",
                                         through=through)]  # fmt: skip

    def _header(self, record: dict[str, Any]) -> list[Outgoing]:
        if self.session is not None:
            return self._update(record)  # a resumed session's header again
        self.raw_id = record["sessionId"]
        self.held = []  # until it says something
        self.subagent = record.get("kind") == "subagent"
        self.session = safe_id(self._own_id(record["sessionId"]))
        cwd = self.cwd
        directories = record.get("directories")
        if cwd is None and isinstance(directories, list) and directories:
            cwd = directories[0] if isinstance(directories[0], str) else None
        parent_raw = self.parent_raw if self.subagent else None
        parent = safe_id(parent_raw) if parent_raw else None
        spawn = self._spawn(parent_raw, record) if parent_raw else None
        if cwd is None and spawn is not None:
            cwd = spawn.cwd
        self.cwd = cwd  # what its sub-agents take when they have no cwd of their own
        extra = {"kind": record["kind"]} if isinstance(record.get("kind"), str) else {}
        out = [
            self.sessions.start(
                self.session, time=iso_time(record.get("startTime")), cwd=cwd, parent=parent,
                extra=extra, cites=[(spawn.session_id, spawn.seq)] if spawn else None,
            )
        ]  # fmt: skip
        if spawn is not None and spawn.description:
            out += self._title(spawn.description, "toolCall:description")
        elif self.harness_run is not None:
            out += self._title(self.harness_run, "harness-run")
        if self.subagent:  # its summary comes at its end (``split`` puts it there too)
            return out + self._update({k: v for k, v in record.items() if k != "summary"})
        return out + self._update(record)

    def _own_id(self, raw: str) -> str:
        """The CLI names each chat file it starts by the process's session id, which some
        versions keep for the next chat (``/clear``): a file after an earlier one of the
        same id is another conversation, ``<id>-<its file's time>``."""
        path = Path(self.path)
        a2a = _A2A_FILE.fullmatch(path.name)
        if raw == _A2A_SERVER and a2a is not None and not self.subagent:
            return f"{raw}-{path.parent.parent.name}-{a2a['time']}"
        named = _SESSION_FILE.fullmatch(path.name)
        if self.subagent or named is None or not raw.startswith(named["short"]):
            return raw
        for other in path.parent.glob(f"session-*-{named['short']}.json*"):
            earlier = other.stem < path.stem and _SESSION_FILE.fullmatch(other.name)
            if earlier and _session_id_of(other) == raw:  # 8 hex digits may be another's
                return f"{raw}-{named['time']}"
        return raw

    def _spawn(self, parent_raw: str, record: dict[str, Any]) -> Spawn | None:
        """The parent's call that spawned this sub-agent: the one naming it (``agentId``),
        else (older versions) an unclaimed sub-agent call of the parent whose result holds
        the sub-agent's summary, else the one completed nearest its last update."""
        named = self.links.get((parent_raw, record["sessionId"]))
        if named is not None:
            return named
        unnamed = {key: spawn for key, spawn in self.links.items()
                   if key[0] == parent_raw and key[1].startswith(_UNNAMED)}  # fmt: skip
        if not unnamed:
            return None
        summary = record.get("summary")
        found = None
        if isinstance(summary, str) and summary.strip():
            cut_short = len(summary) == _SUMMARY_CHARS and summary.endswith("...")
            head = (summary[:-3] if cut_short else summary).strip()
            found = next((k for k, s in unnamed.items() if s.result and head in s.result), None)
        if found is None:
            # The parent records a call when it completes, as the sub-agent last wrote.
            end = iso_time(record.get("lastUpdated")) or iso_time(record.get("startTime"))
            if end is None:
                return None
            found = min(unnamed, key=lambda k: _distance(unnamed[k].time, end))
        del self.links[found]  # claimed: another sub-agent of the parent is another call
        return unnamed[found]

    def _update(self, fields: dict[str, Any]) -> list[Outgoing]:
        if "messages" in fields:  # a rewrite of the whole history (masking): not re-read
            self.tally.skip("record:$set:messages")
        summary = fields.get("summary")
        if self.session is None or not isinstance(summary, str) or not summary.strip():
            return []
        if self.subagent:
            return self._result(summary)
        return self._title(summary, "summary")

    def _result(self, summary: str) -> list[Outgoing]:
        """A sub-agent's summary: the start of its result, searchable, never its title."""
        if self.session is None or summary == self.result:
            return []
        self.result = summary
        self.spoke = True
        payload = {"text": cut(summary)}
        return [self.sessions.emit(self.session, "message/context", "system", None, payload,
                                   "summary")]  # fmt: skip

    def _title(self, title: str, source_type: str) -> list[Outgoing]:
        if self.session is None or title == self.title:
            return []
        self.title = title
        payload = {"title": cut(title)}
        return [self.sessions.emit(self.session, "session/title", "system", None, payload,
                                   source_type)]  # fmt: skip

    def _message(self, session: str, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        time = iso_time(record.get("timestamp"))
        seen = self.seen.setdefault(record["id"], set())
        out: list[Outgoing] = []
        if kind == "gemini":
            for n, thought in enumerate(record.get("thoughts") or []):
                if isinstance(thought, dict) and f"thought:{n}" not in seen:
                    seen.add(f"thought:{n}")
                    text = ": ".join(
                        str(thought[k]) for k in ("subject", "description") if thought.get(k)
                    )
                    payload = {"thinking": cut(text)}
                    out.append(self.sessions.emit(session, "message/assistant", "assistant",
                                                  time, payload, "gemini:thought"))  # fmt: skip
        text = parts_text(record.get("content"))
        if text.strip() and "text" not in seen:
            seen.add("text")
            out += self._text(session, kind, text, time)
        content = record.get("content")
        if "media" not in seen and isinstance(content, list):
            seen.add("media")
            for part in content:  # an image or file inlined in a prompt: not searchable
                for key in ("inlineData", "fileData"):
                    media = part.get(key) if isinstance(part, dict) else None
                    if isinstance(media, dict):
                        self.tally.skip(f"{kind}-part:{key}:{media.get('mimeType')}")
                # The history's own parts besides text (a tool's response sent back, a
                # call in a history rewritten whole): counted, never dropped unseen.
                for key in part if isinstance(part, dict) else ():
                    if key not in _PART_FIELDS:
                        self.tally.skip(f"{kind}-part:{key}")
        if kind == "gemini":
            for call in record.get("toolCalls") or []:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    out += self._tool_call(session, call, seen)
        return out

    def _text(self, session: str, kind: object, text: str, time: str | None) -> list[Outgoing]:
        payload: dict[str, Any] = {}
        if kind == "user" and self.harness_run is not None:  # the harness's prompt
            type_, surface, payload = "message/context", "system", {"meta": True}
        elif kind == "user":
            type_ = harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
        elif kind == "gemini":
            type_, surface = "message/assistant", "assistant"
        elif kind in _CONTEXT_TYPES:
            type_, surface = "message/context", "system"
        else:
            self.tally.skip(f"record:message:{kind}")
            return []
        payload["text"] = cut(text)
        return [self.sessions.emit(session, type_, surface, time, payload, f"message:{kind}")]

    def _tool_call(self, session: str, call: dict[str, Any], seen: set[str]) -> list[Outgoing]:
        call_id = call["id"]
        time = iso_time(call.get("timestamp"))
        out = []
        if f"call:{call_id}" not in seen:
            seen.add(f"call:{call_id}")
            payload = {"tool": call.get("name"), "call_id": call_id, "arguments": call.get("args")}
            if isinstance(call.get("description"), str) and call["description"]:
                payload["description"] = cut(call["description"])
            emitted = self.sessions.emit(session, "tool/call", "assistant", time, payload,
                                         "toolCall")  # fmt: skip
            self.calls[call_id] = emitted.seq
            out.append(emitted)
            agent = call.get("agentId")
            if isinstance(agent, str) and self.raw_id is not None:
                self.links[(self.raw_id, agent)] = Spawn(
                    session, emitted.seq, _description(call), cwd=self.cwd
                )
        done = call.get("status") in _DONE or call.get("result") is not None
        if done and f"result:{call_id}" not in seen:
            seen.add(f"result:{call_id}")
            payload = {"tool": call.get("name"), "call_id": call_id, "output": result_text(call)}
            if call.get("status") in ("error", "cancelled"):
                payload["status"] = call["status"]
                payload["is_error"] = True
            seq = self.calls.get(call_id)
            out.append(self.sessions.emit(session, "tool/result", "tool", time, payload,
                                          "toolCall:result",
                                          cites=[(session, seq)] if seq else None))  # fmt: skip
            if seq and self.raw_id is not None and _spawned_unnamed(call, payload["output"]):
                self.links[(self.raw_id, f"{_UNNAMED}{call_id}")] = Spawn(
                    session, seq, _description(call), result=payload["output"], time=time,
                    cwd=self.cwd,
                )  # fmt: skip
        return out


class GeminiCliImporter(WholeSourceImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Gemini CLI chats ($GEMINI_CLI_HOME/.gemini/tmp/*/chats)"
    env_vars: ClassVar[tuple[str, ...]] = ("GEMINI_CLI_HOME",)
    detect_order: ClassVar[int] = 40
    home: ClassVar[str] = ".gemini"
    home_variable: ClassVar[str] = "GEMINI_CLI_HOME"

    def default_locations(self) -> list[Path]:
        home = Path(os.environ.get(self.home_variable) or Path.home())
        return [home / self.home / "tmp"]

    def accepts(self, path: Path) -> bool:
        if CHATS not in (path.parent.name, path.parent.parent.name):
            return False
        if path.suffix == ".json":
            if (path.parent / "chat-messages.json").exists():
                return False  # a Codebuff chat's folder (``chats/<chat id>/``), not a parent's
            # A session, or in a parent's folder a sub-agent (``<agent id>.json``); once
            # resumed by a newer CLI, the .jsonl beside it holds all of it and goes on.
            named = path.name.startswith("session-") or path.parent.name != CHATS
            return named and not path.with_suffix(".jsonl").exists() and not _moved(path)
        return path.suffix == ".jsonl" and not _moved(path)

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.suffix == ".json":
            return self.accepts(path)
        return any(
            isinstance(r.get("sessionId"), str) and "projectHash" in r for r in json_objects(head)
        )

    def files(self, root: Path) -> list[Path]:
        # A folder's own sessions before its sub-agents' folders: a sub-agent's start cites
        # the call in its parent that names it.
        # A resume's stub is listed too: its converter publishes nothing and counts it
        # (``file:resume-stub``), so the summary and ``--dry-run`` show it was skipped.
        found = [p for p in root.rglob("*.json*") if p.is_file() and self.accepts(p)]
        return sorted(found, key=lambda p: (str(_chats_folder(p)), p.parent.name != CHATS, str(p)))

    def records(
        self, path: Path, *, after: int = 0, number: int = 0, complete: bool = True
    ) -> Iterator[Record]:
        if path.suffix == ".jsonl" or _lines_inside(path):
            return Importer.records(self, path, after=after, number=number, complete=complete)
        return super().records(path, after=after, number=number, complete=complete)

    def split(self, path: Path) -> list[bytes]:
        """A legacy session file as records: its header's fields, then each message."""
        if path.stat().st_size == 0:  # created, nothing written yet (real homes have them)
            return []
        document = json_document(path)
        if not isinstance(document, dict) or not isinstance(document.get("sessionId"), str):
            raise UnreadableSource("not a Gemini CLI session (no sessionId)")
        messages = document.get("messages")
        header = {k: v for k, v in document.items() if k != "messages"}
        header.setdefault("projectHash", "")
        listed = messages if isinstance(messages, list) else []
        records = [orjson.dumps(header), *(orjson.dumps(m) for m in listed)]
        if document.get("kind") == "subagent" and isinstance(document.get("summary"), str):
            # Saved when the sub-agent finished (its result): after its messages, as the
            # newer layout appends it; the header keeps it to find the spawning call.
            records.append(orjson.dumps({"$set": {"summary": document["summary"]}}))
        return records

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        return GeminiConverter(path, links=options.links, name=self.name)


def _resume_stub(path: Path) -> bool:
    """A file the CLI starts when it resumes a session in a later minute: named by the
    time of the resume and the session's short id, it holds the session's header and
    context but no message, while the session goes on in its own, earlier file."""
    name = path.name
    if path.parent.name != CHATS or path.suffix != ".jsonl" or not name.startswith("session-"):
        return False
    if _A2A_FILE.fullmatch(name):  # the a2a server's starts, each its own session
        return False
    short = name.removesuffix(".jsonl").rsplit("-", 1)[-1]
    earlier = [
        p for p in path.parent.glob(f"session-*-{short}.json*")
        if p.name < name and p.suffix in (".json", ".jsonl")
    ]  # fmt: skip
    if not earlier:
        return False
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return False
    return not any(
        isinstance(r.get("id"), str) and isinstance(r.get("type"), str) for r in json_objects(lines)
    )


def _session_id_of(path: Path) -> str | None:
    """A chat file's ``sessionId`` (its first line's, or its document's)."""
    try:
        with path.open("rb") as fh:
            first = fh.readline()
        header = next(json_objects([first]), None)
        document = header if header is not None else json_document(path)
    except (OSError, UnreadableSource):
        return None
    raw = document.get("sessionId") if isinstance(document, dict) else None
    return raw if isinstance(raw, str) else None


def _moved(path: Path) -> bool:
    """A session the CLI copied to its project's newer folder and went on in there."""
    if path.parent.name != CHATS or _marker(path.parent.parent) is not None:
        return False
    newer = _moved_to(path.parent)
    if newer is None:
        return False
    return any((newer / CHATS / path.with_suffix(s).name).exists() for s in (".json", ".jsonl"))


def _lines_inside(path: Path) -> bool:
    """A ``.json`` session whose first line is a header record: JSON Lines under the old
    name (some versions append records to it). A legacy document is one value holding
    the ``messages`` (written indented: its first line is ``{`` alone)."""
    try:
        with path.open("rb") as fh:
            first = fh.readline().strip()
    except OSError:
        return False
    header = next(json_objects([first]), None)
    return header is not None and "messages" not in header


def _description(call: dict[str, Any]) -> str | None:
    description = call.get("description") or call.get("displayName")
    return description if isinstance(description, str) else None


def _spawned_unnamed(call: dict[str, Any], output: str) -> bool:
    """A finished sub-agent call that does not name its sub-agent (older versions): its
    result is the sub-agent's, or its display the sub-agent's progress."""
    if isinstance(call.get("agentId"), str):
        return False
    display = call.get("resultDisplay")
    progress = isinstance(display, dict) and display.get("isSubagentProgress") is True
    # A masked output (``<tool_output_masked>`` and the original as JSON) still holds it.
    return progress or _SUBAGENT_RESULT in output[:300]


def _distance(time: str | None, start: str) -> float:
    if time is None:
        return float("inf")
    return abs((datetime.fromisoformat(time) - datetime.fromisoformat(start)).total_seconds())


def _chats_folder(path: Path) -> Path:
    return path.parent if path.parent.name == CHATS else path.parent.parent
