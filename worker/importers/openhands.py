"""OpenHands: a folder per conversation holding one JSON file per event.

Studied: the OpenHands agent SDK's event model (CLI 1.x: ``~/.openhands/conversations/
<id>/base_state.json`` and ``events/event-<n>-<uuid>.json`` with ``kind``), the older
server's file store (``~/.openhands/sessions/<id>/events/<n>.json`` with ``action`` or
``observation``, and ``metadata.json``), and public readers of both. The version is told
per event by its keys; an event of neither shape is counted, never guessed at.

SDK events (``kind``): ``MessageEvent`` (``llm_message``: role and content parts) as
``message/user``/``message/assistant``; ``ActionEvent`` as a ``tool/call`` (``tool_name``,
``action``; its ``thought`` first as assistant text, ``reasoning_content`` as thinking);
``ObservationEvent``, ``UserRejectObservation`` and ``AgentErrorEvent`` as the
``tool/result`` citing the call of their ``tool_call_id``; ``Condensation`` (``summary``)
as a ``compaction`` replacing what came before. Older events: ``action: message`` as a
message of its ``source``, ``finish`` as the agent's last message (its ``final_thought``:
no observation answers it), other actions as a ``tool/call`` (tool: the action) after
their ``args.thought`` as assistant text, an
``observation`` as the ``tool/result`` citing the action it names (``cause``),
``condensation`` as a ``compaction``. Only an observation answering a call imported
before it is a tool result: one caused by no action (the controller's errors) or by one
that is no tool call (a message) is ``message/context`` with its kind, or, without text,
counted. Skipped and counted: system prompts, state changes, pauses, recalls and other
kinds.

A sub-agent's conversation (the SDK's ``task`` tool, 1.x: ``subagents/<id>/`` in its
parent's folder, the same layout) is read with its parent, as its child: its start cites
the ``task`` call whose prompt is its first message, and the task's description titles it.
A command's non-zero ``exit_code`` flags its result as an error.

The cwd is ``base_state.json``'s ``workspace.working_dir``, else the first observation's
``metadata.working_dir`` (the sandbox's); the title is ``metadata.json``'s or the base
state's ``title``. OpenHands writes each event file whole and adds files in order:
``watch`` publishes the files after the ones it published.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.base import as_text, cut, iso_time, safe_id
from worker.importers.source_reading import (
    Item,
    SourceReading,
    SourceSession,
    field_of,
    read_document,
    said,
)

_INDEX: Final = re.compile(r"(\d+)")
_SKIPPED_ACTIONS: Final = frozenset(
    {"system", "recall", "change_agent_state", "agent_state_changed", "null"}
)
_RESULT_KINDS: Final = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
# An ACP tool call's final states (the SDK's ACP agent; earlier ones are its progress).
_ACP_FINAL: Final = frozenset({"completed", "failed"})
SUBAGENTS: Final = "subagents"  # a conversation's sub-agents' conversations (SDK task tool)


def event_files(conversation: Path) -> list[Path]:
    """The event files in the order OpenHands wrote them (their number)."""
    files = [f for f in (conversation / "events").glob("*.json") if f.is_file()]
    return sorted(files, key=lambda f: (_number(f.name), f.name))


def _number(name: str) -> int:
    found = _INDEX.search(name)
    return int(found.group(1)) if found else 0


def read_conversation(conversation: Path) -> SourceReading:
    """A conversation and, after it, its sub-agents' conversations (the SDK's ``task``
    tool keeps each in ``subagents/<id>/`` of its parent): children of it, each citing
    the ``task`` call that ran it."""
    reading = SourceReading()
    parent = _read_one(conversation, reading)
    children = [
        (_read_one(folder, reading), folder)
        for folder in sorted((conversation / SUBAGENTS).glob("*"))
        if (folder / "events").is_dir()
    ]
    children.sort(key=lambda pair: pair[0].time or "")
    unclaimed = [child for child, _ in children]
    for item in parent.items:
        prompt = _task_prompt(item)
        if prompt is None:
            continue
        # The task's conversation starts with the call's prompt, sent as its first message.
        for child in unclaimed:
            first = next((i for i in child.items if i.type == "message/user"), None)
            if first is not None and first.payload.get("text") == prompt:
                item.spawns = child.session_id
                description = field_of(item.payload, "input").get("description")
                if isinstance(description, str) and description.strip():
                    child.title = child.title or description
                unclaimed.remove(child)
                break
    for child, _ in children:
        child.parent = parent.session_id
    reading.sessions = [parent, *(child for child, _ in children)]
    return reading


def _task_prompt(item: Item) -> str | None:
    if item.type != "tool/call" or item.payload.get("tool") != "task":
        return None
    prompt = field_of(item.payload, "input").get("prompt")
    return prompt if isinstance(prompt, str) else None


def _read_one(conversation: Path, reading: SourceReading) -> SourceSession:
    base = _document(conversation / "base_state.json")
    metadata = _document(conversation / "metadata.json")
    title = metadata.get("title") or base.get("title")
    session = SourceSession(
        session_id=safe_id(str(base.get("id") or conversation.name), prefix="openhands-"),
        cwd=field_of(base, "workspace").get("working_dir"),
        time=iso_time(metadata.get("created_at")),
        title=title if isinstance(title, str) else None,
    )
    calls: set[str] = set()  # the call ids of the actions imported as tool calls
    for file in event_files(conversation):
        document = read_document(file, reading)
        if document is None:
            # Later events depend on this one (citations, order): stop here; a file still
            # being written is read whole on the next look.
            break
        event = document.value
        if not isinstance(event, dict):
            session.skipped["event:not-an-object"] += 1
            continue
        ref = str(event.get("id") or file.stem)
        name = event.get("kind") or event.get("action") or event.get("observation")
        if name == "ACPToolCallEvent" and str(event.get("tool_call_id")) in calls:
            # Emitted again as an ACP server reports on it: the first final one is read.
            session.skipped["event:ACPToolCallEvent:repeated"] += 1
            continue
        items = _sdk_event(ref, event) if "kind" in event else _server_event(ref, event)
        if items is None:
            session.skipped[f"event:{name}"] += 1
            continue
        session.cwd = session.cwd or _working_dir(event)
        items = _answers(items, calls)
        if not items:  # an observation answering no call, with nothing to say
            session.skipped[f"event:{name}:no-call"] += 1
            continue
        session.time = session.time or iso_time(event.get("timestamp"))
        calls.update(item.call for item in items if item.call)
        session.items.extend(items)
    if not isinstance(session.cwd, str) or not session.cwd:
        session.cwd = None
    return session


def _answers(items: list[Item], calls: set[str]) -> list[Item]:
    """A result answers a call imported before it; an observation that answers none (no
    ``cause``, or one naming a message or the first environment event) is not a tool
    result: its text is context, and one without text is dropped (the caller counts it)."""
    out: list[Item] = []
    calls = calls | {item.call for item in items if item.call}  # a pair in one event too
    for item in items:
        if item.type != "tool/result" or item.result_of in calls:
            out.append(item)
            continue
        text = str(item.payload.get("output") or "")
        if text.strip():
            payload = {"text": text, "observation": item.source_type.split(":")[-1]}
            out.append(Item(item.ref, "message/context", "system", payload, item.source_type,
                            item.time))  # fmt: skip
    return out


def _document(path: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _working_dir(event: dict[str, Any]) -> str | None:
    found = field_of(field_of(event, "observation"), "metadata").get("working_dir")
    found = found or field_of(field_of(event, "extras"), "metadata").get("working_dir")
    return found if isinstance(found, str) and found else None


def _sdk_event(ref: str, event: dict[str, Any]) -> list[Item] | None:
    kind = event.get("kind")
    time = iso_time(event.get("timestamp"))
    if kind == "MessageEvent":
        message = field_of(event, "llm_message")
        role = message.get("role")
        if role not in ("user", "assistant"):
            return None
        return [said(ref, str(role), as_text(message.get("content")), time, f"message:{role}")]
    if kind == "ActionEvent":
        items: list[Item] = []
        thought = as_text(event.get("thought")) if event.get("thought") else ""
        if thought:
            items.append(said(f"{ref}-thought", "assistant", thought, time, "action:thought"))
        if isinstance(event.get("reasoning_content"), str) and event["reasoning_content"]:
            payload = {"thinking": cut(event["reasoning_content"])}
            items.append(Item(f"{ref}-reasoning", "message/assistant", "assistant", payload,
                              "action:reasoning", time))  # fmt: skip
        tool = event.get("tool_name") or field_of(event, "tool_call").get("name")
        call = {"tool": tool, "input": event.get("action")}
        items.append(Item(ref, "tool/call", "assistant", call, "ActionEvent", time,
                          call=str(event.get("tool_call_id") or ref)))  # fmt: skip
        return items
    if kind in _RESULT_KINDS:
        observation = field_of(event, "observation")
        output = observation.get("content") or event.get("rejection_reason") or event.get("error")
        answer: dict[str, Any] = {"output": as_text(output)}
        # A command that failed is an observation without is_error: its exit code says (-1
        # is a command still running when the terminal gave up waiting, not a failure).
        exit_code = observation.get("exit_code")
        failed = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code > 0
        if kind != "ObservationEvent" or observation.get("is_error") is True or failed:
            answer["is_error"] = True
        return [Item(ref, "tool/result", "tool", answer, str(kind), time,
                     result_of=str(event.get("tool_call_id")))]  # fmt: skip
    if kind == "Condensation":
        summary = {"summary": as_text(event.get("summary"))}
        return [Item(ref, "compaction", "system", summary, "Condensation", time)]
    if kind == "ConversationErrorEvent":
        text = ": ".join(as_text(event[k]) for k in ("code", "detail") if event.get(k))
        return [Item(ref, "message/context", "system", {"text": f"error: {text}"}, kind, time)]
    if kind == "ACPToolCallEvent" and event.get("status") in _ACP_FINAL:
        return _acp_call(ref, event, time)
    return None  # system prompts, state updates, pauses: counted by the caller


def _acp_call(ref: str, event: dict[str, Any], time: str | None) -> list[Item]:
    """A tool call an ACP server ran (the SDK's ACP agent), in its final state: the call
    and its result (the event is emitted again at each update, the last one final)."""
    call_id = str(event.get("tool_call_id") or ref)
    call = {"tool": event.get("title"), "kind": event.get("tool_kind"),
            "input": event.get("raw_input")}  # fmt: skip
    output = event.get("raw_output") if event.get("raw_output") is not None else event.get(
        "content")  # fmt: skip
    answer: dict[str, Any] = {"output": as_text(output)}
    if event.get("is_error") is True or event.get("status") == "failed":
        answer["is_error"] = True
    return [
        Item(f"{ref}-call", "tool/call", "assistant", call, "ACPToolCallEvent", time,
             call=call_id),
        Item(ref, "tool/result", "tool", answer, "ACPToolCallEvent", time, result_of=call_id),
    ]  # fmt: skip


def _server_event(ref: str, event: dict[str, Any]) -> list[Item] | None:
    time = iso_time(event.get("timestamp"))
    action = event.get("action")
    args = field_of(event, "args")
    if action == "message":
        role = "user" if event.get("source") == "user" else "assistant"
        text = args.get("content") or event.get("message")
        return [said(ref, role, as_text(text), time, f"message:{event.get('source')}")]
    if action == "condensation":
        summary = {"summary": as_text(args.get("summary"))}
        return [Item(ref, "compaction", "system", summary, "condensation", time)]
    if isinstance(action, str) and action not in _SKIPPED_ACTIONS:
        # The agent's words beside a tool call are the action's ``thought``.
        thought = as_text(args.get("thought")) if args.get("thought") else ""
        items: list[Item] = []
        if thought.strip():
            items.append(said(f"{ref}-thought", "assistant", thought, time, "action:thought"))
        if action == "finish":  # its last message; no observation ever answers it
            final = as_text(args.get("final_thought") or event.get("message"))
            if final.strip():
                items.append(said(ref, "assistant", final, time, "action:finish"))
            return items
        call = {"tool": action, "input": args}
        items.append(Item(ref, "tool/call", "assistant", call, f"action:{action}", time, call=ref))
        return items
    observation = event.get("observation")
    if isinstance(observation, str) and observation not in _SKIPPED_ACTIONS:
        answer: dict[str, Any] = {"output": as_text(event.get("content"))}
        if observation == "error":
            answer["is_error"] = True
        return [Item(ref, "tool/result", "tool", answer, f"observation:{observation}", time,
                     result_of=str(event.get("cause")))]  # fmt: skip
    return None
