"""An event as a person reads it: the text of a message, a tool call's command or
arguments, a tool result's output; and where a query matches in that text.

The operator's pages show this instead of escaped JSON (the exact JSON stays one click
away). The match positions come from the search's own highlighter (``excerpt``), so a
page marks the words the search matched, at offsets, never by parsing marks out of text.

Every offset and size here, and in the operator replies built from them, counts Unicode
code points (Python ``str`` indices; what SQLite's ``length`` and ``substr`` count in a
TEXT value): never UTF-8 bytes, never UTF-16 code units. A text is read in parts of a fixed
size: part k starts at k × size, moved back to the start of its character when that
position falls inside one (before a combining mark, a joiner or a variation selector), so
no part begins with half a letter or half an emoji; part k ends where part k + 1 starts.
"""

from __future__ import annotations

import unicodedata
from typing import Final

import orjson

from worker.store.search.excerpt import highlighter
from worker.store.search.query import compile_query

# Payload fields that hold an event's text, in the order they are looked for.
TEXT_KEYS: Final = ("text", "output", "summary", "title", "content", "message", "reason")
# Code points that continue the character before them: zero-width joiner, variation
# selectors, emoji skin tones and tag characters (combining marks are found by category).
_CONTINUES: Final = frozenset(
    [0x200D, *range(0xFE00, 0xFE10), *range(0x1F3FB, 0x1F400), *range(0xE0020, 0xE0080)]
)
# A part's start moves back at most this far: a longer run of marks is cut, not followed.
_MAX_BACK: Final = 32


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


def _continues(text: str, at: int) -> bool:
    """Whether the code point at ``at`` belongs to the character before it."""
    code = ord(text[at])
    return (
        code in _CONTINUES
        or (at > 0 and ord(text[at - 1]) == 0x200D)  # the character a joiner joins on
        or unicodedata.category(text[at]) in ("Mn", "Mc", "Me")
    )


def character_start(text: str, at: int) -> int:
    """``at`` moved back to the start of the character it falls in (at most ``_MAX_BACK``)."""
    at = max(0, min(at, len(text)))
    floor = max(0, at - _MAX_BACK)
    while floor < at < len(text) and _continues(text, at):
        at -= 1
    return at


def character_end(text: str, at: int) -> int:
    """``at`` moved forward past the marks that continue the character before it."""
    ceiling = min(len(text), at + _MAX_BACK)
    while 0 < at < ceiling and _continues(text, at):
        at += 1
    return at


def part_bounds(text: str, part: int, size: int) -> tuple[int, int]:
    """(start, end) of part ``part`` (from 0) of ``text`` cut in parts of ``size``."""
    return character_start(text, part * size), character_start(text, (part + 1) * size)


def part_of(text: str, at: int, size: int) -> int:
    """The number of the part holding offset ``at``."""
    part = at // size
    while part_bounds(text, part + 1, size)[0] <= at < len(text):
        part += 1  # ``at`` lies in the few code points the next part's start moved back
    return part


def matches(query: str, text: str) -> list[tuple[int, int]]:
    """Every match of ``query`` in ``text`` (start, end), as the search highlights them, each
    ending after the marks that continue its last character (a decomposed "й" whole).
    ``InvalidQuery`` for a query with nothing searchable."""
    return [
        (s, character_end(text, e))
        for s, e, _ in highlighter(compile_query(query)).spans(text, every=True)
    ]


def best_match(query: str, text: str) -> int | None:
    """Where the match a search hit shows starts: the first match of the excerpt's window
    (the one holding the most of the query's terms), not merely the first match anywhere."""
    best = highlighter(compile_query(query)).best(text)
    return None if best is None else best[0]
