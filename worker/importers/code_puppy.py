"""Code Puppy (PyPI ``code-puppy``): its sessions, one JSON envelope each, rewritten whole
after each turn. Read from the writer in ``code-puppy`` 0.0.946 (``session_storage.py``,
``config.py`` ``auto_save_session_if_enabled``, ``cli_runner.py`` ``execute_single_prompt``,
``tools/agent_tools.py`` and ``tools/subagent_invocation.py``, pydantic-ai 2.51's
``messages.py`` for the message shapes, pydantic-ai-harness's compaction):

- ``autosaves/<name>.json`` in Code Puppy's cache folder (``$XDG_CACHE_HOME/code_puppy``
  when set, else ``~/.code_puppy``): the main agent's session, ``auto_session_<time>_<pid>``
  or the name given with ``-r NAME`` (that name is its title); ``<name>_meta.json`` beside
  it holds the working folder (``scope_key``);
- ``subagent_sessions/<session id>.json`` in its data folder (``$XDG_DATA_HOME/code_puppy``,
  else ``~/.code_puppy``): a sub-agent ``invoke_agent`` ran, with a ``.txt`` of its agent
  and first prompt beside it. Its start cites the ``invoke_agent`` call whose result names
  its ``session_id`` (read after the parent: ``autosaves`` sorts first); a session the
  sub-agent continues later (``session_id`` given again) is the same child.

The envelope (``format`` 2, ``encoding`` ``pydantic-ai-messages``) holds pydantic-ai's
messages: a ``request``'s parts (``user-prompt`` as ``message/user``, ``tool-return`` and
``retry-prompt`` as the ``tool/result`` of their ``tool_call_id``, a ``system-prompt`` that
starts "Summary of previous conversation:" as a ``compaction``), a ``response``'s parts
(``text``, ``thinking``, ``tool-call`` as ``tool/call``; the provider's built-in tools'
calls and returns). Each message carries its time. A compaction rewrites the history: the
summary, then the kept messages under their old times; what was published stays, and the
reading goes on after the last message published (``CodePuppyConverter``).

Skipped and counted: the system prompt (each request's ``instructions``, ``system-prompt``
parts), images, audio and files, tool-availability changes, thinking kept only encrypted;
older ``.pkl`` sessions (pickles, which Code Puppy converts on its next start) are not read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import (
    Converter,
    Outgoing,
    Problem,
    Spawn,
    SpawnLinks,
    as_text,
    cut,
    file_time,
    iso_time,
    safe_id,
)
from worker.importers.plugin import ConvertOptions
from worker.importers.source_reading import (
    Item,
    ReadingConverter,
    SessionCache,
    SourceReading,
    SourceSession,
    read_document,
    said,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed_document

NAME: Final = "code-puppy"
PREFIX: Final = "puppy-"
AGENT_PREFIX: Final = "puppy-agent-"
AUTOSAVES: Final = "autosaves"
SUBAGENTS: Final = "subagent_sessions"
AUTO_NAME: Final = "auto_session_"  # names Code Puppy gives: not titles
SIDECARS: Final = ("_meta", "_acp")  # .json files beside a session that are not sessions
SUMMARY: Final = "Summary of previous conversation:"
SPAWN_TOOLS: Final = frozenset({"invoke_agent", "invoke_agent_with_model"})
# The part kinds pydantic-ai writes for results and calls: tool search's and capability
# loads' parts are these with a ``tool_kind``; the provider's built-in tools have their own.
RESULT_KINDS: Final = frozenset({"tool-return", "builtin-tool-return"})
CALL_KINDS: Final = frozenset({"tool-call", "builtin-tool-call"})
FAILED: Final = frozenset({"failed", "denied", "interrupted"})


def _json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def read_session(path: Path) -> SourceReading:
    """One session envelope as it is now (Code Puppy writes it atomically)."""
    reading = SourceReading()
    document = read_document(path, reading)
    if document is None:
        return reading
    envelope = document.value
    if not (
        isinstance(envelope, dict)
        and isinstance(envelope.get("format"), int)
        and isinstance(envelope.get("messages"), list)
    ):
        reading.problems.append(
            Problem(str(path), 0, "not a Code Puppy session (an envelope with messages)")
        )
        return reading
    agent = path.parent.name == SUBAGENTS
    stem = path.stem
    sid = safe_id(stem, prefix=AGENT_PREFIX if agent else PREFIX)
    side = _json(path.with_suffix(".txt") if agent else path.with_name(f"{stem}_meta.json"))
    side = side if isinstance(side, dict) else {}
    cwd = side.get("scope_key")
    session = SourceSession(
        session_id=sid, cwd=cwd if isinstance(cwd, str) and cwd else None, time=None
    )
    if agent and isinstance(side.get("agent_name"), str):
        session.extra["agent_name"] = side["agent_name"]
    elif not agent and not stem.startswith(AUTO_NAME):
        session.title = stem  # a name the user gave (-r NAME, /session save)
    version = envelope.get("code_puppy")
    if isinstance(version, str):
        session.extra["version"] = version
    if envelope.get("encoding", "pydantic-ai-messages") != "pydantic-ai-messages":
        # A plug-in's own history, stored as plain JSON: not pydantic-ai messages.
        session.skipped[f"encoding:{envelope.get('encoding')}"] += 1
    else:
        session.items = _items(sid, envelope["messages"], file_time(path), session.skipped)
    times = [item.time for item in session.items if item.time]
    session.time = min(times) if times else file_time(path)
    reading.sessions.append(session)
    return reading


def _message_key(message: dict[str, Any]) -> str:
    """A message's name across rewrites: its kind and time (a compaction keeps the messages
    it does not summarise, with their times), else a digest of its parts."""
    when = message.get("timestamp")
    if isinstance(when, str) and when:
        return f"{str(message.get('kind', '?'))[:3]}-{when}"
    digest = hashlib.sha256(orjson.dumps(message.get("parts"), default=str)).hexdigest()
    return f"{str(message.get('kind', '?'))[:3]}-{digest[:16]}"


def _items(
    sid: str, messages: list[Any], fallback: str | None, skipped: Counter[str]
) -> list[Item]:
    items: list[Item] = []
    calls: dict[str, Item] = {}
    keys: Counter[str] = Counter()  # two messages of one kind at the same time stay apart
    time = fallback
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            skipped["message:unreadable"] += 1
            continue
        kind = message.get("kind")
        key = _message_key(message)
        keys[key] += 1
        key = key if keys[key] == 1 else f"{key}#{keys[key]}"
        time = iso_time(message.get("timestamp")) or time
        if kind == "request":
            if message.get("instructions"):
                skipped["request:instructions"] += 1
            if not message["parts"]:
                skipped["request:empty"] += 1
        elif kind == "response":
            if not message["parts"]:
                skipped["response:empty"] += 1
        else:
            skipped[f"message:{kind}"] += 1
            continue
        for position, part in enumerate(message["parts"]):
            if not isinstance(part, dict):
                skipped[f"{kind}-part:unreadable"] += 1
                continue
            ref = f"{key}-{position}"
            when = iso_time(part.get("timestamp")) or time
            items.extend(_part(sid, ref, str(kind), part, when, calls, skipped))
    return items


def _part(
    sid: str,
    ref: str,
    kind: str,
    part: dict[str, Any],
    time: str | None,
    calls: dict[str, Item],
    skipped: Counter[str],
) -> list[Item]:
    part_kind = part.get("part_kind")
    content = part.get("content")
    source = f"{kind}:{part_kind}"
    if part_kind in CALL_KINDS and kind == "response":
        item = _call(sid, ref, part, time, source)
        if item.call:
            calls[item.call] = item
        return [item]
    if part_kind in RESULT_KINDS:
        result = _result(sid, ref, part, time, source)
        _link_spawn(result, part, calls)
        return [result]
    if part_kind == "retry-prompt":
        return [_retry(sid, ref, part, time, source)]
    if kind == "request" and part_kind == "system-prompt":
        if isinstance(content, str) and content.startswith(SUMMARY):
            summary = content[len(SUMMARY) :].strip()
            return [Item(ref, "compaction", "system", {"summary": cut(summary)}, source, time)]
        skipped["request-part:system-prompt"] += 1
        return []
    if kind == "request" and part_kind == "user-prompt":
        text = _user_text(content, skipped)
        if not text.strip():
            skipped["request-part:user-prompt:empty"] += 1
            return []
        return [said(ref, "user", text, time, source)]
    if kind == "response" and part_kind == "text":
        if not (isinstance(content, str) and content.strip()):
            skipped["response-part:text:empty"] += 1
            return []
        return [said(ref, "assistant", content, time, source)]
    if kind == "response" and part_kind == "thinking":
        if not (isinstance(content, str) and content.strip()):
            skipped["response-part:thinking:encrypted"] += 1
            return []
        payload = {"thinking": cut(content)}
        return [Item(ref, "message/assistant", "assistant", payload, source, time)]
    if kind == "response" and part_kind == "compaction":
        if isinstance(content, str) and content.strip():
            return [Item(ref, "compaction", "system", {"summary": cut(content)}, source, time)]
        skipped["response-part:compaction:encrypted"] += 1
        return []
    skipped[f"{kind}-part:{part_kind}"] += 1
    return []


def _user_text(content: object, skipped: Counter[str]) -> str:
    """A prompt's text: a string, or its text items (images, files, audio, cache points
    counted by their kind)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and item.get("kind") == "text-content":
            texts.append(str(item.get("content", "")))
        else:
            kind = item.get("kind") if isinstance(item, dict) else type(item).__name__
            skipped[f"user-prompt:{kind}"] += 1
    return "\n".join(text for text in texts if text)


