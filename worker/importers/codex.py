"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Lines of ``{"timestamp", "type", "payload"}``:

- ``session_meta`` (payload ``id``, ``cwd``, ...) starts the session (the rollout's own id);
  a fork (``forked_from_id``) or a spawned sub-agent (``source.subagent.thread_spawn.
  parent_thread_id``) is a child of the session it names;
- ``response_item`` holds what the model saw: ``message`` (role and content parts) becomes
  ``message/user`` or ``message/assistant``; ``function_call``/``custom_tool_call``
  (``name``, ``arguments``, ``call_id``) a ``tool/call``; ``function_call_output``/
  ``custom_tool_call_output`` a ``tool/result`` citing its call (``is_error`` when it
  reports a non-zero exit or ``success: false``, and ``interrupted`` too when it ends
  "aborted by user": Ctrl-C); ``reasoning`` with a
  readable summary a ``message/assistant`` (encrypted reasoning is skipped);
  ``web_search_call`` (the hosted search: ``action``, ``status``) a ``tool/call`` of
  ``web_search`` and the ``tool/result`` citing it;
  ``developer``/``system`` messages (instructions) are skipped;
- text the harness puts in the user's role is typed for what it is and stays searchable:
  ``<environment_context>``, ``<user_instructions>``, "# AGENTS.md instructions" and
  ``<turn_aborted>`` parts are ``message/context``; ``<user_shell_command>`` (``!cmd``) is
  a ``command``; the IDE extension's "# Context from my IDE setup:" block is
  ``message/context`` and the request after its "## My request for Codex:" heading is the
  ``message/user``;
- a thread named in ``$CODEX_HOME/session_index.jsonl`` (``id``, ``thread_name``; a rename
  appends a line, the last wins) is titled by that name when its rollout is read;
- ``compacted`` (payload ``message``) becomes a ``compaction`` that replaces every event
  since the previous one: Codex replaces the whole history with the summary;
- a sub-agent's start cites the ``spawn_agent`` call whose output names it (its thread id,
  or with multi_agent_v2 its task name, the ``agent_path`` of its ``session_meta``), read
  earlier in the same import (rollouts sort by time: the parent's first), and the call's
  ``task_name`` titles it; ``agent_message`` items (a task from another agent, an answer to
  it) are ``message/user`` for a task and ``message/context`` otherwise, their readable text
  only (the payload the model wrote is ``encrypted_content``: skipped, counted);
- ``tool_search_call``/``web_search_call`` are ``tool/call``s too (``tool_search``,
  ``web_search``: the ``arguments`` or the ``action``), ``tool_search_output`` the
  result (the tools found); an older rollout's ``inter_agent_communication`` line (a
  message between agents) is read as an ``agent_message``; a ``realtime_item``
  ``transcript_segment`` (voice mode: what the user or the voice model said) is a
  ``message/user`` or ``message/assistant`` with ``realtime``;
- ``event_msg`` (UI notifications that repeat the response items) and ``turn_context``
  are skipped and counted, as is any record type this module does not know.

The format has no session end: ``import`` ends a session whose last event is older than
``--idle-seconds``, ``watch`` one whose file has not grown for that long.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import orjson

from contracts import harness
from worker.importers.base import (
    JsonRecordConverter,
    Outgoing,
    Spawn,
    SpawnLinks,
    as_text,
    cut,
    iso_time,
    safe_id,
)

NAME: Final = "codex"
_ROLLOUT_UUID: Final = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F-]{27})$")
_CALLS: Final = (
    "function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call"
)  # fmt: skip
_OUTPUTS: Final = ("function_call_output", "custom_tool_call_output", "tool_search_output")
# A call's tool when its item names none: the item type says it.
_CALL_TOOLS: Final = {
    "local_shell_call": "shell", "tool_search_call": "tool_search", "web_search_call": "web_search"
}  # fmt: skip
_SPAWN: Final = "spawn_agent"
_WEB_SEARCH: Final = "web_search_call"
_SESSION_INDEX: Final = "session_index.jsonl"
# session_index.jsonl -> ((mtime, size), thread id -> name), read once per change.
_NAMES: dict[Path, tuple[tuple[int, int], dict[str, str]]] = {}
# The header of a message between agents: "Message Type: NEW_TASK\nTask name: ...".
_AGENT_MESSAGE_TYPE: Final = re.compile(r"^Message Type: (\w+)")
_TASKS: Final = ("NEW_TASK", "FOLLOWUP_TASK")
# How a command interrupted by Ctrl-C ends its output.
_ABORTED: Final = re.compile(r"^aborted by user$", re.MULTILINE)
# How a command's output reports its exit (exec_command; apply_patch).
_EXIT: Final = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)


