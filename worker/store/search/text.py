"""Searchable text of an event: every string value of its payload, capped per event."""

from __future__ import annotations


def searchable_text(payload: object, cap_bytes: int) -> str:
    """Every string value of ``payload`` (recursively; keys are not indexed), one per line,
    cut to ``cap_bytes`` of UTF-8 on a character boundary."""
    if cap_bytes <= 0:
        return ""
    parts: list[str] = []
    size = -1  # no separator before the first part
    # An explicit stack, not recursion: a deeply nested payload must not overflow. Popping
    # from the end after pushing reversed keeps document order. This runs once per event,
    # so it is a plain loop rather than a generator.
    stack: list[object] = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            # ASCII is the common case: its length is its byte length, no encode needed.
            size += 1 + (len(item) if item.isascii() else len(item.encode("utf-8")))
            if size >= cap_bytes:
                break  # the rest of a huge payload is never walked
        elif isinstance(item, dict):
            stack.extend(reversed(item.values()))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    text = "\n".join(parts)
    if size <= cap_bytes:
        return text
    # "ignore" drops only the partial character left at the cut.
    return text.encode("utf-8")[:cap_bytes].decode("utf-8", "ignore")