def _call_key(sid: str, call_id: object, ref: str) -> str:
    # Provider call ids are unique within a session, not across sessions.
    return f"{sid}:{call_id}" if isinstance(call_id, str) and call_id else f"{sid}:{ref}"


def _call(sid: str, ref: str, part: dict[str, Any], time: str | None, source: str) -> Item:
    args = part.get("args")
    if isinstance(args, str):
        with contextlib.suppress(orjson.JSONDecodeError):  # else the model's text, as it is
            args = orjson.loads(args) if args.strip() else {}
    payload: dict[str, Any] = {"tool": part.get("tool_name"), "input": args}
    if str(part.get("part_kind", "")).startswith("builtin-"):
        payload["server_executed"] = True
    key = _call_key(sid, part.get("tool_call_id"), ref)
    item = Item(ref, "tool/call", "assistant", payload, source, time, call=key)
    if payload["tool"] in SPAWN_TOOLS and isinstance(args, dict):
        # Continuing a sub-agent's session: the call names it.
        named = args.get("session_id")
        if isinstance(named, str) and named:
            item.spawns = safe_id(named, prefix=AGENT_PREFIX)
    return item


def _result(sid: str, ref: str, part: dict[str, Any], time: str | None, source: str) -> Item:
    content = part.get("content")
    payload: dict[str, Any] = {"tool": part.get("tool_name"), "output": _output(content)}
    outcome = part.get("outcome")
    error = outcome in FAILED
    if isinstance(content, dict):
        code = content.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            payload["exit_code"] = code
            error = error or code != 0
        error = error or content.get("success") is False or bool(content.get("error"))
    if error:
        payload["is_error"] = True
    if outcome == "interrupted":
        payload["interrupted"] = True
    key = _call_key(sid, part.get("tool_call_id"), ref)
    return Item(ref, "tool/result", "tool", payload, source, time, result_of=key)


