"""Amp (Sourcegraph): one JSON document per thread, ``$XDG_DATA_HOME/amp/threads/T-<id>.json``.

Studied: the thread store, the thread reducer and the Task tool bundled in
``@sourcegraph/amp`` 0.0.1767830505 and 0.0.1774569934 (``dist/main.js``): a thread is
written whole, pretty-printed, to ``<id>.json.amptmp`` and renamed over ``<id>.json`` after
each change, so a reading never sees half a file. From 0.0.1775390627 (April 2026) the CLI
keeps threads on Amp's server only (nothing local to import); later packages ship a binary.

- the thread is the session (``amp-<id>``), starting at ``created`` (milliseconds); its cwd
  is the first of ``env.initial.trees`` (a ``file://`` URI; a thread with no tree, as in
  execute mode, has none); ``title`` titles it; ``agentMode`` is kept in the start;
- lineage: a sub-agent's thread (the Task tool's, in earlier versions) names its caller in
  ``mainThreadID``, and the caller's ``tool_result`` names the sub-thread
  (``run.progress.threadID``): the child's start cites that call; in later versions the
  sub-agent runs inside the call, its turns the run's ``progress`` (``message``,
  ``tool_uses``): they become the child ``amp-<thread>-task-<call>``, published once the run
  is over; a handoff or fork names where it came from in ``relationships``
  (``role: "child"``): that thread is its parent;
- ``messages`` in order, by ``messageId``: a ``user`` message's ``text`` as
  ``message/user`` (harness text typed; a ``course-correction`` as ``message/context``)
  at its ``meta.sentAt``, its ``tool_result`` blocks as ``tool/result`` citing the call
  (``run.result``, or ``run.error`` flagged; cancelled and rejected runs flagged too) once
  the run is over; an ``assistant`` message's ``text``, ``thinking`` and ``tool_use``
  (``tool/call``), waiting while it streams; an ``info`` message's ``summary`` (the
  model's context restarts after it) as a ``compaction``, a ``manual_bash_invocation`` as
  ``command`` and ``command/output``, its ``text`` as ``message/context``;
- skipped and counted: ``image``, ``redacted_thinking``, ``server_tool_use`` and other
  blocks, other roles. Queued messages and the draft are not part of the conversation yet.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from worker.importers.base import Problem, as_text, cut, file_uri_path, safe_id
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    Stamp,
    field_of,
    from_millis,
    parents_first,
    said,
    tool_pair,
)
from worker.importers.whole_sources import ReadingImporter, data_home

NAME: Final = "amp"
THREAD_FILE: Final = re.compile(r"T-[0-9A-Za-z-]+\.json")
# A tool run in one of these states is over: its result is final.
# (A tuple: a damaged file may hold a list or an object where the status belongs.)
_FINAL: Final = ("done", "error", "cancelled", "rejected-by-user")


def session_id(thread_id: str) -> str:
    return safe_id(thread_id, prefix="amp-")


def thread_files(path: Path) -> list[Path]:
    """The thread documents of a threads folder (or the one file ``path``)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.glob("T-*.json") if THREAD_FILE.fullmatch(p.name))


def read_threads(path: Path, cache: SessionCache | None = None) -> SourceReading:
    """Every thread of a threads folder, parents before their children; with a ``cache``,
    a file whose size and modification time did not change is not parsed again."""
    reading = SourceReading()
    cache = SessionCache() if cache is None else cache
    for file in thread_files(path):
        try:
            info = file.stat()
            stamp = (info.st_mtime_ns, info.st_size)
            sessions = _cached(cache, file.name, stamp)
            if not sessions:
                thread = orjson.loads(file.read_bytes())
                if not isinstance(thread, dict) or not isinstance(thread.get("id"), str):
                    reading.problems.append(Problem(str(file), 0, "not an Amp thread: no id"))
                    continue
                sessions = read_thread(thread)
                for index, session in enumerate(sessions):
                    cache.put(f"{file.name}:{index}", stamp, session)
        except FileNotFoundError:
            continue  # the thread was deleted since the folder was listed
        except (OSError, orjson.JSONDecodeError) as exc:
            reading.problems.append(Problem(str(file), 0, f"cannot read the thread: {exc}"))
            continue
        reading.sessions.extend(sessions)
    reading.sessions = parents_first(reading.sessions)
    return reading


def _cached(cache: SessionCache, name: str, stamp: Stamp) -> list[SourceSession]:
    """A file's sessions (its thread, then the sub-agents run inside it) as last read, when
    the file did not change since."""
    found: list[SourceSession] = []
    while (session := cache.get(f"{name}:{len(found)}", stamp)) is not None:
        found.append(session)
    return found


