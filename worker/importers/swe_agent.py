"""SWE-agent (``SWE-agent/SWE-agent``, package ``sweagent``): trajectories, one JSON
document per instance run (``*.traj``), rewritten whole after each step:
``trajectories/<user>/<run>/<instance id>/<instance id>.traj`` (``sweagent run``: under the
folder it ran in; ``run-batch``: under ``$SWE_AGENT_TRAJECTORY_DIR``, default its checkout's
``trajectories``; ``--output_dir`` moves the run folder). A run with the retry agent
writes each finished attempt to ``attempt_<n>/<instance id>.traj`` and, in the instance
folder, a file whose ``attempts`` list repeats them (and, once the run chose, a copy of the
best one at its top level).

Read from the writer in ``sweagent`` 1.1.0 (``agent/agents.py``: ``DefaultAgent``'s
``get_trajectory_data`` and ``_append_history``, ``RetryAgent``'s; ``types.py``:
``HistoryItem``, ``TrajectoryStep``) and checked on the real trajectories of 0.x and 1.x
(SWE-agent's own demonstrations and test data):

- the run is the session: ``swe-agent-<file name>-<digest of its history up to the first
  reply>`` (the file records no times and no run id; what the model was first told and
  first answered never changes as the file grows, and a copied file keeps it); the
  attempts a retry file lists are sessions the same way (an attempt's own file gives the
  same id); cwd: the first step's ``state.working_dir`` (in the agent's environment, e.g.
  ``/testbed``);
- ``history`` in order (what the model saw): the first ``user`` message (the task in the
  instance template) as ``message/user``; ``assistant`` messages: their
  ``thinking_blocks`` as thinking, their ``thought`` (the reply's text without the
  command; 0.x replies without one: the whole text) as ``message/assistant``, and the
  command as a ``tool/call``: each ``tool_calls`` entry (function calling: its name and
  arguments), else the ``action`` the agent parsed from the text (a line run in its
  shell: ``bash`` with its ``command``); the ``tool`` (``tool_call_ids``) or ``user``
  observation that follows as the ``tool/result`` (the step's raw ``observation`` from
  ``trajectory`` when the step is found there, else the templated message). The
  ``submit`` command's result is the submission (``submitted``); the file keeps no exit
  status of a command: no result is marked an error;
- a reply whose observation the history lacks (0.x did not add the one of the step that
  ended the run): its result from the step;
- the ``trajectory`` steps after the history's last reply (1.0 left the step that ended
  the run out of the history) from the step: thought, action, observation;
- ``info.exit_status`` (with the submission) as ``message/context`` at the end.

Times: none in the file: each event has the file's modification time. Skipped and counted:
the system message (the template's), demonstrations (``is_demo``: a solved example from
the config, not this run), replies the agent rejected and asked again for (``trajectory``
steps not in the history: a format error, a blocked command), a retry file's copy of its
chosen attempt, images in a multimodal message, other roles.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import orjson

from contracts import harness
from worker.importers.base import Problem, as_text, cut, file_time, safe_id
from worker.importers.source_reading import (
    Item,
    SessionCache,
    SourceReading,
    SourceSession,
    read_document,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed

NAME: Final = "swe-agent"
PREFIX: Final = "swe-agent-"
SUFFIX: Final = ".traj"
# The retry agent's folder of one attempt, inside the instance folder.
_ATTEMPT_DIR: Final = re.compile(r"attempt_\d+")
# The top-level keys of a trajectory, written first (json.dumps(indent=2), in this order).
_HEAD_KEYS: Final = (b'"environment"', b'"trajectory"', b'"history"', b'"attempts"')


def read_trajectory(path: Path) -> SourceReading:
    """One trajectory as it is now; a half-written file is reported and read again on the
    next change."""
    reading = SourceReading()
    read = read_document(path, reading)
    if read is None:
        return reading
    document = read.value
    if not isinstance(document, dict):
        reading.problems.append(Problem(str(path), 0, "not a SWE-agent trajectory"))
        return reading
    attempts = document.get("attempts")
    if isinstance(attempts, list):  # the retry agent's file: each finished attempt
        for attempt in attempts:
            if isinstance(attempt, dict) and isinstance(attempt.get("history"), list):
                reading.sessions.append(_session(path, attempt))
        if reading.sessions and isinstance(document.get("history"), list):
            # The chosen attempt, copied to the top level once the run chose.
            reading.sessions[-1].skipped["attempt:chosen-copy"] += 1
        if not reading.sessions:
            reading.problems.append(Problem(str(path), 0, "a retry run with no attempt yet"))
        return reading
    if not isinstance(document.get("history"), list):
        reading.problems.append(Problem(str(path), 0, "not a SWE-agent trajectory"))
        return reading
    reading.sessions.append(_session(path, document))
    return reading


def _object(value: object) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (versions omit and vary)."""
    return value if isinstance(value, dict) else {}


