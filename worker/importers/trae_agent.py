"""Trae Agent (ByteDance's ``trae-agent``): trajectories, one JSON document per run, rewritten
whole after each LLM interaction and each agent step. ``trae-cli run`` writes the file
``--trajectory-file`` names, default ``trajectories/trajectory_<local time>.json`` under the
folder it was started in (no folder of its own: point ``import`` at it);
``trae-cli interactive`` writes each task over the same file.

Read from the writer in trae-agent 0.1.0 (its public source at commit e839e55:
``utils/trajectory_recorder.py``, ``agent/base_agent.py``, ``agent/trae_agent.py``,
``tools/base.py``) and recorded from it:

- the run is the session: ``trae-<file name>-<start_time's digits>`` (a later run written
  to the same file is another session); cwd: the project path the first user message
  names (``[Project root path]:``, the ``-w`` folder); ``provider`` and ``model``;
- the ``task`` as ``message/user`` (the first interaction's user message wraps it in
  Trae's template with the project path);
- ``agent_steps`` in order, each with the LLM interaction of the same position (a step
  records the response it acted on; an interaction is written when the model answered,
  before the step's tools ran): the response's ``content`` as ``message/assistant``, its
  ``tool_calls`` as ``tool/call`` (``call_id``), the step's ``tool_results`` as the
  ``tool/result`` of their call (``result`` and ``error``: a command's stdout and stderr;
  ``success: false`` flags it ``is_error``), its ``reflection`` and ``error`` as
  ``message/context``; a user message Trae sends itself between steps (no tool result in
  it: "It seems that you have not completed the task.", an empty patch's error) as
  ``message/context``;
- an interaction after the last recorded step (the step's tools run, or the run was
  interrupted or crashed before the step was recorded): its text; its calls are counted
  (``call:unfinished``) until the step records them with their results;
- the run's end (``end_time`` set): ``message/context`` with ``exit_status``
  (``completed``/``failed``) and the ``final_result``.

Times: the interactions' and steps' ``timestamp`` (local, without a zone: read in this
machine's zone unless ``--timezone`` says). Skipped and counted: the system prompt, the
``task_done`` call (the model's signal that it is done: Trae runs nothing for it and ends
the run), a step's ``lakeview_summary``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, ClassVar, Final

from worker.importers.base import (
    Converter,
    Problem,
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
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed

NAME: Final = "trae-agent"
PREFIX: Final = "trae-"
DONE_TOOL: Final = "task_done"
# The first user message: "[Project root path]:\n<path>\n\n[Problem statement]: ...". In
# docker mode it names no host path (a literal "\\workspace\\n\\n": the container's).
TEMPLATE: Final = "[Project root path]:"
_PROJECT: Final = re.compile(r"\A\[Project root path\]:\n([^\n]*)\n")


def read_trajectory(path: Path, assume_tz: tzinfo | None = None) -> SourceReading:
    """One trajectory as it is now; a half-written file is reported and read again on the
    next change."""
    reading = SourceReading()
    read = read_document(path, reading)
    if read is None:
        return reading
    document = read.value
    if not (
        isinstance(document, dict)
        and isinstance(document.get("agent_steps"), list)
        and isinstance(document.get("llm_interactions"), list)
    ):
        reading.problems.append(Problem(str(path), 0, "not a Trae Agent trajectory"))
        return reading
    zone = assume_tz or datetime.now().astimezone().tzinfo or UTC
    reading.sessions.append(_TraeAgentReader(path, document, zone).session)
    return reading


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


class _TraeAgentReader:
    def __init__(self, path: Path, document: dict[str, Any], zone: tzinfo) -> None:
        self.zone = zone
        start = document.get("start_time")
        digits = re.sub(r"\D", "", start) if isinstance(start, str) else ""
        self.interactions = [_object(i) for i in _list(document.get("llm_interactions"))]
        self.steps = [_object(s) for s in _list(document.get("agent_steps"))]
        extra = {k: document[k] for k in ("provider", "model") if isinstance(document.get(k), str)}
        if "provider" in extra:
            extra["model_provider"] = extra.pop("provider")
        self.time = self._time(start) or file_time(path)
        self.session = SourceSession(
            session_id=safe_id(f"{path.stem}-{digits or 'unstarted'}", prefix=PREFIX),
            cwd=self._cwd(),
            time=self.time,
            extra=extra,
        )
        self.sid, self.skipped = self.session.session_id, self.session.skipped
        self.tools: dict[str, object] = {}  # call id -> tool name
        self._read(document)

    def _time(self, raw: object) -> str | None:
        return iso_time(raw, assume=self.zone)

    def _cwd(self) -> str | None:
        """The project path of the first message sent (the first step's, when the first
        model call failed and no interaction was written)."""
        first = [_list(i.get("input_messages")) for i in self.interactions[:1]] or [
            _list(s.get("llm_messages")) for s in self.steps[:1]
        ]
        for messages in first:
            for message in messages:
                content = _object(message).get("content")
                found = _PROJECT.match(content) if isinstance(content, str) else None
                if found and found.group(1).strip():
                    return found.group(1).strip()
        return None

    def _read(self, document: dict[str, Any]) -> None:
        items = self.session.items
        task = document.get("task")
        if isinstance(task, str) and task.strip():
            items.append(Item("task", "message/user", "user", {"text": cut(task)}, "task",
                              self.time))  # fmt: skip
        sent = self.time  # when the next interaction's input was ready: the last step's end
        for index in range(max(len(self.steps), len(self.interactions))):
            interaction = self.interactions[index] if index < len(self.interactions) else {}
            step = self.steps[index] if index < len(self.steps) else None
            items.extend(self._turn(index + 1, interaction, step, sent))
            sent = (self._time(step.get("timestamp")) if step else None) or sent
        end = document.get("end_time")
        if isinstance(end, str) and end:
            success = document.get("success") is True
            final = document.get("final_result")
            status = "completed" if success else "failed"
            payload: dict[str, Any] = {
                "text": cut(final) if isinstance(final, str) and final else status,
                "exit_status": status,
            }
            if not success:
                payload["is_error"] = True
            items.append(Item("end", "message/context", "system", payload, "end",
                              self._time(end) or self.time))  # fmt: skip

    def _turn(
        self,
        number: int,
        interaction: dict[str, Any],
        step: dict[str, Any] | None,
        sent_at: str | None,
    ) -> list[Item]:
        ref = f"s{number}"
        asked = self._time(interaction.get("timestamp"))
        done = self._time(step.get("timestamp")) if step is not None else None
        answered = asked or done or self.time
        # A step whose model call failed has no interaction: its ``llm_messages`` are what
        # it was sending (the previous step's results, Trae's nudge; the first, the prompt).
        sent = interaction or {"input_messages": (step or {}).get("llm_messages")}
        items = self._inputs(ref, sent, sent_at or answered)
        # The step's copy of the response (the interaction's when the step is not written).
        response = _object(step.get("llm_response")) if step is not None else {}
        response = response or _object(interaction.get("response"))
        content = response.get("content")
        if isinstance(content, str) and content.strip():
            payload: dict[str, Any] = {"text": cut(content)}
            if isinstance(response.get("model"), str):
                payload["model"] = response["model"]
            items.append(Item(f"{ref}-text", "message/assistant", "assistant", payload,
                              "response:content", answered))  # fmt: skip
        for index, call in enumerate(_list(response.get("tool_calls"))):
            items.extend(self._call(f"{ref}-call-{index}", _object(call), step, answered))
        if step is None:
            return items
        at = done or answered
        for index, result in enumerate(_list(step.get("tool_results"))):
            items.append(self._result(f"{ref}-result-{index}", _object(result), at))
        reflection = step.get("reflection")
        if isinstance(reflection, str) and reflection.strip():
            items.append(Item(f"{ref}-reflection", "message/context", "system",
                              {"text": cut(reflection)}, "step:reflection", at))  # fmt: skip
        error = step.get("error")
        if isinstance(error, str) and error.strip():
            failed = {"text": cut(error), "is_error": True}
            items.append(Item(f"{ref}-error", "message/context", "system", failed, "step:error",
                              at))  # fmt: skip
        if step.get("lakeview_summary"):
            self.skipped["step:lakeview_summary"] += 1
        return items

    def _inputs(self, ref: str, interaction: dict[str, Any], time: str | None) -> list[Item]:
        """What an interaction sent that the steps do not hold: the first one's system
        prompt (counted) and Trae's own user messages between steps. The first user
        message is the task in Trae's template (imported from ``task``); tool results and
        reflections are the previous step's (imported from it)."""
        items: list[Item] = []
        for index, message in enumerate(_list(interaction.get("input_messages"))):
            message = _object(message)
            role, content = message.get("role"), message.get("content")
            if role == "system":
                self.skipped["message:system"] += 1
            elif role == "user" and message.get("tool_result") is None:
                text = content if isinstance(content, str) else as_text(content)
                if text.startswith(TEMPLATE):
                    # The task in Trae's template (versions before 2025-08 sent the first
                    # messages again after a reply that neither called a tool nor finished).
                    continue
                if text.strip():
                    items.append(Item(f"{ref}-input-{index}", "message/context", "system",
                                      {"text": cut(text)}, "input:user", time))  # fmt: skip
            elif role not in ("user", "assistant"):
                self.skipped[f"message:{role}"] += 1
        return items

    def _call(
        self, ref: str, call: dict[str, Any], step: dict[str, Any] | None, time: str | None
    ) -> list[Item]:
        name, call_id = call.get("name"), call.get("call_id")
        if name == DONE_TOOL:
            self.skipped[f"call:{DONE_TOOL}"] += 1
            return []
        if step is None:  # its step (and its result) not written yet, or never
            self.skipped["call:unfinished"] += 1
            return []
        self.tools[str(call_id)] = name
        payload: dict[str, Any] = {"tool": name, "input": call.get("arguments")}
        if isinstance(call_id, str):
            payload["call_id"] = call_id
        return [Item(ref, "tool/call", "assistant", payload, "response:tool_call", time,
                     call=f"{self.sid}:{call_id or ref}")]  # fmt: skip

    def _result(self, ref: str, result: dict[str, Any], time: str | None) -> Item:
        call_id = result.get("call_id")
        texts = [t for t in (result.get("result"), result.get("error")) if isinstance(t, str) and t]
        payload: dict[str, Any] = {
            "tool": self.tools.get(str(call_id)),
            "output": cut("\n".join(texts)),
        }
        if isinstance(call_id, str):
            payload["call_id"] = call_id
        if result.get("success") is False:
            payload["is_error"] = True
        cites = f"{self.sid}:{call_id}" if isinstance(call_id, str) else None
        return Item(ref, "tool/result", "tool", payload, "tool_result", time, result_of=cites)


class TraeAgentImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "Trae Agent trajectories, trajectory_*.json (where trae-cli ran)"
    detect_order: ClassVar[int] = 59

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``.json`` whose first lines are a trajectory's header (written indented:
        ``task``, times, ``provider``, ``model``, ``max_steps``, then ``llm_interactions``)."""
        text = b"".join(head)
        return (
            path.suffix == ".json"
            and b'"max_steps"' in text
            and b'"start_time"' in text
            and b'"llm_interactions"' in text
        )

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(root, "*.json", lambda path: sniffed(self, path))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_trajectory(path)

    def converter(self, path: Path, options: ConvertOptions) -> Converter:
        # The trajectory's times have no zone: read in --timezone's when given.
        zone = options.assume_tz
        return ReadingConverter(
            self.name, lambda: read_trajectory(path, zone), idle_s=options.idle_s
        )
