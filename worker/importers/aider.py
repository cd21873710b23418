"""Aider chat history: ``.aider.chat.history.md`` (Markdown, not JSON).

- ``# aider chat started at YYYY-MM-DD HH:MM:SS`` starts a session; the next such line
  ends the previous one (``session/end``), since the file says that session is over;
- consecutive ``#### ...`` lines are one user message (``message/user``), but for a
  confirmation Aider answered itself: after the user answers a question of a group (files
  or URLs mentioned, shell commands) with (A)ll or (S)kip all, Aider answers the group's
  next questions so, and logs each as a ``####`` line (0.86.2's ``confirm_ask``: the
  question, its options, ``[<default>]: `` and the answer): the harness's words, so
  ``message/context``, never the user's (the user's own answers are ``>`` lines);
- consecutive ``> ...`` lines are what Aider itself printed (``command/output``: its banner
  and command line, edits applied, confirmations, command output, warnings): no tool call
  of the model's stands behind them, so they are not a ``tool/result``;
- every other non-blank run of lines is the assistant's reply (``message/assistant``);
  a reply that opens with the model's reasoning between Aider's ``<thinking-content-…>``
  tags (``aider/reasoning_tags.py``: Aider streams the reasoning so, and logs the reply as
  streamed; seen in a real history) is that reasoning as ``thinking``, then the answer.

The file's directory is the session's cwd (Aider writes the history in the directory it
ran in). The start time has no zone: it is read in ``assume_tz`` (the importing machine's
local zone unless ``--timezone`` says otherwise), and every event of a session carries it
(the format records no other times). Session ids are ``aider-<digest of the file's path>-
<start time>``, plus a counter when two sessions of a file start in the same second.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Final

from worker.importers.base import Outgoing, Sessions, Tally, cut, iso_time

NAME: Final = "aider"
HISTORY_FILE: Final = ".aider.chat.history.md"
# Aider's prompt history (prompt_toolkit's ``FileHistory``), beside the chat history by
# default: each input follows a ``# <local time>`` line.
INPUT_HISTORY: Final = ".aider.input.history"
_INPUT_TIME: Final = re.compile(rb"^# (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\s*$", re.M)
_INPUT_TAIL: Final = 1 << 16  # the last input's time is near the end
_START: Final = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
REASONING_TAG: Final = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"  # Aider's own
# A confirmation as ``confirm_ask`` logs it: the question, its options, the default and
# the answer (``Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again
# [Yes]: all``).
_CONFIRMATION: Final = re.compile(
    r"\(Y\)es/\(N\)o(?:/\(A\)ll)?(?:/\(S\)kip all)?(?:/\(D\)on't ask again)? \[[^\]\n]*\]: ?\S*$"
)


class AiderConverter:
    def __init__(self, path: Path, *, assume_tz: tzinfo | None = None) -> None:
        self.path = str(path)
        self.cwd = str(path.absolute().parent)
        self.assume_tz: tzinfo = assume_tz or datetime.now().astimezone().tzinfo or UTC
        self.file_key = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:12]
        self.tally = Tally()
        self.sessions = Sessions(NAME)
        self.session: str | None = None
        self.time: str | None = None
        self.kind: str | None = None  # "user", "tool", "assistant": the run being gathered
        self.lines: list[str] = []
        self.in_fence = False

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]:
        self.tally.lines += 1
        text = line.decode("utf-8", "replace")
        out: list[Outgoing] = []
        started = _START.match(text)
        if started:
            out.extend(self._flush())
            if self.session is not None:
                ended = self.sessions.end(
                    self.session,
                    reason="next session started",
                    source_type="# aider chat started at",
                )
                out.extend(_some(ended))
            out.append(self._start(started.group(1)))
        elif self.session is None:
            if text.strip():
                self.tally.skip("line before the first session header", why="no session")
        elif self.in_fence:
            self.lines.append(text)
            self.in_fence = not text.startswith("```")
        else:
            kind, body = _classify(text)
            # Code fences hold edit blocks whose lines may start with ">" or "####".
            self.in_fence = kind == "assistant" and text.startswith("```")
            if kind != self.kind and kind != "blank":
                out.extend(self._flush())
                self.kind = kind
            if kind != "blank" or self.kind == "assistant":
                self.lines.append(body)
        self.tally.events += len(out)
        return out

    def idle(self) -> list[Outgoing]:
        out = self._flush()
        out.extend(self.sessions.end_all(reason="idle"))
        self.tally.events += len(out)
        return out

    def finish(self) -> list[Outgoing]:
        out = self._flush()
        self.tally.events += len(out)
        return out

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        keep = [self.session] if self.session is not None and self._active(before) else []
        out = self.sessions.end_quiet(before, keep=keep)
        self.tally.events += len(out)
        return out

    def _active(self, before: datetime) -> bool:
        """Whether the last session may still be going on. The chat history has a time
        only where a session starts; the input history beside it times each prompt, and
        one at or after that start is the session's latest activity. Without it, only
        the file's modification time can tell (in a fresh copy, it is the copy's)."""
        started = datetime.fromisoformat(self.time) if self.time else None
        last_input = _last_input(Path(self.path).parent / INPUT_HISTORY, self.assume_tz)
        if started is not None and last_input is not None and last_input >= started:
            return max(started, last_input) >= before
        try:
            return datetime.fromtimestamp(Path(self.path).stat().st_mtime, UTC) >= before
        except OSError:
            return True

    def _start(self, stamp: str) -> Outgoing:
        self.time = iso_time(stamp.replace(" ", "T"), assume=self.assume_tz)
        base = f"aider-{self.file_key}-{stamp.replace('-', '').replace(':', '').replace(' ', 'T')}"
        session, n = base, 1
        while self.sessions.has(session):
            n += 1
            session = f"{base}-{n}"
        self.session = session
        self.kind = None
        self.in_fence = False
        return self.sessions.start(session, time=self.time, cwd=self.cwd,
                                   extra={"history_file": self.path})  # fmt: skip

    def _flush(self) -> list[Outgoing]:
        lines, kind = self.lines, self.kind
        self.lines, self.kind = [], None
        text = "\n".join(lines).strip()
        if self.session is None or kind is None or not text:
            return []
        time = self.time
        if kind == "user":
            return [self._said(self.session, said, time) for said in _confirmations_apart(lines)]
        if kind == "tool":
            return [self.sessions.emit(self.session, "command/output", "tool", time,
                                       {"text": cut(text)}, ">")]  # fmt: skip
        reasoning, answer = _reasoning(text)
        out: list[Outgoing] = []
        for key, said, source in (
            ("thinking", reasoning, "thinking-content"),
            ("text", answer, "text"),
        ):
            if said:
                out.append(self.sessions.emit(self.session, "message/assistant", "assistant",
                                              time, {key: cut(said)}, source))  # fmt: skip
        return out

    def _said(self, session: str, said: tuple[bool, str], time: str | None) -> Outgoing:
        harness, text = said
        if harness:  # Aider's own answer to its confirmation
            return self.sessions.emit(session, "message/context", "system", time,
                                      {"text": cut(text)}, "####:confirmation")  # fmt: skip
        return self.sessions.emit(session, "message/user", "user", time, {"text": cut(text)},
                                  "####")  # fmt: skip


def _confirmations_apart(lines: list[str]) -> list[tuple[bool, str]]:
    """A ``####`` run's texts in order: (True, a confirmation Aider logged) or (False, the
    user's words); a run is one line in practice, a prompt of the user's never ends so."""
    runs: list[tuple[bool, list[str]]] = []
    for line in lines:
        harness = bool(_CONFIRMATION.search(line.strip()))
        if runs and runs[-1][0] == harness:
            runs[-1][1].append(line)
        else:
            runs.append((harness, [line]))
    texts = [(harness, "\n".join(run).strip()) for harness, run in runs]
    return [(harness, text) for harness, text in texts if text]


def _reasoning(reply: str) -> tuple[str, str]:
    """A reply's reasoning and answer: the reasoning opens it between Aider's tags; a reply
    cut off while the model reasoned has no closing tag (all of it is reasoning)."""
    opening, closing = f"<{REASONING_TAG}>", f"</{REASONING_TAG}>"
    if not reply.startswith(opening):
        return "", reply
    reasoning, _, answer = reply.removeprefix(opening).partition(closing)
    return reasoning.strip(), answer.strip()


def _classify(text: str) -> tuple[str, str]:
    if text.startswith("####"):
        return "user", text[4:].removeprefix(" ")
    if text.startswith(">"):
        return "tool", text[1:].removeprefix(" ")
    if not text.strip():
        return "blank", ""
    return "assistant", text


def _last_input(path: Path, assume_tz: tzinfo) -> datetime | None:
    """The time of the last prompt in Aider's input history (local, read in
    ``assume_tz``), or None without one."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - _INPUT_TAIL))
            tail = fh.read()
    except OSError:
        return None
    stamps = _INPUT_TIME.findall(tail)
    if not stamps:
        return None
    try:
        return datetime.fromisoformat(stamps[-1].decode()).replace(tzinfo=assume_tz)
    except ValueError:
        return None


def _some(value: Outgoing | None) -> list[Outgoing]:
    return [] if value is None else [value]


def looks_like(first_line: str) -> bool:
    return bool(_START.match(first_line))
