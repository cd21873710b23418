"""An event as a person reads it: the text of a message, a tool call's command or
arguments, a tool result's output; and where a query matches in that text.

The operator's pages show this instead of escaped JSON (the exact JSON stays one click
away). The match positions come from the search's own highlighter (``excerpt``), so a
page marks the words the search matched, at offsets, never by parsing marks out of text.
"""

from __future__ import annotations

from typing import Final

import orjson

from worker.store.search.excerpt import highlighter
from worker.store.search.query import compile_query

# Payload fields that hold an event's text, in the order they are looked for.
TEXT_KEYS: Final = ("text", "output", "summary", "title", "content", "message", "reason")
# A part chosen to show a match starts this many characters before it (at a line start
# when one is near), so the match reads in its context.
LEAD_CHARS: Final = 300


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def tool_and_text(kind: str, payload: object) -> tuple[str | None, str]:
    """(tool name or None, the readable text) of an event's payload."""
    if not isinstance(payload, dict):
        return None, _json(payload)
    tool = payload.get("tool")
    tool_name = tool if isinstance(tool, str) else None
    if kind == "tool/call":
        arguments = payload.get("arguments", payload.get("input"))
        if isinstance(arguments, str):
            return tool_name, arguments
        if isinstance(arguments, dict):
            # The command first, bare (what a person scans for); the other arguments by name.
            command = arguments.get("command")
            lines = [command] if isinstance(command, str) else []
            for key, value in arguments.items():
                if not (key == "command" and lines):
                    lines.append(f"{key}: {value if isinstance(value, str) else _json(value)}")
            return tool_name, "\n".join(lines)
        return tool_name, _json(arguments)
    for key in TEXT_KEYS:
        value = payload.get(key)
        if isinstance(value, str):
            return tool_name, value
    if kind == "tool/result" and "output" in payload:
        return tool_name, _json(payload["output"])
    shown = {k: v for k, v in payload.items() if k != "source_type"}
    return tool_name, _json(shown) if shown else ""


def readable(raw_json: str) -> tuple[str, str | None, str]:
    """(event type, tool name, readable text) of an event's raw JSON."""
    try:
        event = orjson.loads(raw_json)
    except orjson.JSONDecodeError:
        return "", None, raw_json
    if not isinstance(event, dict):
        return "", None, raw_json
    kind = event.get("type") if isinstance(event.get("type"), str) else ""
    tool, text = tool_and_text(str(kind), event.get("payload"))
    return str(kind), tool, text


def matches(query: str, text: str) -> list[tuple[int, int]]:
    """Every match of ``query`` in ``text`` (start, end), as the search highlights them.
    ``InvalidQuery`` for a query with nothing searchable."""
    return [(s, e) for s, e, _ in highlighter(compile_query(query)).spans(text, every=True)]


def part_holding(text: str, first_match: int, size: int) -> int:
    """Where a part of ``size`` characters showing the match at ``first_match`` starts."""
    start = max(0, first_match - LEAD_CHARS)
    line = text.rfind("\n", start, first_match)
    start = line + 1 if line >= 0 else start
    return max(0, min(start, len(text) - size))