def _state(step: object) -> dict[str, Any]:
    """A step's environment state: an object (1.x), or its JSON text (0.x)."""
    state = step.get("state") if isinstance(step, dict) else None
    if isinstance(state, str):
        try:
            state = orjson.loads(state)
        except orjson.JSONDecodeError:
            return {}
    return _object(state)


def _run_id(path: Path, history: list[Any]) -> str:
    """The file's name and a digest of the history up to the first reply (written by the
    first save and never rewritten)."""
    first = next(
        (i for i, m in enumerate(history) if isinstance(m, dict) and m.get("role") == "assistant"),
        len(history) - 1,
    )
    digest = hashlib.sha256(orjson.dumps(history[: first + 1], option=orjson.OPT_SORT_KEYS))
    return f"{path.stem}-{digest.hexdigest()[:12]}"


def _session(path: Path, document: dict[str, Any]) -> SourceSession:
    history: list[Any] = document["history"]
    steps = document.get("trajectory")
    steps = steps if isinstance(steps, list) else []
    cwd = next((_state(s).get("working_dir") for s in steps if _state(s).get("working_dir")), None)
    info = _object(document.get("info"))
    extra: dict[str, Any] = {}
    if isinstance(info.get("swe_agent_version"), str):
        extra["version"] = info["swe_agent_version"]
    model = _model(document.get("replay_config"))
    if model:
        extra["model"] = model
    session = SourceSession(
        session_id=safe_id(_run_id(path, history), prefix=PREFIX),
        cwd=cwd.strip() if isinstance(cwd, str) and cwd.strip() else None,
        time=file_time(path),
        extra=extra,
    )
    _SweAgentReader(session, history, steps, info).read()
    return session


def _model(replay_config: object) -> str | None:
    """The model's name in the run's configuration (1.x keeps it as JSON text)."""
    if isinstance(replay_config, str):
        try:
            replay_config = orjson.loads(replay_config)
        except orjson.JSONDecodeError:
            return None
    name = _object(_object(_object(replay_config).get("agent")).get("model")).get("name")
    return name if isinstance(name, str) and name else None


