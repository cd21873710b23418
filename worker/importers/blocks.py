"""Anthropic-style content blocks as events, for the formats that store a message's
``content`` as such blocks (Cursor, Factory Droid): ``text``, ``thinking``, ``tool_use``,
``tool_result`` citing its call. Unknown blocks (images) are skipped and counted."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Final

from contracts import harness
from contracts.harness import harness_type
from worker.importers.base import Outgoing, Sessions, Tally, as_text, cut

# A user text block's events: (session, text, time, source_type) -> events.
UserText = Callable[[str, str, str | None, str], list[Outgoing]]
_ROLES: Final = frozenset({"user", "assistant"})


class Blocks:
    """One source's blocks: pairs each result with its call (by id; a result without an
    id answers the oldest call without one)."""

    def __init__(self, sessions: Sessions, tally: Tally, *, user_text: UserText | None = None):
        self.sessions = sessions
        self.tally = tally
        self.user_text = user_text or self.typed_user_text
        self.calls: dict[str, tuple[int, object]] = {}  # tool_use id -> (seq, tool name)
        self.unanswered: deque[tuple[int, object]] = deque()  # calls without an id

    def message(
        self, session: str, role: str, content: object, time: str | None, source: str
    ) -> list[Outgoing]:
        """The events of one message's ``content`` (a string is one text block)."""
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        out = []
        for block in blocks:
            if isinstance(block, dict):
                out += self.block(session, role, block, time, source)
        return out

    def block(
        self, session: str, role: str, block: dict[str, Any], time: str | None, source: str
    ) -> list[Outgoing]:
        kind = block.get("type")
        source = f"{source}:{role}:{kind}"
        emit = self.sessions.emit
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            if role == "assistant":
                return [emit(session, "message/assistant", "assistant", time,
                             {"text": cut(block["text"])}, source)]  # fmt: skip
            return self.user_text(session, block["text"], time, source)
        if kind == "thinking" and isinstance(block.get("thinking"), str) and role in _ROLES:
            return [emit(session, "message/assistant", "assistant", time,
                         {"thinking": cut(block["thinking"])}, source)]  # fmt: skip
        if kind == "tool_use":
            return [self._call(session, block, time, source)]
        if kind == "tool_result":
            return [self._result(session, block, time, source)]
        self.tally.skip(f"block:{source}")
        return []

    def typed_user_text(
        self, session: str, text: str, time: str | None, source: str
    ) -> list[Outgoing]:
        """The user's words, or the harness text ``contracts.harness`` knows, typed so."""
        type_ = harness_type(text) or "message/user"
        surface = harness.SURFACES.get(type_, "user")
        return [self.sessions.emit(session, type_, surface, time, {"text": cut(text)}, source)]

    def _call(self, session: str, block: dict[str, Any], time: str | None, source: str) -> Outgoing:
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        payload = {"tool": block.get("name"), "call_id": call_id, "input": block.get("input")}
        out = self.sessions.emit(session, "tool/call", "assistant", time, payload, source)
        if call_id:
            self.calls[call_id] = (out.seq, block.get("name"))
        else:
            self.unanswered.append((out.seq, block.get("name")))
        return out

    def _result(
        self, session: str, block: dict[str, Any], time: str | None, source: str
    ) -> Outgoing:
        call_id = block.get("tool_use_id")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is None and not isinstance(call_id, str) and self.unanswered:
            call = self.unanswered.popleft()
        payload = {"call_id": call_id, "output": as_text(block.get("content")),
                   "tool": call[1] if call else None}  # fmt: skip
        if block.get("is_error") is True:
            payload["is_error"] = True
        return self.sessions.emit(session, "tool/result", "tool", time, payload, source,
                                  cites=[(session, call[0])] if call else None)  # fmt: skip