def read_thread(thread: dict[str, Any]) -> list[SourceSession]:
    """One thread document as a session, then the sessions of the sub-agents its Task
    calls ran inside it."""
    title = thread.get("title")
    extra: dict[str, Any] = {}
    if isinstance(thread.get("agentMode"), str):
        extra["agent_mode"] = thread["agentMode"]
    parent, relation = _parent(thread)
    if relation:
        extra["relation"] = relation
    session = SourceSession(
        session_id=session_id(thread["id"]),
        cwd=_cwd(thread),
        time=from_millis(thread.get("created")),
        title=title if isinstance(title, str) else None,
        parent=session_id(parent) if parent else None,
        extra=extra,
    )
    messages = thread.get("messages")
    if not isinstance(messages, list):
        return [session]
    spawned, inline = _subagents(messages, thread["id"])
    children = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            session.skipped["message:invalid"] += 1
            continue
        ref = f"m{message.get('messageId', f'i{index}')}"
        items = _message(ref, message, spawned, session.skipped)
        session.items.extend(items)
        for item in items:
            run = inline.get(item.result_of or "")
            if run is not None and item.result_of in spawned:
                child = spawned[item.result_of]
                children.append(_inline(child, session, run, item.time))
    return [session, *children]


def _cwd(thread: dict[str, Any]) -> str | None:
    trees = field_of(field_of(thread, "env"), "initial").get("trees")
    first = trees[0] if isinstance(trees, list) and trees else None
    uri = first.get("uri") if isinstance(first, dict) else None
    return file_uri_path(uri) if isinstance(uri, str) else None


def _parent(thread: dict[str, Any]) -> tuple[str | None, str | None]:
    """The thread this one came from, and how (``subagent``, ``handoff``, ``fork``)."""
    main = thread.get("mainThreadID")
    if isinstance(main, str) and main and main != thread["id"]:
        return main, "subagent"
    relationships = thread.get("relationships")
    for link in relationships if isinstance(relationships, list) else []:
        if isinstance(link, dict) and link.get("role") == "child":
            other = link.get("threadID")
            if isinstance(other, str) and other:
                kind = link.get("type")
                return other, kind if isinstance(kind, str) else None
    return None, None


def _subagents(
    messages: list[Any], own: str
) -> tuple[dict[str, str], dict[str, tuple[dict[str, Any], dict[str, Any]]]]:
    """Tool call id -> the session of the sub-agent it started; and, for a sub-agent run
    inside the call (later versions: its turns are the run's ``progress``), the call and
    its run."""
    spawned: dict[str, str] = {}
    inline: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    calls: dict[str, dict[str, Any]] = {}
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls[str(block.get("id"))] = block
            if block.get("type") != "tool_result":
                continue
            call_id, run = str(block.get("toolUseID")), field_of(block, "run")
            if isinstance(run.get("progress"), list) and call_id in calls:
                spawned[call_id] = safe_id(f"{own}-task-{call_id}", prefix="amp-")
                inline[call_id] = (calls[call_id], run)
                continue
            child = field_of(run, "progress").get("threadID") or field_of(run, "~debug").get(
                "threadID"
            )
            if isinstance(child, str) and child and child != own:
                spawned[call_id] = session_id(child)
    return spawned, inline


def _inline(
    child: str, parent: SourceSession, called: tuple[dict[str, Any], dict[str, Any]],
    time: str | None,
) -> SourceSession:  # fmt: skip
    """A sub-agent run inside its Task call: the prompt, then each turn's text and tool
    uses (``progress``: ``message``, ``tool_uses`` with ``status`` and ``result``); it waits
    until the run is over, as the turns change while it runs."""
    call, run = called
    arguments = field_of(call, "input")
    description = arguments.get("description")
    session = SourceSession(
        session_id=child, cwd=parent.cwd, time=time, parent=parent.session_id,
        title=description if isinstance(description, str) else None,
        extra={"relation": "subagent"},
    )  # fmt: skip
    if isinstance(arguments.get("prompt"), str):
        session.items.append(said("prompt", "user", arguments["prompt"], time, "Task:prompt"))
    for number, turn in enumerate(run.get("progress") or []):
        if not isinstance(turn, dict):
            session.skipped["turn:invalid"] += 1
            continue
        if isinstance(turn.get("message"), str) and turn["message"].strip():
            session.items.append(said(f"t{number}", "assistant", turn["message"], time, "turn"))
        uses = turn.get("tool_uses")
        for index, use in enumerate(uses if isinstance(uses, list) else []):
            if isinstance(use, dict):
                session.items.extend(_inline_tool(f"t{number}-{index}", child, use, time))
    over = run.get("status") in _FINAL
    for item in session.items:
        item.complete = over
    return session


def _inline_tool(ref: str, child: str, use: dict[str, Any], time: str | None) -> list[Item]:
    status = use.get("status")
    output = use.get("result")
    if isinstance(output, dict) and isinstance(output.get("output"), str):
        output = output["output"]
    call_id = f"{child}-{use.get('id')}"  # the sub-agent's own ids: kept apart from the thread's
    return tool_pair(ref, call_id, use.get("tool_name"), use.get("input"), time, "tool_use",
                     output=output if status in ("done", "error") else f"({status})",
                     error=status != "done")  # fmt: skip