def _output(content: object) -> str:
    """A tool's return as text: a command's own output, a file's text, else the whole."""
    if isinstance(content, dict):
        if "stdout" in content or "stderr" in content:
            text = "".join(str(content.get(k) or "") for k in ("stdout", "stderr"))
            error = content.get("error")
            return cut(text + (f"\n{error}" if isinstance(error, str) and error else ""))
        if isinstance(content.get("content"), str):
            return cut(str(content["content"]))
        if isinstance(content.get("response"), str):  # a sub-agent's answer
            return cut(str(content["response"]))
    return as_text(content)


def _retry(sid: str, ref: str, part: dict[str, Any], time: str | None, source: str) -> Item:
    """The model asked to try again: a tool call's failed validation (its result), or an
    answer that was not what the agent wanted (context)."""
    text = as_text(part.get("content"))
    if part.get("tool_name"):
        payload = {"tool": part.get("tool_name"), "output": text, "is_error": True}
        key = _call_key(sid, part.get("tool_call_id"), ref)
        return Item(ref, "tool/result", "tool", payload, source, time, result_of=key)
    return Item(ref, "message/context", "system", {"text": text, "retry": True}, source, time)


def _link_spawn(result: Item, part: dict[str, Any], calls: dict[str, Item]) -> None:
    """An ``invoke_agent`` result names the sub-agent's session: its call spawns it."""
    content = part.get("content")
    call = calls.get(result.result_of or "")
    if call is None or call.payload.get("tool") not in SPAWN_TOOLS:
        return
    named = content.get("session_id") if isinstance(content, dict) else None
    if not (isinstance(named, str) and named):
        return
    child = safe_id(named, prefix=AGENT_PREFIX)
    if call.spawns is None:
        call.spawns = child
    elif call.spawns != child and child not in call.also_spawns:
        call.also_spawns = (*call.also_spawns, child)


