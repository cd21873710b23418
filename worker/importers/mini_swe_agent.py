"""mini-SWE-agent (PyPI ``mini-swe-agent``): trajectories, one JSON document per run
(``*.traj.json``), rewritten whole after each step: ``mini`` writes
``<MSWEA_GLOBAL_CONFIG_DIR>/last_mini_run.traj.json`` (default: its config folder,
``~/.config/mini-swe-agent`` on Linux; the next run overwrites it) or the file ``-o`` names;
the batch runs write ``<output>/<instance id>/<instance id>.traj.json``.

Read from the writer in ``mini-swe-agent`` 2.4.6 (``agents/default.py`` ``serialize``,
``agents/interactive.py``, ``models/litellm_model.py``, ``models/utils/actions_toolcall.py``,
``actions_toolcall_response.py``, ``actions_text.py``) and recorded from 2.4.6:

- the run is the session: ``mini-<file name>-<its first step's time, ms>`` (a later run
  written to the same file is another session; 1.x wrote no times: a digest of its first
  messages); cwd: the environment's configured ``cwd``
  (``info.config.environment.cwd``; a local run in the current folder records none);
- ``messages`` in order: the first ``user`` message (the task in the instance template) as
  ``message/user``; ``assistant`` messages (chat completions, native tool calls): the
  model's ``reasoning_content`` as thinking, its text, each ``tool_calls`` entry (``bash``
  and its ``command``) as a ``tool/call``; in the text-based format (1.x, and the
  ``*_textbased`` models) the ``extra.actions`` the agent parsed from the text are the calls
  and the ``user`` observations after them (``extra.returncode``) their results, in order;
  ``tool`` messages as the ``tool/result`` of ``tool_call_id`` (the command's output,
  ``extra.raw_output``, else the observation shown to the model); a Responses API reply (an
  object with ``output`` items: ``reasoning``, ``message``, ``function_call``) and its
  ``function_call_output`` items the same way. A result is an error when its
  ``returncode`` is not 0 (kept as ``exit_code``) or it has ``exception_info`` (kept as
  ``exception``); "action was not executed" (the run
  stopped first) is marked ``interrupted``, except for the command that submitted the run
  (its ``exit`` message follows with ``Submitted``);
- the interactive agent's messages in the user's turn: a format error it reports to the
  model as ``message/context``; an interruption, a rejection or a new task (the user's
  words after its own prefix) as ``message/user``; a command the user ran in human mode
  (``extra.actions``) as ``command`` and its observation as ``command/output``;
- the ``exit`` message (``exit_status``, the submission) as ``message/context``.

Times: each step's ``extra.timestamp`` (Unix seconds); the first messages, which have none,
take the first step's. Skipped and counted: the system message (the template's), images in
a multimodal message, other roles.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
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
    from_seconds,
    read_document,
)
from worker.importers.whole_sources import ReadingImporter, files_below, sniffed

NAME: Final = "mini-swe-agent"
PREFIX: Final = "mini-"
SUFFIX: Final = ".traj.json"
APP: Final = "mini-swe-agent"
NOT_EXECUTED: Final = "action was not executed"
# Interrupt types whose message is the user's own words (after the agent's prefix).
_USER_SAID: Final = frozenset({"UserInterruption", "UserRejection", "UserNewTask"})
# 1.x keeps no interrupt type: the interactive agent's prefixes before the user's words.
_USER_PREFIXES: Final = (
    "Interrupted by user:", "The user added a new task:", "Commands not executed. The user",
)  # fmt: skip
# A command in the text (1.x's ``bash`` fence; 2.x's text-based models ``mswea_bash_command``).
_ACTION: Final = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
# 1.x's observation: ``<returncode>N</returncode>``, then ``<output>`` (or a warning and the
# output's head and tail).
_RETURNCODE: Final = re.compile(r"\s*<returncode>(-?\d+)</returncode>")
_OUTPUT: Final = re.compile(r"<output>\n?(.*?)</output>", re.S)


def read_trajectory(path: Path) -> SourceReading:
    """One trajectory as it is now; a half-written file is reported and read again on the
    next change."""
    reading = SourceReading()
    read = read_document(path, reading)
    if read is None:
        return reading
    document = read.value
    kind = document.get("trajectory_format") if isinstance(document, dict) else None
    messages = document.get("messages") if isinstance(document, dict) else None
    if not (isinstance(kind, str) and kind.startswith("mini-swe-agent")) or not isinstance(
        messages, list
    ):
        reading.problems.append(Problem(str(path), 0, "not a mini-SWE-agent trajectory"))
        return reading
    reading.sessions.append(_session(path, document, messages))
    return reading


def _object(value: object) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (versions omit and vary)."""
    return value if isinstance(value, dict) else {}