def user_parts(text: str) -> list[tuple[str, str, str]]:
    """A user-role text part as (event type, surface, text) pieces: harness context apart
    from what the user wrote (the request inside an IDE context block is the user's)."""
    ide = harness.split_ide_request(text)
    if ide is not None:
        context, asked = ide
        return [("message/context", "system", context)] + (
            [("message/user", "user", asked)] if asked else []
        )
    type_ = harness.harness_type(text)
    if type_ is not None:
        return [(type_, harness.SURFACES[type_], text)]
    return [("message/user", "user", text)]


class CodexConverter(JsonRecordConverter):
    def __init__(self, path: Path, *, links: SpawnLinks | None = None) -> None:
        super().__init__(path, NAME)
        self.session: str | None = None
        self.raw_session = ""  # the rollout's own id, as sub-agents' rollouts name it
        self.calls: dict[str, tuple[int, object]] = {}  # call_id -> (seq, tool name)
        self.spawn_names: dict[str, str] = {}  # spawn_agent call_id -> its task_name
        self.links: SpawnLinks = {} if links is None else links
        found = _ROLLOUT_UUID.search(path.stem)
        self.fallback_id = safe_id(found.group(1) if found else path.stem)

    def _record(self, record: dict[str, Any]) -> list[Outgoing]:
        kind = record.get("type")
        payload = record.get("payload")
        if not isinstance(payload, dict):
            self.tally.skip(f"record:{kind}:no-payload")
            return []
        if kind == "session_meta":
            return self._meta(payload, iso_time(record.get("timestamp")))
        if kind == "realtime_item" and payload.get("type") != "transcript_segment":
            self.tally.skip(f"realtime_item:{payload.get('type')}")
            return []
        if kind not in ("response_item", "compacted", "inter_agent_communication",
                        "realtime_item"):  # fmt: skip
            self.tally.skip(f"record:{kind}")
            return []
        # After the skips: most of a rollout's records are skipped ones (event_msg, turn_context).
        time = iso_time(record.get("timestamp"))
        out: list[Outgoing] = []
        if self.session is None:  # an older rollout without session_meta
            self.session = self.fallback_id
            out.append(self.sessions.start(self.session, time=time, cwd=None))
        if kind == "compacted":
            body = {"summary": as_text(payload.get("message"))}
            out.append(self.sessions.compaction(self.session, time, body, "compacted"))
            return out
        if kind == "realtime_item":
            out.append(self._spoken(self.session, payload, time))
            return out
        if kind == "inter_agent_communication":  # older versions' agent_message
            letter: dict[str, Any] = {
                "content": [{"text": payload.get("content")}],
                "author": payload.get("author"),
                "recipient": payload.get("recipient"),
            }
            message = self._agent_message(self.session, letter, time, "inter_agent_communication")
            out.extend([message] if message is not None else [])
            return out
        if payload.get("type") == "message" and payload.get("role") == "user":
            out.extend(self._user(self.session, payload, time))
            return out
        if payload.get("type") == _WEB_SEARCH:
            out.extend(self._web_search(self.session, payload, time))
            return out
        item = self._item(self.session, payload, time)
        if item is not None:
            out.append(item)
        return out

    def _user(self, session: str, item: dict[str, Any], time: str | None) -> list[Outgoing]:
        """One event per run of parts of one kind (context, command, the user's words)."""
        content = item.get("content")
        texts = [as_text(content)] if not isinstance(content, list) else []
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(cut(part["text"]))
            else:  # an image or another part without text: not searchable
                self.tally.skip(f"user-part:{part.get('type') if isinstance(part, dict) else '?'}")
        runs: list[tuple[str, str, str]] = []
        for text in texts:
            for type_, surface, piece in user_parts(text) if text else []:
                if runs and runs[-1][0] == type_:
                    runs[-1] = (type_, surface, runs[-1][2] + "\n" + piece)
                else:
                    runs.append((type_, surface, piece))
        source = "response_item:message"
        return [
            self.sessions.emit(session, type_, surface, time, {"text": text}, source)
            for type_, surface, text in runs
        ]

    def _web_search(self, session: str, item: dict[str, Any], time: str | None) -> list[Outgoing]:
        """The hosted web search: one item is both the call (its ``action``: a search, an
        opened page, a find in it) and its outcome (``status``; the pages read are not
        kept), so it is a call and the result citing it."""
        source = f"response_item:{_WEB_SEARCH}"
        arguments = {"tool": "web_search", "arguments": item.get("action")}
        call = self.sessions.emit(session, "tool/call", "assistant", time, _clean(arguments),
                                  source)  # fmt: skip
        status = item.get("status") if isinstance(item.get("status"), str) else None
        result = _clean({"tool": "web_search", "status": status})
        if status is not None and status != "completed":
            result["is_error"] = True
        return [call, self.sessions.emit(session, "tool/result", "tool", time, result, source,
                                         cites=[(session, call.seq)])]  # fmt: skip

    def _meta(self, payload: dict[str, Any], time: str | None) -> list[Outgoing]:
        if self.session is not None:
            self.tally.skip("record:session_meta:repeated")
            return []
        raw = payload.get("id")
        self.raw_session = raw if isinstance(raw, str) else ""
        self.session = safe_id(raw) if isinstance(raw, str) and raw else self.fallback_id
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        extra = {
            key: payload[key]
            for key in ("cli_version", "originator", "model_provider")
            if isinstance(payload.get(key), str)
        }
        parent = _parent_of(payload)
        parent_id = safe_id(parent) if parent else None
        meta_time = iso_time(payload.get("timestamp")) or time
        spawn = self._spawn_of(payload, parent) if parent else None
        cites = [(spawn.session_id, spawn.seq)] if spawn else None
        out = [self.sessions.start(self.session, time=meta_time, cwd=cwd, parent=parent_id,
                                   extra=extra, cites=cites)]  # fmt: skip
        if spawn is not None and spawn.description:
            title = {"title": cut(spawn.description)}
            out.append(self.sessions.emit(self.session, "session/title", "system", None, title,
                                          "spawn_agent:task_name"))  # fmt: skip
        name = thread_names(Path(self.path)).get(self.raw_session)
        if name:
            named = {"title": cut(name)}
            out.append(self.sessions.emit(self.session, "session/title", "system", None, named,
                                          "session_index:thread_name"))  # fmt: skip
        return out

    def _spawn_of(self, meta: dict[str, Any], parent: str) -> Spawn | None:
        """The spawn_agent call of the parent that started this sub-agent: its output named
        the sub-agent's task name (multi_agent_v2) or thread id."""
        path = meta.get("agent_path")
        source = meta.get("source")
        subagent = source.get("subagent") if isinstance(source, dict) else None
        spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
        if not isinstance(path, str) and isinstance(spawn, dict):
            path = spawn.get("agent_path")
        for key in (path, self.raw_session):
            if isinstance(key, str) and key and (parent, key) in self.links:
                return self.links[(parent, key)]
        return None

    def _item(self, session: str, item: dict[str, Any], time: str | None) -> Outgoing | None:
        kind = item.get("type")
        source = f"response_item:{kind}"
        if kind == "message":
            return self._message(session, item, time, source)
        if kind in _CALLS:
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            name = item.get("name") or _CALL_TOOLS.get(str(kind))
            arguments = item.get("arguments", item.get("input", item.get("action")))
            payload = _clean({"tool": name, "call_id": call_id, "arguments": arguments})
            out = self.sessions.emit(session, "tool/call", "assistant", time, payload, source)
            if call_id:
                self.calls[call_id] = (out.seq, name)
                if name == _SPAWN:
                    self.spawn_names[call_id] = _task_name(arguments)
            return out
        if kind in _OUTPUTS:
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            call = self.calls.get(call_id) if call_id else None
            output = item.get("output")
            if output is None and isinstance(item.get("tools"), list):  # tool_search_output
                output = orjson.dumps(item["tools"]).decode()
            if isinstance(output, dict) and "content" in output:
                output = output["content"]
            payload = _clean({"call_id": call_id, "output": as_text(output),
                              "tool": call[1] if call else None})  # fmt: skip
            if _failed(item.get("output")):
                payload["is_error"] = True
            if isinstance(output, str) and _ABORTED.search(output[:500]):
                payload.update({"is_error": True, "interrupted": True})
            cites = [(session, call[0])] if call else None
            if call is not None and call[1] == _SPAWN and call_id:
                self._note_spawn(session, call[0], self.spawn_names.get(call_id, ""), output)
            return self.sessions.emit(session, "tool/result", "tool", time, payload, source,
                                      cites=cites)  # fmt: skip
        if kind == "agent_message":
            return self._agent_message(session, item, time, source)
        if kind == "reasoning":
            # Encrypted reasoning has an empty summary list: nothing readable.
            summary = as_text(item["summary"]) if item.get("summary") else ""
            if not summary.strip():
                self.tally.skip("response_item:reasoning:unreadable")
                return None
            payload = {"reasoning": summary}
            return self.sessions.emit(session, "message/assistant", "assistant", time, payload,
                                      source)  # fmt: skip
        self.tally.skip(source)
        return None

    def _spoken(self, session: str, item: dict[str, Any], time: str | None) -> Outgoing:
        """A realtime (voice) conversation's transcript segment: what the user or the
        voice model said."""
        role = item.get("role")
        type_, surface = ("message/assistant", "assistant") if role == "assistant" else (
            "message/user", "user")  # fmt: skip
        payload = _clean({"text": as_text(item.get("text")), "realtime": True,
                          "realtime_session_id": item.get("realtime_session_id")})  # fmt: skip
        return self.sessions.emit(session, type_, surface, time, payload,
                                  "realtime_item:transcript_segment")  # fmt: skip

    def _note_spawn(self, session: str, seq: int, task_name: str, output: object) -> None:
        """Remember which call spawned the sub-agent its output names, for the sub-agent's
        rollout (read after this one)."""
        try:
            named = orjson.loads(output) if isinstance(output, str) else output
        except orjson.JSONDecodeError:
            return
        if not (isinstance(named, dict) and self.raw_session):
            return
        spawn = Spawn(session, seq, task_name or None)
        for key in ("task_name", "agent_id"):
            value = named.get(key)
            if isinstance(value, str) and value:
                self.links[(self.raw_session, value)] = spawn

    def _agent_message(
        self, session: str, item: dict[str, Any], time: str | None, source: str
    ) -> Outgoing | None:
        texts: list[str] = []
        for part in item.get("content") or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else "?"
                self.tally.skip(f"agent_message-part:{kind}")
        text = "\n".join(texts)
        if not text:
            self.tally.skip(f"{source}:empty")
            return None
        header = _AGENT_MESSAGE_TYPE.match(text)
        if header is not None and header.group(1) in _TASKS:
            type_, surface = "message/user", "user"
        else:
            type_, surface = "message/context", "system"
        payload = _clean({"text": cut(text), "author": item.get("author"),
                          "recipient": item.get("recipient")})  # fmt: skip
        return self.sessions.emit(session, type_, surface, time, payload, source)

    def _message(
        self, session: str, item: dict[str, Any], time: str | None, source: str
    ) -> Outgoing | None:
        role = item.get("role")
        if role not in ("user", "assistant"):
            self.tally.skip(f"{source}:{role}")
            return None
        text = as_text(item.get("content"))
        type_ = "message/user" if role == "user" else "message/assistant"
        return self.sessions.emit(session, type_, str(role), time, {"text": text}, source)