class CodePuppyConverter(ReadingConverter):
    """Readings of one session file. A compaction rewrites the history (the summary, then
    the kept messages under their old times): what was published stays, the compaction is
    published, and the reading goes on after the last item published. A sub-agent's file
    takes its parent from the run's links (the parent's file is read first)."""

    def __init__(self, path: Path, links: SpawnLinks, idle_s: float | None) -> None:
        super().__init__(NAME, lambda: read_session(path), idle_s=idle_s)
        self.links = links
        self.last: dict[str, tuple[str, str | None]] = {}  # session -> last ref, its time
        self.compacted: dict[str, list[str]] = {}  # session -> compactions published
        self.cwds: dict[str, str | None] = {}
        # Each published item's event, this run only (not in the token: it grows with
        # the session): what a later compaction dropped from the file.
        self.seqs: dict[str, dict[str, int]] = {}

    def _session(self, source: SourceSession) -> list[Outgoing]:
        sid = source.session_id
        out: list[Outgoing] = []
        progress = self.progress.get(sid)
        if progress is None:
            spawn = self.links.get((NAME, sid))
            if spawn is not None and source.parent is None:
                source.parent = spawn.session_id
                self.spawned.setdefault(sid, (spawn.session_id, spawn.seq))
                source.cwd = source.cwd or spawn.cwd
        elif sid in self.last:
            out += self._realign(sid, source.items)
        self.cwds[sid] = source.cwd
        out += super()._session(source)
        progress = self.progress[sid]
        if progress.done:
            item = source.items[progress.done - 1]
            self.last[sid] = (item.ref, item.time)
        return out

    def _realign(self, sid: str, items: list[Item]) -> list[Outgoing]:
        """After a rewrite: continue after the last item published (by its ref; else by
        time), publishing first any compaction the rewrite put before it."""
        progress = self.progress[sid]
        ref, when = self.last[sid]
        if progress.done <= len(items) and items[progress.done - 1].ref == ref:
            return []
        at = next((i for i in range(len(items) - 1, -1, -1) if items[i].ref == ref), None)
        if at is None:
            later = [i for i, item in enumerate(items) if item.time and when and item.time > when]
            at = (later[0] if later else len(items)) - 1
        out: list[Outgoing] = []
        done = self.compacted.setdefault(sid, [])
        kept = {item.ref for item in items}
        for item in items[: at + 1]:
            if item.type == "compaction" and item.ref not in done:
                out += self._compaction(sid, item, kept)
        progress.done = at + 1
        return out

    def _compaction(self, sid: str, item: Item, kept: set[str]) -> list[Outgoing]:
        """A compaction seen after its session was published: it replaces the published
        events whose messages the rewrite dropped (those it kept stay); after a restart,
        which messages they were is not known: everything before it."""
        seqs = self.seqs.get(sid)
        if not seqs:
            return self._item(sid, item)
        state = self.sessions.by_id[sid]
        gone = {seq for ref, seq in seqs.items() if ref not in kept}
        replaced = [seq for seq in state.replaceable if seq in gone]
        if not replaced:
            return self._item(sid, item)  # nothing of it left to replace: context
        state.replaceable = [seq for seq in state.replaceable if seq not in gone]
        done = self.compacted.setdefault(sid, [])
        done.append(item.ref)
        out = self.sessions.emit(sid, "compaction", "system", item.time, item.payload,
                                 item.source_type, replaces=replaced,
                                 source_ref=f"{sid}-{item.ref}")  # fmt: skip
        return [out]

    def _item(self, sid: str, item: Item) -> list[Outgoing]:
        if item.type == "compaction":
            self.compacted.setdefault(sid, []).append(item.ref)
            if not self.sessions.by_id[sid].replaceable:
                # The file no longer holds what it summarised (read after the compaction,
                # or all of it already replaced): the summary stands as context.
                summary = item.payload.get("summary", "")
                payload = {"text": summary, "compacted": True}
                item = Item(item.ref, "message/context", "system", payload, item.source_type,
                            item.time)  # fmt: skip
        out = super()._item(sid, item)
        self.seqs.setdefault(sid, {})[item.ref] = out[0].seq
        for child in (item.spawns, *item.also_spawns):
            if child and (NAME, child) not in self.links:
                self.links[(NAME, child)] = Spawn(
                    sid, out[0].seq, _describe(item), cwd=self.cwds.get(sid)
                )
        return out

    def token(self) -> dict[str, Any]:
        token = super().token()
        token["code_puppy"] = {
            "last": {sid: list(last) for sid, last in self.last.items()},
            "compacted": self.compacted,
        }
        return token

    def restore(self, token: dict[str, Any]) -> None:
        super().restore(token)
        mine = token.get("code_puppy", {})
        self.last = {sid: (str(v[0]), v[1]) for sid, v in mine.get("last", {}).items()}
        self.compacted = {sid: list(v) for sid, v in mine.get("compacted", {}).items()}