def _run_name(path: Path) -> str:
    return path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem


def _stamp(message: object) -> float | None:
    extra = message.get("extra") if isinstance(message, dict) else None
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    return float(stamp) if isinstance(stamp, int | float) and not isinstance(stamp, bool) else None


def _session(path: Path, document: dict[str, Any], messages: list[Any]) -> SourceSession:
    stamps = [s for s in map(_stamp, messages) if s is not None]
    first = min(stamps) if stamps else None
    if first is not None:
        run = f"{_run_name(path)}-{int(first * 1000)}"
    else:  # 1.x wrote no times: its first messages (never rewritten) name the run
        first_messages = orjson.dumps(messages[:3], option=orjson.OPT_SORT_KEYS)
        run = f"{_run_name(path)}-{hashlib.sha256(first_messages).hexdigest()[:12]}"
    info = _object(document.get("info"))
    config = _object(info.get("config"))
    environment = _object(config.get("environment"))
    cwd = environment.get("cwd")
    extra: dict[str, Any] = {}
    if isinstance(info.get("mini_version"), str):
        extra["version"] = info["mini_version"]
    model = _object(config.get("model"))
    if isinstance(model.get("model_name"), str):
        extra["model"] = model["model_name"]
    session = SourceSession(
        session_id=safe_id(run, prefix=PREFIX),
        cwd=cwd.strip() if isinstance(cwd, str) and cwd.strip() else None,
        time=from_seconds(first) if first is not None else file_time(path),
        extra=extra,
    )
    _Reader(session, messages, info.get("submission")).read()
    return session


