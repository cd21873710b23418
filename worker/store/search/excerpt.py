"""Excerpts: the part of an event's text where the query matched, matched words in [brackets].

How the marks are written, escapes included, and read back is ``worker.store.marks``.

The search index stores no text, so the excerpt is cut from the store's text of the few
events a page shows. One regular expression per term (the term's exact words, its stems
as word prefixes, identifier parts at case boundaries and CJK bigrams; compiled once per
term and cached, since terms recur across queries) says whether a term matches at a
position; a plain case-insensitive alternation of the literals every match starts with
finds the candidate positions, so the costly patterns run only there (a single pattern
of lookbehind alternatives ran ~5x slower per text, and compiling it per query cost
~5 ms for a question). The window holding the most distinct terms wins, and the excerpt is
centred on the matches it holds.

Function words ("where did we start work on the bead") are not highlighted when the query
holds a content word: the search does not require them (``QueryPlan.required``), so
bracketing every "the" would point at nothing and pull the window off the words that
matched. A query of function words alone, or a quoted phrase, is highlighted as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from worker.store.marks import mark_matches
from worker.store.search.query import PlanTerm, QueryPlan

WINDOW_CHARS: Final = 120
_CONTEXT_CHARS: Final = 30
_MAX_MATCHES: Final = 400
_WS: Final = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Highlighter:
    # Where a match may start: every term's match begins with one of these literals.
    prefilter: re.Pattern[str] | None
    # (group label, the term's pattern), in query order: at one position the first term
    # that matches wins, as an alternation of them would. A group counts once.
    terms: tuple[tuple[str, re.Pattern[str]], ...] = ()
    # Every term belongs to one query group (decided when built, not per text).
    one_group: bool = False

    def spans(self, text: str, *, every: bool = False) -> list[tuple[int, int, str]]:
        """Non-overlapping matches, left to right (what ``finditer`` over the alternation
        of the term patterns gives).

        With one group the first window is the best (no later one holds more groups), so
        the scan stops past it, so a rare identifier in a long log does not read all of it.
        ``every``: no such stop (a page highlighting every match of a part)."""
        spans: list[tuple[int, int, str]] = []
        if self.prefilter is None:
            return spans
        search, pos = self.prefilter.search, 0
        window_end = len(text) + 1
        one_group = self.one_group and not every
        while len(spans) < _MAX_MATCHES:
            hit = search(text, pos, window_end)
            if hit is None:
                break
            start = pos = hit.start()
            for label, pattern in self.terms:
                match = pattern.match(text, start)
                if match is not None:
                    spans.append((start, match.end(), label))
                    pos = match.end()
                    if one_group and len(spans) == 1:
                        window_end = min(window_end, start + WINDOW_CHARS)
                    break
            else:
                pos = start + 1
        return spans

    def best(self, text: str) -> tuple[int, int] | None:
        """Where the excerpt's matches are: (start of its first, end of its last), the window
        holding the most distinct terms (what a hit shows), or None when nothing matches."""
        spans = self.spans(text) if self.prefilter is not None and text else []
        if not spans:
            return None
        first, last = _best_window(spans)
        return spans[first][0], spans[last][1]

    def excerpt(self, text: str) -> str | None:
        """The best window of ``text``, or None when nothing of the query is in it."""
        if self.prefilter is None or not text:
            return None
        spans = self.spans(text)
        if not spans:
            return None
        first, last = _best_window(spans)
        chosen = spans[first : last + 1]
        start, end = _centred(len(text), chosen[0][0], chosen[-1][1])
        if start > 0:  # begin at a word, not inside one
            space = text.find(" ", start, chosen[0][0])
            start = space + 1 if space >= 0 else chosen[0][0]
        pieces: list[tuple[str, bool]] = [("…" if start > 0 else "", False)]
        cursor = start
        for s, e, _ in chosen:
            if s < cursor:
                continue  # overlapping matches: the first one is bracketed
            pieces.append((text[cursor:s], False))
            pieces.append((text[s:e], True))
            cursor = e
        pieces.append((text[cursor:end], False))
        if end < len(text):
            pieces.append(("…", False))
        # Whitespace runs become one space before marking: escapes hold no whitespace.
        flat = [(_WS.sub(" ", piece), matched) for piece, matched in pieces]
        return mark_matches(flat).strip(" ")


def _centred(length: int, first: int, last: int) -> tuple[int, int]:
    """The excerpt's bounds: the matches from ``first`` to ``last`` with as much text on
    each side as the excerpt's length leaves (more on one side where the text ends on the
    other); a short text whole."""
    total = WINDOW_CHARS + 2 * _CONTEXT_CHARS
    if length <= total:
        return 0, length
    slack = max(2 * _CONTEXT_CHARS, total - (last - first))
    start = max(0, first - slack // 2)
    end = min(length, last + slack - (first - start))
    return max(0, min(start, end - total)), end


def _best_window(spans: list[tuple[int, int, str]]) -> tuple[int, int]:
    best = (0, 0)
    best_terms = 0
    j = 0
    for i, (start, _, _) in enumerate(spans):
        j = max(j, i)
        while j + 1 < len(spans) and spans[j + 1][1] - start <= WINDOW_CHARS:
            j += 1
        terms = len({term for _, _, term in spans[i : j + 1]})
        if terms > best_terms:
            best, best_terms = (i, j), terms
    return best


def highlighter(plan: QueryPlan) -> Highlighter:
    return _highlighter(plan)


@lru_cache(maxsize=64)
def _highlighter(plan: QueryPlan) -> Highlighter:
    terms: list[tuple[str, re.Pattern[str]]] = []
    literals: set[str] = set()
    content = any(not term.function_word for group in plan.groups for term in group)
    for number, group in enumerate(plan.groups):
        for term in group:
            if content and term.function_word:
                continue
            pattern = _term_regex(term)
            if pattern is not None:
                terms.append((f"t{number}", pattern))
                literals.update(_leading_literals(term))
    literals.discard("")
    if not terms or not literals:
        return Highlighter(None)
    ordered = sorted(literals, key=lambda lit: (-len(lit), lit))
    prefilter = re.compile("(?i:" + "|".join(re.escape(lit) for lit in ordered) + ")")
    one_group = len({label for label, _ in terms}) == 1
    return Highlighter(prefilter, tuple(terms), one_group)


@lru_cache(maxsize=4096)
def _term_regex(term: PlanTerm) -> re.Pattern[str] | None:
    body = _term_pattern(term)
    return re.compile(body) if body else None


def _leading_literals(term: PlanTerm) -> set[str]:
    """What a match of ``term`` starts with, case aside: its first word's exact form, or
    one of its derived forms (a stem, an identifier's first part, a CJK bigram)."""
    if not term.words:
        return set()
    first = term.words[0]
    return {first.exact, *first.derived}


# Only the literals are case-insensitive: a character class inside ``(?i:...)`` costs
# ~0.3 ms to compile (case folding of the class), and every new query term compiles.
_WORD_CHAR: Final = r"[^\W_]"
_NOT_AFTER_WORD: Final = r"(?<![^\W_])"
_NOT_BEFORE_WORD: Final = r"(?![^\W_])"
_ASCII_ALNUM: Final = "[A-Za-z0-9]"


def _literal(text: str) -> str:
    return "(?i:" + re.escape(text) + ")"


def _term_pattern(term: PlanTerm) -> str:
    words = []
    for word in term.words:
        if word.cjk:
            forms = [re.escape(word.exact)] + [re.escape(b) for b in word.derived]
            words.append("(?:" + "|".join(forms) + ")")
            continue
        forms = [_NOT_AFTER_WORD + _literal(word.exact) + _NOT_BEFORE_WORD]
        if not term.quoted and len(word.derived) == 1:
            forms.append(_part_pattern(word.derived[0]))
        elif not term.quoted:  # an identifier: its parts in order, as the index matches them
            forms.append(r"[_.\-]?".join(_part_pattern(d) for d in word.derived))
        words.append("(?:" + "|".join(forms) + ")")
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    # Several words: the phrase, words separated by anything that is not a word character.
    return r"[\W_]+".join(words)


def _part_pattern(stem: str) -> str:
    """A stem as the start of a word, or of an identifier part after a case change."""
    at_word_start = _NOT_AFTER_WORD + _literal(stem) + _WORD_CHAR + "*"
    if not stem[:1].isalpha() or not stem.isascii():
        return at_word_start
    head, tail = re.escape(stem[0].upper()), _literal(stem[1:]) if stem[1:] else ""
    at_part_start = rf"(?<=[A-Za-z0-9_]){head}{tail}{_ASCII_ALNUM}*"
    return f"(?:{at_word_start}|{at_part_start})"