def _message(
    ref: str, message: dict[str, Any], spawned: dict[str, str], skipped: Counter[str]
) -> list[Item]:
    role = message.get("role")
    content = message.get("content")
    if role not in ("user", "assistant", "info") or not isinstance(content, list):
        skipped[f"message:{role}"] += 1
        return []
    time = from_millis(field_of(message, "meta").get("sentAt"))
    streaming = role == "assistant" and field_of(message, "state").get("type") == "streaming"
    corrected = field_of(message, "source").get("type") == "course-correction"
    items: list[Item] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        made = _block(f"{ref}-{index}", str(role), block, time, spawned, corrected) if isinstance(
            block, dict
        ) else []  # fmt: skip
        if not made:
            skipped[f"content:{kind}"] += 1
        for item in made:
            item.complete = item.complete and not streaming
        items.extend(made)
    return items


def _block(
    ref: str, role: str, block: dict[str, Any], time: str | None, spawned: dict[str, str],
    corrected: bool,
) -> list[Item]:  # fmt: skip
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        if role == "info" or corrected:
            context = {"text": cut(block["text"])}
            source = "course-correction" if corrected else "info:text"
            return [Item(ref, "message/context", "system", context, source, time)]
        return [said(ref, role, block["text"], time, f"{role}:text")]
    if role == "assistant" and kind == "thinking" and isinstance(block.get("thinking"), str):
        thought = {"thinking": cut(block["thinking"])}
        return [Item(ref, "message/assistant", "assistant", thought, "thinking", time)]
    if role == "assistant" and kind == "tool_use":
        call_id = str(block.get("id"))
        payload: dict[str, Any] = {"tool": block.get("name"), "input": block.get("input")}
        # ``complete: false``: the model is still writing the input.
        return [Item(ref, "tool/call", "assistant", payload, "tool_use", time,
                     complete=block.get("complete") is not False, call=call_id,
                     spawns=spawned.get(call_id))]  # fmt: skip
    if role == "user" and kind == "tool_result":
        return [_result(ref, block, time)]
    if role == "info" and kind == "summary":
        summary = field_of(block, "summary")
        if summary.get("type") == "message" and isinstance(summary.get("summary"), str):
            text = {"summary": cut(summary["summary"])}
            return [Item(ref, "compaction", "system", text, "summary", time)]
    if role == "info" and kind == "manual_bash_invocation":
        return _shell(ref, block, time)
    return []


def _result(ref: str, block: dict[str, Any], time: str | None) -> Item:
    run = field_of(block, "run")
    status = run.get("status")
    output: object
    if status == "done":
        result = run.get("result")
        output = result["output"] if isinstance(result, dict) and "output" in result else result
    elif status == "error":
        error = run.get("error")
        output = error.get("message") if isinstance(error, dict) and "message" in error else error
    else:
        output = f"({status})"
    payload: dict[str, Any] = {"output": as_text(output)}
    if status != "done":
        payload["is_error"] = True
    return Item(ref, "tool/result", "tool", payload, "tool_result", time,
                complete=status in _FINAL, result_of=str(block.get("toolUseID")))  # fmt: skip


def _shell(ref: str, block: dict[str, Any], time: str | None) -> list[Item]:
    """A command the user ran with ``$`` in the prompt, and what it printed."""
    args, run = field_of(block, "args"), field_of(block, "toolRun")
    command = Item(f"{ref}-cmd", "command", "user", {"text": as_text(args.get("cmd"))},
                   "manual_bash_invocation", time)  # fmt: skip
    result = field_of(run, "result")
    if run.get("status") == "done":
        printed = as_text(result.get("output"))
    else:
        printed = as_text(field_of(run, "error").get("message") or f"({run.get('status')})")
    output: dict[str, Any] = {"text": printed}
    if isinstance(result.get("exitCode"), int):
        output["exit_code"] = result["exitCode"]
    return [command, Item(f"{ref}-out", "command/output", "tool", output,
                          "manual_bash_invocation", time,
                          complete=run.get("status") in _FINAL)]  # fmt: skip


class AmpImporter(ReadingImporter):
    name: ClassVar[str] = "amp"
    help: ClassVar[str] = "Amp threads, one JSON file each ($XDG_DATA_HOME/amp/threads)"
    env_vars: ClassVar[tuple[str, ...]] = ("XDG_DATA_HOME",)
    detect_order: ClassVar[int] = 60

    def default_locations(self) -> list[Path]:
        # Amp uses ~/.local/share on every OS unless XDG_DATA_HOME moves it.
        return [data_home() / "amp" / "threads"]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        if path.is_dir():
            return any(THREAD_FILE.fullmatch(p.name) for p in path.glob("T-*.json"))
        return THREAD_FILE.fullmatch(path.name) is not None and any(
            line.lstrip().startswith(b"{") for line in head[:1]
        )

    def sources(self, root: Path) -> Iterator[Path]:
        """The folders holding thread files (Amp's ``threads``, or one given directly)."""
        return iter(sorted({file.parent for file in root.rglob("T-*.json")
                            if THREAD_FILE.fullmatch(file.name)}, key=str))  # fmt: skip

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_threads(path, cache)
