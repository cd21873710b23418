"""A small in-Python reference ranker for ``bench.relevance``: the labels' sanity check.

It is not a search engine to ship; it shows that the labelled set is attainable by the
kind of analysis issue 10 asks for, and checks each label: ``missing_terms`` lists the
query terms the expected session does not contain in any form (the smoke test asserts none).

Analysis, the same for events and queries: runs of letters and digits (``_`` splits);
camelCase/PascalCase parts; Snowball stems (English, or Russian for Cyrillic words);
overlapping character bigrams of Chinese, Japanese and Korean runs. A query drops English
function words. An event's score is the number of distinct query terms it holds, then the
count of multi-part query words (paths, identifiers) it holds with adjacent parts, then
the sum of their inverse document frequencies; a session's score is its best event's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import snowballstemmer

_WORD: Final = re.compile(r"[^\W_]+")
_CJK_RUN: Final = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
_CAMEL: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CYRILLIC: Final = re.compile(r"[\u0400-\u04ff]")
_FUNCTION_WORDS_TEXT: Final = """
    a an the of to in on for by at with from and or is was were be been are am did do does
    done we our us i you your it its this that these those where when what which who whom why
    how ever out up about there so then into after before too much any some can could would
    should has have had not"""
FUNCTION_WORDS: Final = frozenset(_FUNCTION_WORDS_TEXT.split())

_english = snowballstemmer.stemmer("english")
_russian = snowballstemmer.stemmer("russian")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    lowered = word.lower()
    if _CYRILLIC.search(lowered):
        return str(_russian.stemWord(lowered))
    return str(_english.stemWord(lowered))


def _word_terms(word: str, *, query: bool) -> list[str]:
    """A word's terms: its stem, and its camelCase parts' stems. A query's compound word
    asks for its parts (the whole may be a prefix of a longer identifier)."""
    parts = _CAMEL.findall(word) if word.isascii() else []
    if len(parts) > 1:
        stems = [_stem(p) for p in parts]
        return stems if query else [_stem(word), *stems]
    if query and word.lower() in FUNCTION_WORDS:
        return []
    return [_stem(word)]


def analyze(text: str, *, query: bool = False) -> list[str]:
    terms: list[str] = []
    for token in _WORD.findall(text):
        pos = 0
        for run in _CJK_RUN.finditer(token):
            if run.start() > pos:
                terms += _word_terms(token[pos : run.start()], query=query)
            chars = run.group()
            terms += (
                [chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)]
            )
            pos = run.end()
        if pos < len(token):
            terms += _word_terms(token[pos:], query=query)
    return terms


def payload_text(payload: Any) -> str:
    """Every string value of a payload (keys excluded), uncapped."""
    parts: list[str] = []
    stack = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return "\n".join(parts)


def missing_terms(query: str, payloads: Iterable[Any]) -> list[str]:
    """Query terms that no event of the session holds in any analysed form."""
    held: set[str] = set()
    for payload in payloads:
        held.update(analyze(payload_text(payload)))
    return [term for term in dict.fromkeys(analyze(query, query=True)) if term not in held]


@dataclass(frozen=True, slots=True)
class _Doc:
    session_id: str
    sequence: tuple[str, ...]  # the analysed terms in text order
    terms: frozenset[str]


def _holds_phrase(sequence: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    first, n = phrase[0], len(phrase)
    return any(sequence[i : i + n] == phrase for i, term in enumerate(sequence) if term == first)


class ReferenceRanker:
    """Ranks the sessions of one corpus per workspace (see the module doc)."""

    def __init__(self, sessions: Iterable[tuple[str, str, Sequence[Any]]]) -> None:
        self._docs: dict[str, list[_Doc]] = {}
        self._df: dict[str, dict[str, int]] = {}
        for sid, cwd, payloads in sessions:
            docs = self._docs.setdefault(cwd, [])
            df = self._df.setdefault(cwd, {})
            for payload in payloads:
                sequence = tuple(analyze(payload_text(payload)))
                terms = frozenset(sequence)
                docs.append(_Doc(sid, sequence, terms))
                for term in terms:
                    df[term] = df.get(term, 0) + 1

    def rank(self, query: str, cwd: str, exclude: str, limit: int = 100) -> list[str]:
        """Sessions by their best event: distinct query terms held, then how many of the
        query's multi-part words (paths, identifiers) it holds as adjacent parts, then the
        held terms' inverse document frequencies."""
        wanted = frozenset(analyze(query, query=True))
        phrases = [p for w in query.split() if len(p := tuple(analyze(w, query=True))) > 1]
        docs = self._docs.get(cwd, [])
        df = self._df.get(cwd, {})
        best: dict[str, tuple[int, int, float]] = {}
        for doc in docs:
            hit = wanted & doc.terms
            if not hit or doc.session_id == exclude:
                continue
            adjacent = sum(_holds_phrase(doc.sequence, p) for p in phrases if set(p) <= hit)
            score = (len(hit), adjacent, sum(math.log(1 + len(docs) / df[t]) for t in hit))
            if score > best.get(doc.session_id, (0, 0, 0.0)):
                best[doc.session_id] = score
        ordered = sorted(best.items(), key=lambda item: (*(-x for x in item[1]), item[0]))
        return [sid for sid, _ in ordered[:limit]]