class _Reader:
    def __init__(self, session: SourceSession, messages: list[Any], submission: object) -> None:
        self.session, self.messages = session, messages
        self.sid, self.skipped = session.session_id, session.skipped
        self.time = session.time
        # Calls parsed from the text (no ids), waiting for their observations in order.
        self.waiting: list[str] = []
        self.prompted = False  # the task was read: later user texts of 1.x are the agent's
        self.submission = submission

    def read(self) -> None:
        for index, message in enumerate(self.messages):
            if not isinstance(message, dict):
                self.skipped["message:not-an-object"] += 1
                continue
            stamp = _stamp(message)
            self.time = from_seconds(stamp) if stamp is not None else self.time
            following = self.messages[index + 1] if index + 1 < len(self.messages) else None
            self.session.items.extend(self._message(f"m{index}", message, following))

    def _message(self, ref: str, message: dict[str, Any], following: object) -> list[Item]:
        role, kind = message.get("role"), message.get("type")
        extra = _object(message.get("extra"))
        if role is None and kind == "function_call_output":
            return [
                self._result(ref, message.get("call_id"), message.get("output"), extra, following)
            ]
        if role is None and isinstance(message.get("output"), list):
            return self._response(ref, message)
        if role == "system":
            self.skipped["message:system"] += 1
            return []
        if role == "assistant":
            return self._assistant(ref, message, extra)
        if role == "tool":
            return [
                self._result(
                    ref, message.get("tool_call_id"), message.get("content"), extra, following
                )
            ]
        if role == "user":
            return self._user(ref, message, extra, following)
        if role == "exit":
            status = extra.get("exit_status")
            payload: dict[str, Any] = {"text": cut(as_text(message.get("content")) or str(status))}
            payload |= {k: extra[k] for k in ("exit_status", "submission") if k in extra}
            return [Item(ref, "message/context", "system", payload, "exit", self.time)]
        self.skipped[f"message:{role or kind}"] += 1
        return []

    def _text(self, content: object) -> str:
        """A message's text: a string, or its text parts (other parts counted)."""
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind not in ("text", "input_text", "output_text"):
                    self.skipped[f"content:{kind}"] += 1
        return as_text(content) if content is not None else ""

    def _user(
        self, ref: str, message: dict[str, Any], extra: dict[str, Any], following: object
    ) -> list[Item]:
        text = self._text(message.get("content"))
        interrupt = extra.get("interrupt_type")
        if "returncode" in extra or "raw_output" in extra:  # an observation of the text format
            if self.waiting:
                call = self.waiting.pop(0)
                return [self._result(ref, call, text, extra, following, bare=True)]
            raw = extra.get("raw_output")
            output = {"text": cut(raw if isinstance(raw, str) else text),
                      "exit_code": extra.get("returncode")}  # fmt: skip
            return [Item(ref, "command/output", "tool", output, "user:observation", self.time)]
        if isinstance(extra.get("actions"), list):  # a command the user ran (human mode)
            return [Item(ref, "command", "user", {"text": cut(text)}, "user:command", self.time)]
        if interrupt is not None:
            type_, surface = (
                ("message/user", "user")
                if interrupt in _USER_SAID
                else ("message/context", "system")
            )
            payload = {"text": cut(text), "interrupt_type": interrupt}
            return [Item(ref, type_, surface, payload, f"user:{interrupt}", self.time)]
        if self.prompted and not extra:  # 1.x keeps no extra: the agent's own messages
            return self._agent_said(ref, text, following)
        if not text.strip():
            self.skipped["message:user:empty"] += 1
            return []
        self.prompted = True
        type_ = harness.harness_type(text) or "message/user"
        surface = harness.SURFACES.get(type_, "user")
        return [Item(ref, type_, surface, {"text": cut(text)}, "user", self.time)]

    def _agent_said(self, ref: str, text: str, following: object) -> list[Item]:
        """A later user message of a 1.x trajectory (no ``extra``): an observation
        (``<returncode>``), the submission ending the run (the output of the command that
        submitted it), the user's words after the interactive agent's prefix (a command it
        interrupted gets a result marked ``interrupted``), what the
        agent says of a command that did not finish (a timeout: its result, an error), or
        the agent's own text to the model (a format error)."""
        code = _RETURNCODE.match(text)
        if code and self.waiting:
            output = _OUTPUT.search(text)
            extra = {"returncode": int(code.group(1)),
                     "raw_output": output.group(1) if output else text}  # fmt: skip
            return [self._result(ref, self.waiting.pop(0), text, extra, following, bare=True)]
        if self.waiting and text == self.submission:
            call = self.waiting.pop(0)
            payload = {"output": cut(text), "submitted": True}
            return [Item(ref, "tool/result", "tool", payload, "user:submission", self.time,
                         result_of=f"{self.sid}:{call}")]  # fmt: skip
        if not text.strip():
            self.skipped["message:user:empty"] += 1
            return []
        if text.startswith(_USER_PREFIXES):
            # A command the user interrupted (Ctrl-C) has no observation: it was cut off.
            cut_off = [
                Item(f"{ref}-interrupted-{call}", "tool/result", "tool",
                     {"output": "", "is_error": True, "interrupted": True}, "user:interrupted",
                     self.time, result_of=f"{self.sid}:{call}")
                for call in self.waiting
            ]  # fmt: skip
            self.waiting = []
            said = Item(ref, "message/user", "user", {"text": cut(text)}, "user", self.time)
            return [*cut_off, said]
        if self.waiting:  # the command did not finish: the agent says so (a timeout)
            payload = {"output": cut(text), "is_error": True}
            return [Item(ref, "tool/result", "tool", payload, "user:not-finished", self.time,
                         result_of=f"{self.sid}:{self.waiting.pop(0)}")]  # fmt: skip
        return [Item(ref, "message/context", "system", {"text": cut(text)}, "user:agent",
                     self.time)]  # fmt: skip

    def _assistant(self, ref: str, message: dict[str, Any], extra: dict[str, Any]) -> list[Item]:
        items: list[Item] = []
        thought = message.get("reasoning_content")
        if isinstance(thought, str) and thought.strip():
            items.append(
                Item(
                    f"{ref}-thinking",
                    "message/assistant",
                    "assistant",
                    {"thinking": cut(thought)},
                    "assistant:reasoning",
                    self.time,
                )
            )
        text = self._text(message.get("content"))
        if text.strip():
            items.append(
                Item(
                    f"{ref}-text",
                    "message/assistant",
                    "assistant",
                    {"text": cut(text)},
                    "assistant",
                    self.time,
                )
            )
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            for index, call in enumerate(calls):
                items.append(self._call(f"{ref}-call-{index}", call))
        else:  # the text format: the actions the agent parsed from the text (1.x: none kept)
            actions = extra.get("actions")
            if not isinstance(actions, list):
                # As the agent parsed them: exactly one, else a format error ran nothing.
                found = _ACTION.findall(text)
                actions = [{"command": found[0].strip()}] if len(found) == 1 else []
            for index, action in enumerate(actions):
                if isinstance(action, dict):
                    call_id = f"{ref}-{index}"
                    self.waiting.append(call_id)
                    items.append(
                        Item(
                            f"{ref}-action-{index}",
                            "tool/call",
                            "assistant",
                            {"tool": "bash", "input": {"command": action.get("command")}},
                            "assistant:action",
                            self.time,
                            call=f"{self.sid}:{call_id}",
                        )
                    )
        if not items:
            self.skipped["message:assistant:empty"] += 1
        return items

    def _call(self, ref: str, call: object) -> Item:
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        try:
            parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        except orjson.JSONDecodeError:
            parsed = arguments
        call_id = call.get("id") if isinstance(call, dict) else None
        return Item(
            ref,
            "tool/call",
            "assistant",
            {"tool": function.get("name"), "input": parsed},
            "assistant:tool_call",
            self.time,
            call=f"{self.sid}:{call_id or ref}",
        )

    def _response(self, ref: str, response: dict[str, Any]) -> list[Item]:
        """A Responses API reply as the model returned it (``response.model_dump()``)."""
        items: list[Item] = []
        for index, item in enumerate(response["output"]):
            kind = item.get("type") if isinstance(item, dict) else None
            part = f"{ref}-{index}"
            if kind == "reasoning":
                summary = as_text(
                    [s.get("text") for s in item.get("summary") or [] if isinstance(s, dict)]
                )
                if summary.strip():
                    items.append(
                        Item(
                            part,
                            "message/assistant",
                            "assistant",
                            {"thinking": cut(summary)},
                            "response:reasoning",
                            self.time,
                        )
                    )
                else:
                    self.skipped["output:reasoning:encrypted"] += 1
            elif kind == "message":
                text = self._text(item.get("content"))
                if text.strip():
                    items.append(
                        Item(
                            part,
                            "message/assistant",
                            "assistant",
                            {"text": cut(text)},
                            "response:message",
                            self.time,
                        )
                    )
            elif kind == "function_call":
                arguments = item.get("arguments")
                try:
                    parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
                except orjson.JSONDecodeError:
                    parsed = arguments
                call_id = item.get("call_id") or item.get("id") or part
                items.append(
                    Item(
                        part,
                        "tool/call",
                        "assistant",
                        {"tool": item.get("name"), "input": parsed},
                        "response:function_call",
                        self.time,
                        call=f"{self.sid}:{call_id}",
                    )
                )
            else:
                self.skipped[f"output:{kind}"] += 1
        return items

    def _result(
        self,
        ref: str,
        call_id: object,
        content: object,
        extra: dict[str, Any],
        following: object,
        *,
        bare: bool = False,
    ) -> Item:
        # What the command printed, whole (the model was shown it in the observation
        # template, cut to its head and tail past 10,000 characters).
        raw = extra.get("raw_output")
        payload: dict[str, Any] = {
            "output": cut(raw if isinstance(raw, str) else self._text(content))
        }
        code, failure = extra.get("returncode"), extra.get("exception_info")
        if isinstance(code, int) and not isinstance(code, bool):
            payload["exit_code"] = code
        if failure == NOT_EXECUTED and _submitted(following):
            payload["submitted"] = True  # the command that ended the run: not a failure
        elif failure == NOT_EXECUTED:
            payload |= {"is_error": True, "interrupted": True}
        elif (isinstance(code, int) and code != 0) or (isinstance(failure, str) and failure):
            payload["is_error"] = True
        if isinstance(failure, str) and failure:
            payload["exception"] = cut(failure)
        call = f"{self.sid}:{call_id}" if call_id else None
        return Item(
            ref,
            "tool/result",
            "tool",
            payload,
            "observation" if bare else "tool",
            self.time,
            result_of=call,
        )