class _SweAgentReader:
    def __init__(
        self,
        session: SourceSession,
        history: list[Any],
        steps: list[Any],
        info: dict[str, Any],
    ) -> None:
        self.session, self.history, self.steps = session, history, steps
        self.sid, self.skipped, self.time = session.session_id, session.skipped, session.time
        self.info = info
        self.next_step = 0  # the first trajectory step not yet matched to a reply
        self.waiting: list[str] = []  # the reply's calls whose observations come next
        self.step: dict[str, Any] | None = None  # the step of the reply being answered
        self.prompted = False

    def read(self) -> None:
        for index, message in enumerate(self.history):
            if not isinstance(message, dict):
                self.skipped["message:not-an-object"] += 1
                continue
            self.session.items.extend(self._message(f"h{index}", message))
        self._cut_off()
        # Steps after the last reply the history has (1.0 kept the step that ended the
        # run, the submission, out of it): from the trajectory.
        for index in range(self.next_step, len(self.steps)):
            self.session.items.extend(self._step(f"t{index}", self.steps[index]))
        self.next_step = len(self.steps)
        status = self.info.get("exit_status")
        if isinstance(status, str) and status:
            payload: dict[str, Any] = {"text": f"exit: {status}", "exit_status": status}
            if isinstance(self.info.get("submission"), str):
                payload["submission"] = cut(self.info["submission"])
            self.session.items.append(
                Item("exit", "message/context", "system", payload, "info:exit", self.time)
            )

    def _message(self, ref: str, message: dict[str, Any]) -> list[Item]:
        role = message.get("role")
        if message.get("is_demo"):
            self.skipped["message:demonstration"] += 1
            return []
        if role == "system":
            self.skipped["message:system"] += 1
            return []
        if role == "assistant":
            return self._assistant(ref, message)
        if role == "tool" or (role == "user" and self.waiting):
            return self._observation(ref, message)
        if role == "user":
            text = self._text(message.get("content"))
            if not text.strip():
                self.skipped["message:user:empty"] += 1
                return []
            if self.prompted:  # the agent's own text to the model (its templates)
                return [Item(ref, "message/context", "system", {"text": cut(text)}, "user:agent",
                             self.time)]  # fmt: skip
            self.prompted = True
            type_ = harness.harness_type(text) or "message/user"
            surface = harness.SURFACES.get(type_, "user")
            return [Item(ref, type_, surface, {"text": cut(text)}, "user", self.time)]
        self.skipped[f"message:{role}"] += 1
        return []

    def _text(self, content: object) -> str:
        """A message's text: a string, or its text parts (other parts counted)."""
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind != "text":
                    self.skipped[f"content:{kind}"] += 1
        return as_text(content) if content is not None else ""

    def _match_step(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The trajectory step of this reply: the next one with its action and thought;
        the steps passed over were replies the agent rejected and asked again for."""
        for index in range(self.next_step, len(self.steps)):
            step = self.steps[index]
            if (
                isinstance(step, dict)
                and step.get("action") == message.get("action")
                and step.get("thought") == message.get("thought")
            ):
                self._unmatched(index)
                self.next_step = index + 1
                return step
        return None

    def _unmatched(self, upto: int) -> None:
        if upto > self.next_step:
            self.skipped["step:requeried"] += upto - self.next_step
            self.next_step = upto

    def _assistant(
        self, ref: str, message: dict[str, Any], step: dict[str, Any] | None = None
    ) -> list[Item]:
        self._cut_off()
        self.step = step if step is not None else self._match_step(message)
        items: list[Item] = []
        blocks = message.get("thinking_blocks")
        thinking = "\n\n".join(
            b["thinking"]
            for b in (blocks if isinstance(blocks, list) else [])
            if isinstance(b, dict) and isinstance(b.get("thinking"), str)
        )
        if thinking.strip():
            payload = {"thinking": cut(thinking)}
            items.append(Item(f"{ref}-thinking", "message/assistant", "assistant", payload,
                              "assistant:thinking", self.time))  # fmt: skip
        thought = message.get("thought")
        text = thought if isinstance(thought, str) else self._text(message.get("content"))
        if text.strip():
            items.append(Item(f"{ref}-text", "message/assistant", "assistant",
                              {"text": cut(text)}, "assistant", self.time))  # fmt: skip
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            for index, call in enumerate(calls):
                items.append(self._call(f"{ref}-call-{index}", call))
        elif isinstance(message.get("action"), str) and message["action"].strip():
            call_id = f"{ref}-action"
            self.waiting.append(call_id)
            command = message["action"].rstrip("\n")
            action: dict[str, Any] = {"tool": "bash", "input": {"command": command}}
            items.append(Item(call_id, "tool/call", "assistant", action, "assistant:action",
                              self.time, call=f"{self.sid}:{call_id}"))  # fmt: skip
        if not items:
            self.skipped["message:assistant:empty"] += 1
        return items

    def _call(self, ref: str, call: object) -> Item:
        function = _object(call.get("function") if isinstance(call, dict) else None)
        arguments = function.get("arguments")
        try:
            parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        except orjson.JSONDecodeError:
            parsed = arguments
        call_id = call.get("id") if isinstance(call, dict) else None
        call_id = call_id if isinstance(call_id, str) and call_id else ref
        self.waiting.append(call_id)
        return Item(ref, "tool/call", "assistant", {"tool": function.get("name"), "input": parsed},
                    "assistant:tool_call", self.time, call=f"{self.sid}:{call_id}")  # fmt: skip

    def _observation(self, ref: str, message: dict[str, Any]) -> list[Item]:
        ids = message.get("tool_call_ids")
        named = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
        call_id = next((i for i in named if i in self.waiting), None)
        if call_id is None and self.waiting:
            call_id = self.waiting[0]
        if call_id is None:  # an observation of no call we know
            text = self._text(message.get("content"))
            return [Item(ref, "message/context", "system", {"text": cut(text)}, "user:agent",
                         self.time)]  # fmt: skip
        self.waiting.remove(call_id)
        step = self.step or {}
        item = self._result(ref, call_id, step, self._text(message.get("content")),
                            f"{message.get('role')}:observation")  # fmt: skip
        self.step = None if not self.waiting else self.step
        return [item]

    def _result(
        self, ref: str, call_id: str, step: dict[str, Any], shown: str, source_type: str
    ) -> Item:
        """The result of a call: the step's raw ``observation`` (else what the model was
        shown), and whether it was the submission."""
        raw = step.get("observation")
        output = raw if isinstance(raw, str) else shown
        payload: dict[str, Any] = {"output": cut(output)}
        # The step the run ended on by submitting (its output the patch, or none when the
        # folder is no repository: the exit status says so).
        status = self.info.get("exit_status")
        last = bool(step) and step is self._last_step()
        if last and isinstance(status, str) and status.startswith("submitted"):
            payload["submitted"] = True
        return Item(ref, "tool/result", "tool", payload, source_type, self.time,
                    result_of=f"{self.sid}:{call_id}")  # fmt: skip

    def _step(self, ref: str, step: object) -> list[Item]:
        """A trajectory step the history does not have: its thought, its action and what
        the action returned."""
        if not isinstance(step, dict):
            self.skipped["step:not-an-object"] += 1
            return []
        reply = {"role": "assistant", "thought": step.get("thought"), "action": step.get("action")}
        items = self._assistant(ref, reply, step=step)
        if self.waiting:
            call_id = self.waiting.pop()
            items.append(self._result(ref + "-result", call_id, step, "", "step:observation"))
        return items

    def _last_step(self) -> dict[str, Any] | None:
        last = self.steps[-1] if self.steps else None
        return last if isinstance(last, dict) else None

    def _cut_off(self) -> None:
        """Calls of the previous reply that no observation answered: the one its step ran
        (0.x did not add the observation of the step that ended the run) from the step;
        others (several calls in one reply: the agent runs only one) marked not run."""
        if self.waiting and self.step is not None:
            call_id = self.waiting.pop(0)
            self.session.items.append(
                self._result(f"{call_id}-step", call_id, self.step, "", "step:observation")
            )
            self.step = None
        for call_id in self.waiting:
            self.session.items.append(
                Item(f"{call_id}-not-run", "tool/result", "tool",
                     {"output": "", "is_error": True, "not_run": True}, "not-run", self.time,
                     result_of=f"{self.sid}:{call_id}")
            )  # fmt: skip
        self.waiting = []


class SweAgentImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "SWE-agent trajectories, *.traj (trajectories/<user>/<run>/)"
    env_vars: ClassVar[tuple[str, ...]] = ("SWE_AGENT_TRAJECTORY_DIR",)
    detect_order: ClassVar[int] = 59

    def default_locations(self) -> list[Path]:
        """``run-batch``'s folder when ``$SWE_AGENT_TRAJECTORY_DIR`` names it (its default
        is the ``trajectories`` folder of SWE-agent's own checkout, and ``sweagent run``
        writes under ``./trajectories`` of the folder it ran in: no fixed home)."""
        moved = os.environ.get("SWE_AGENT_TRAJECTORY_DIR")
        return [Path(moved)] if moved else []

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``*.traj`` whose first lines are a trajectory's top-level keys (written
        indented, ``environment``, ``trajectory`` or ``history`` first; a retry run's
        ``attempts``)."""
        text = b"".join(head[:3])
        return path.name.endswith(SUFFIX) and any(key in text for key in _HEAD_KEYS)

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(
            root, f"*{SUFFIX}", lambda path: not _repeated_attempt(path) and sniffed(self, path)
        )

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_trajectory(path)


def _repeated_attempt(path: Path) -> bool:
    """A retry attempt's own file whose instance folder holds the retry file that lists
    it (read there: the same session)."""
    return (
        bool(_ATTEMPT_DIR.fullmatch(path.parent.name))
        and (path.parent.parent / path.name).is_file()
    )
