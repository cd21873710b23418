"""How an excerpt marks its matches, written and read back: the one format of every
``excerpt`` the store's hits carry (``EventHit``, ``SessionHit``).

Matched words are in ``[brackets]``. A literal ``[`` or ``]`` of the text is written ``\\[`` or
``\\]`` (and a literal backslash right before a bracket or another backslash is doubled), so
a bare bracket is always a match mark: a markdown ``[X]`` cannot read as a match.
``split_excerpt`` reverses it into the plain text and the matches' offsets (what the
operator replies carry), so a reader needs no part of the search to read an excerpt.
"""

from __future__ import annotations

import re
from typing import Final

# A text piece as atoms: a bracket, a backslash, or a run of other characters.
_LITERAL_ATOM: Final = re.compile(r"[^\[\]\\]+|[\[\]\\]")


def mark_matches(pieces: list[tuple[str, bool]]) -> str:
    """The pieces joined, each matched one in ``[...]``, literal brackets escaped (above)."""
    atoms: list[tuple[str, bool]] = []  # (atom, is a mark)
    for piece, matched in pieces:
        if matched:
            atoms.append(("[", True))
        atoms.extend((atom, False) for atom in _LITERAL_ATOM.findall(piece))
        if matched:
            atoms.append(("]", True))
    out: list[str] = []
    for index, (atom, mark) in enumerate(atoms):
        if not mark and atom in ("[", "]"):
            atom = "\\" + atom
        elif not mark and atom == "\\":
            following = atoms[index + 1][0] if index + 1 < len(atoms) else ""
            if following in ("[", "]", "\\"):  # it would read as an escape: doubled
                atom = "\\\\"
        out.append(atom)
    return "".join(out)


def plain_excerpt(text: str) -> str:
    """A text shown in an excerpt's place with nothing matched (a preview): escaped alike."""
    return mark_matches([(text, False)])


def split_excerpt(excerpt: str) -> tuple[str, list[tuple[int, int]]]:
    """An excerpt's plain text and its matches as (start, end) offsets into that text: the
    exact inverse of ``mark_matches`` (a bare bracket is a mark, an escaped one a literal)."""
    text: list[str] = []
    spans: list[tuple[int, int]] = []
    length, opened, index = 0, -1, 0
    while index < len(excerpt):
        char = excerpt[index]
        if char == "\\" and excerpt[index + 1 : index + 2] in ("[", "]", "\\"):
            char = excerpt[index + 1]
            index += 1
        elif char == "[":
            opened, index = length, index + 1
            continue
        elif char == "]":
            if opened >= 0:
                spans.append((opened, length))
            opened, index = -1, index + 1
            continue
        text.append(char)
        length += 1
        index += 1
    return "".join(text), spans
