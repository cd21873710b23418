"""Searchable text of an event: every string value of its payload, capped per event.

Binary data inside a string (base64: an image a tool returned, a pasted certificate or
archive) is no text: tokenized, it fills the index with one-off junk terms (a 100 KB image
made thousands) and the excerpts with noise. Such runs are left out of the searchable text;
the event's JSON keeps them (stored once, compressed: ``event_codec``).
"""

from __future__ import annotations

import re
from typing import Final

# A wrapped base64 line's least length (the regex's ``{60,}``).
_LINE_CHARS: Final = 60
# How much past the room a long string's scan reads first.
_SCAN_MARGIN: Final = 4096
_B64_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_AS_A: Final = bytes(ord("a") if b in _B64_ALPHABET else ord(" ") for b in range(256))
_RUN_BYTES: Final = b"a" * _LINE_CHARS
# Strings shorter than this hold no blob worth the scan.
_BLOB_MIN_CHARS: Final = 256
# A base64 run: one unbroken run of 256+ characters of its alphabet, or lines of 60+ (MIME
# and PEM wrap at 64 or 76), optionally behind a data: URI's header. Matched from a run's
# start only (the lookbehind): tried inside every word, the scan cost 25 ms per 100 KB; and
# possessive (``+``): a long run that is not wrapped lines fails the first branch at once
# instead of giving its characters back one by one (2.6 ms for a 100 KB image).
_BLOB: Final = re.compile(
    r"(?:data:[\w.+/-]+;base64,)?(?<![A-Za-z0-9+/])"
    r"(?:(?:[A-Za-z0-9+/]{60,}+={0,2}\r?\n){3,}(?:[A-Za-z0-9+/]++={0,2}(?=\r?\n|$))?"
    r"|[A-Za-z0-9+/]{256,}+={0,2})"
)


def _is_blob(run: str) -> bool:
    """A run of the base64 alphabet that is data, not a word: digits and both cases mixed
    (a long hex digest or an all-letter run is kept)."""
    return (
        any(c.isdigit() for c in run)
        and any(c.islower() for c in run)
        and any(c.isupper() for c in run)
    )


def _has_long_token(text: str) -> bool:
    """Whether ``text`` holds a run of 60 base64 characters: its UTF-8 with each of them
    made ``a`` and every other byte a space, searched for 60 ``a`` (all in C: a regex or a
    split of a 1 KB string cost 7-9 us, a third of deriving an event's text)."""
    return _RUN_BYTES in text.encode("utf-8").translate(_B64_AS_A)


def without_blobs(text: str) -> str:
    """``text`` with its base64 runs removed (each leaves one space)."""
    if len(text) < _BLOB_MIN_CHARS or not _has_long_token(text):
        return text  # most text: no token long enough, and the split is C-fast
    return _BLOB.sub(lambda m: " " if _is_blob(m.group()) else m.group(), text)


def _without_blobs_to(text: str, room: int) -> str:
    """``without_blobs(text)``, exact for its first ``room`` bytes (all the caller keeps):
    a string far longer (a 1 MiB tool output for a 4 KB preview) is scanned by a prefix
    long enough to keep ``room`` characters past its blobs, and a blob the prefix cuts,
    which its end may leave, lies past them."""
    limit = room + _SCAN_MARGIN
    while limit < len(text):
        out = without_blobs(text[:limit])
        if len(out) >= room + _BLOB_MIN_CHARS:
            return out
        limit *= 2
    return without_blobs(text)


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
            if len(item) >= _BLOB_MIN_CHARS:
                item = _without_blobs_to(item, cap_bytes)
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