def thread_names(rollout: Path) -> dict[str, str]:
    """Thread id -> its name in the ``session_index.jsonl`` of the ``$CODEX_HOME`` holding
    ``rollout`` (``sessions/YYYY/MM/DD/`` or ``archived_sessions/``): the last line for an
    id wins, a rename appends one. Read again when the index changes."""
    for home in rollout.parents[:5]:
        index = home / _SESSION_INDEX
        try:
            stat = index.stat()
        except OSError:
            continue
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = _NAMES.get(index)
        if cached is None or cached[0] != stamp:
            names: dict[str, str] = {}
            with index.open("rb") as fh:
                for line in fh:
                    try:
                        entry = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue  # a line being written
                    if not isinstance(entry, dict):
                        continue
                    thread, name = entry.get("id"), entry.get("thread_name")
                    if isinstance(thread, str) and isinstance(name, str) and name.strip():
                        names[thread] = name
            cached = _NAMES[index] = (stamp, names)
        return cached[1]
    return {}


def _parent_of(meta: dict[str, Any]) -> str | None:
    """The session this one came from, where the rollout names it: a fork's
    ``forked_from_id``, or a sub-agent's ``source.subagent.thread_spawn.parent_thread_id``."""
    forked = meta.get("forked_from_id")
    if isinstance(forked, str) and forked:
        return forked
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return parent if isinstance(parent, str) and parent else None


def _failed(output: object) -> bool:
    """Whether a tool output reports a failure: ``success: false``, a JSON ``metadata``
    with a non-zero ``exit_code`` (older shell tools), or a text headed by "Process exited
    with code N" (``exec_command``) or "Exit code: N" (``apply_patch``), N not 0."""
    if isinstance(output, dict):
        if output.get("success") is False:
            return True
        output = output.get("content")
    if not isinstance(output, str):
        return False
    try:
        parsed = orjson.loads(output) if output.startswith("{") else None
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        metadata = parsed.get("metadata")
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        return isinstance(code, int) and code != 0
    found = _EXIT.search(output[:500])
    return found is not None and found.group(1) != "0"


def _task_name(arguments: object) -> str:
    """A spawn_agent call's ``task_name`` (its arguments are a JSON string)."""
    try:
        parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
    except orjson.JSONDecodeError:
        return ""
    name = parsed.get("task_name") if isinstance(parsed, dict) else None
    return name if isinstance(name, str) else ""


def _clean(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


def looks_like(record: dict[str, Any]) -> bool:
    return (
        record.get("type") in ("session_meta", "response_item", "event_msg", "turn_context")
        and isinstance(record.get("payload"), dict)
        and "timestamp" in record
    )