def _describe(call: Item) -> str | None:
    arguments = call.payload.get("input")
    agent = arguments.get("agent_name") if isinstance(arguments, dict) else None
    return agent if isinstance(agent, str) else None


def _folder(variable: str) -> Path:
    """Code Puppy's folder for one XDG kind: ``$XDG_*/code_puppy`` only when the variable is
    set, else ``~/.code_puppy`` for all of them (``config._get_xdg_dir``)."""
    base = os.environ.get(variable)
    return Path(base) / "code_puppy" if base else Path.home() / ".code_puppy"


class CodePuppyImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = (
        "Code Puppy sessions (~/.code_puppy/autosaves, ~/.code_puppy/subagent_sessions)"
    )
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_CACHE_HOME", "XDG_DATA_HOME")
    detect_order: ClassVar[int] = 62

    def default_locations(self) -> list[Path]:
        return [_folder("XDG_CACHE_HOME") / AUTOSAVES, _folder("XDG_DATA_HOME") / SUBAGENTS]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``.json`` envelope naming the Code Puppy version that wrote it."""
        text = b"".join(head)
        return (
            path.suffix == ".json"
            and not path.stem.endswith(SIDECARS)
            and text.lstrip().startswith(b"{")
            and b'"code_puppy":' in text
            and b'"encoding":' in text
        )

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(
            root,
            "*.json",
            lambda path: not path.stem.endswith(SIDECARS) and sniffed_document(self, path),
        )

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_session(path)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        links: SpawnLinks = {} if options.links is None else options.links
        return CodePuppyConverter(path, links, options.idle_s)
