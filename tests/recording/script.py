"""The dialect-neutral model the scripted server answers with.

A dialect turns an HTTP request into a :class:`Conversation` and a :class:`Reply` into its wire
format; a :class:`Script` decides the reply from the conversation alone (how many assistant turns
or tool results it already holds, the first user text, which tools are offered), never from the
order requests arrive in, so an agent's side requests (titles, summaries for compaction, "next
speaker" checks) get a sensible answer wherever they come.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation. A tool result is a turn of role ``tool`` whose
    ``tool_result_for`` names the call it answers (dialects that carry results inside a user
    message split them out into such turns, in order)."""

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result_for: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class Conversation:
    system: str
    turns: tuple[Turn, ...]
    tools: tuple[str, ...] = ()
    model: str = ""

    def user_texts(self) -> list[str]:
        return [t.text for t in self.turns if t.role == "user" and t.text]

    @property
    def first_user_text(self) -> str:
        texts = self.user_texts()
        return texts[0] if texts else ""

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""

    def tool_results(self, turns: tuple[Turn, ...] | None = None) -> list[Turn]:
        return [t for t in (self.turns if turns is None else turns) if t.role == "tool"]

    def mentions(self, needle: str) -> bool:
        """Whether the system text or any turn contains ``needle`` (case-insensitive)."""
        low = needle.lower()
        return low in self.system.lower() or any(low in t.text.lower() for t in self.turns)

    def offers(self, tool: str) -> bool:
        return tool in self.tools


@dataclass(frozen=True)
class Reply:
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)

    @property
    def stop_reason(self) -> Literal["tool_use", "end_turn"]:
        return "tool_use" if self.tool_calls else "end_turn"


class Script(Protocol):
    def reply(self, conversation: Conversation) -> Reply: ...


def call_id(prefix: str, *parts: str) -> str:
    """A tool call id stable across re-recordings (derived from what the call is about, so
    the same conversation yields the same ids)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]
    return f"{prefix}{digest}"


def call(prefix: str, name: str, step: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(call_id(prefix, name, step), name, arguments)


def estimate_tokens(conversation: Conversation) -> int:
    """A rough token count (4 characters a token) for the usage figures dialects report."""
    chars = len(conversation.system) + sum(
        len(t.text) + sum(len(c.arguments_json) for c in t.tool_calls) for t in conversation.turns
    )
    return max(1, chars // 4)
