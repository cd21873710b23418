"""What gets embedded, and how much of it (the documented bound).

One chunk per event at most, the head of the event's stored text:

- user and assistant messages, session titles and compaction summaries: the first
  ``MESSAGE_CHARS`` characters (about 150 tokens of English: what a question is about is
  said early, and the model's cost grows with every token);
- the result of a tool or a command: the first ``OUTPUT_HEAD_CHARS`` (the head says what
  the tool did; the rest of a long log is for lexical search);
- nothing else (tool calls, harness context, session start and end, steps): their words are
  identifiers and paths, which lexical search matches exactly.

Whitespace runs are folded first, so indentation does not spend the bound.
"""

from __future__ import annotations

import re
from typing import Final

MESSAGE_CHARS: Final = 600
OUTPUT_HEAD_CHARS: Final = 300
_MESSAGES: Final = frozenset({"message/user", "message/assistant", "session/title", "compaction"})
_OUTPUTS: Final = frozenset({"tool/result", "command/output"})
_SPACE: Final = re.compile(r"\s+")


def bound(event_type: str) -> int:
    """How many characters of an event of this type are embedded (0: none)."""
    if event_type in _MESSAGES:
        return MESSAGE_CHARS
    if event_type in _OUTPUTS:
        return OUTPUT_HEAD_CHARS
    return 0


def chunk(event_type: str, body: str) -> str | None:
    """The one chunk of an event to embed, or None when the event is not embedded."""
    limit = bound(event_type)
    if limit == 0:
        return None
    # Fold a prefix only: a megabyte log is never walked whole.
    text = _SPACE.sub(" ", body[: limit * 2]).strip()[:limit]
    return text or None


EMBEDDED_TYPES: Final = tuple(sorted(_MESSAGES | _OUTPUTS))