def _submitted(message: object) -> bool:
    extra = message.get("extra") if isinstance(message, dict) else None
    return (
        isinstance(message, dict)
        and message.get("role") == "exit"
        and isinstance(extra, dict)
        and extra.get("exit_status") == "Submitted"
    )


def config_dir() -> Path:
    """mini-SWE-agent's folder: ``$MSWEA_GLOBAL_CONFIG_DIR``, else platformdirs' user config
    folder for it."""
    if os.environ.get("MSWEA_GLOBAL_CONFIG_DIR"):
        return Path(os.environ["MSWEA_GLOBAL_CONFIG_DIR"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home()) / APP
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / APP


class MiniSweAgentImporter(ReadingImporter):
    name: ClassVar[str] = NAME
    help: ClassVar[str] = "mini-SWE-agent trajectories, *.traj.json (~/.config/mini-swe-agent)"
    env_vars: ClassVar[tuple[str, ...]] = ("MSWEA_GLOBAL_CONFIG_DIR", "XDG_CONFIG_HOME")
    detect_order: ClassVar[int] = 59

    def default_locations(self) -> list[Path]:
        return [config_dir()]

    def detect(self, path: Path, head: Sequence[bytes]) -> bool:
        """A ``*.traj.json`` whose first lines are a trajectory's ``info`` (written
        indented: ``model_stats`` or ``exit_status`` come first)."""
        text = b"".join(head)
        return (
            path.name.endswith(SUFFIX)
            and b'"info"' in text
            and (b'"model_stats"' in text or b'"exit_status"' in text or b'"mini_version"' in text)
        )

    def sources(self, root: Path) -> Iterator[Path]:
        return files_below(root, f"*{SUFFIX}", lambda path: sniffed(self, path))

    def read(self, path: Path, cache: SessionCache) -> SourceReading:
        return read_trajectory(path)
