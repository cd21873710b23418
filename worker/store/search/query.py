"""The allow-list compiler from a model's search text to a query plan.

Supported syntax, and nothing else:

- bare words: ``flaky test``. Every content word must match an event for an all-words
  hit; function words ("where", "did", "we") are never required. When no event holds
  every content word, the search falls back to the best partial matches.
- "double-quoted phrases": ``"connection refused"`` (an unbalanced quote runs to the end),
  matched as exact adjacent words
- ``OR`` (upper case, between two terms) binds the adjacent terms: ``a b OR c d`` is
  ``a AND (b OR c) AND d``
- a leading ``-`` excludes a term: ``-foo``, ``-"a phrase"``
- a bare upper-case ``AND`` is dropped: terms are ANDed anyway
- a date, month, year or relative time among the plain terms ("in January 2024", "last
  week"; ``worker.store.search.time_words``) is not a word to match: the plan keeps it apart
  (``times``), unless the query holds nothing else

Every other character is literal text: the plan holds analysed words
(``worker.store.search.analysis``), never query syntax of the search engine, so ``NEAR``, ``*``,
``^``, ``:`` and quotes inside words are plain text. A bare term that analyses into
several words (``src/worker/store.py``, ``foo.bar()``) is a phrase of them. A term with no
word characters is dropped; a query left with nothing raises ``InvalidQuery``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from worker.store.errors import InvalidQuery
from worker.store.search import analysis, time_words
from worker.store.search.analysis import Word

_QUOTED_PREVIEW_CHARS: Final = 80
# Lone surrogates cannot be encoded; NUL is no word character anyway.
_UNSAFE: Final = re.compile(r"[\x00\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class _Term:
    text: str
    excluded: bool
    quoted: bool = False


class _Or:
    """The ``OR`` operator between two terms."""


_OR: Final = _Or()


@dataclass(frozen=True, slots=True)
class PlanTerm:
    """One term of the query as the model wrote it, analysed."""

    text: str  # as written (for the reply's "No match at all for: ...")
    words: tuple[Word, ...]
    quoted: bool  # exact adjacent words only, no derived forms

    @property
    def function_word(self) -> bool:
        return not self.quoted and len(self.words) == 1 and analysis.is_function_word(self.words[0])


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """Groups of alternatives (ORed inside, ANDed between) and excluded terms.

    ``required`` are the groups an all-words hit must match: every group holding a content
    term, or every group when the query is made of function words only.
    """

    groups: tuple[tuple[PlanTerm, ...], ...]
    excluded: tuple[PlanTerm, ...]
    # Dates, months, years and relative times the query names (``time_words``): not words
    # to match; the search favours events of that time.
    times: tuple[time_words.TimeExpression, ...] = ()

    @property
    def required(self) -> tuple[tuple[PlanTerm, ...], ...]:
        content = tuple(g for g in self.groups if not all(t.function_word for t in g))
        return content or self.groups

    @property
    def natural_language(self) -> bool:
        """A question or sentence rather than keywords: it holds function words."""
        return any(t.function_word for g in self.groups for t in g)

    @property
    def optional(self) -> tuple[tuple[PlanTerm, ...], ...]:
        required = self.required
        return tuple(g for g in self.groups if g not in required)


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    """A model's search text and its plan, compiled once per request (``compile_query``, a
    pure function ``worker.store`` exports): the tools carry it from admission to the
    store's search, which never compiles it again."""

    text: str
    plan: QueryPlan


def compile_query(text: str) -> QueryPlan:
    """Compile the model's ``text`` into a ``QueryPlan``, or raise ``InvalidQuery``."""
    items = [
        item
        for item in _lex(_UNSAFE.sub(" ", text))
        if isinstance(item, _Or) or has_tokens(item.text)
    ]
    without_times, times = _times_apart(items)
    groups, excluded = _group(without_times)
    if not groups:  # only a time ("2024"): search for it as words
        groups, excluded = _group(items)
        times = ()
    if not groups:
        raise InvalidQuery(_nothing_searchable(text, had_excluded=bool(excluded)))
    return QueryPlan(
        groups=tuple(tuple(_plan_term(t) for t in g) for g in groups),
        excluded=tuple(_plan_term(t) for t in excluded),
        times=times,
    )


def _times_apart(
    items: list[_Term | _Or],
) -> tuple[list[_Term | _Or], tuple[time_words.TimeExpression, ...]]:
    """The items without the time expressions among their plain terms (a run of positive
    unquoted terms not joined by OR), and those expressions."""
    plain = [
        isinstance(item, _Term)
        and not item.excluded
        and not item.quoted
        and not (0 < i < len(items) - 1 and (items[i - 1] is _OR or items[i + 1] is _OR))
        for i, item in enumerate(items)
    ]
    taken: set[int] = set()
    times: list[time_words.TimeExpression] = []
    start = 0
    while start < len(items):
        if not plain[start]:
            start += 1
            continue
        end = start
        while end < len(items) and plain[end]:
            end += 1
        run = [item.text for item in items[start:end] if isinstance(item, _Term)]
        for positions, expression in time_words.read(run):
            taken.update(start + p for p in positions)
            times.append(expression)
        start = end
    return [item for i, item in enumerate(items) if i not in taken], tuple(times)


def _plan_term(term: _Term) -> PlanTerm:
    # A sentence's closing punctuation is not part of the word the reply names.
    shown = term.text if term.quoted else time_words.bare(term.text) or term.text
    # An unquoted possessive asks for its owner ("grandma's gift": grandma); quoted, as written.
    text = term.text if term.quoted else analysis.without_possessive(term.text) or term.text
    return PlanTerm(text=shown, words=tuple(analysis.words(text)), quoted=term.quoted)


def _lex(text: str) -> list[_Term | _Or]:
    """Split into terms and OR operators. Quotes open a phrase only at a term's start."""
    items: list[_Term | _Or] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        excluded = text[i] == "-"
        start = i + 1 if excluded else i
        if start < n and text[start] == '"':
            end = text.find('"', start + 1)
            end = n if end < 0 else end
            items.append(_Term(text[start + 1 : end], excluded, quoted=True))
            i = end + 1
            continue
        end = start
        while end < n and not text[end].isspace():
            end += 1
        word = text[start:end]
        if word == "OR" and not excluded:
            items.append(_OR)
        elif word == "AND" and not excluded:
            pass
        else:
            items.append(_Term(word, excluded))
        i = end
    return items


def _group(items: list[_Term | _Or]) -> tuple[list[list[_Term]], list[_Term]]:
    """AND-groups of ORed positive terms, and the excluded terms.

    An OR binds only when a positive term stands on each side; any other OR (leading,
    trailing, doubled, or next to an excluded term) has nothing to join and is dropped.
    """
    groups: list[list[_Term]] = []
    excluded: list[_Term] = []
    after_positive = False  # the previous item was a positive term
    pending_or = False  # an OR followed that positive term
    for item in items:
        if isinstance(item, _Or):
            # "a OR OR b" is still a OR b.
            pending_or = pending_or or after_positive
            after_positive = False
        elif item.excluded:
            excluded.append(item)
            after_positive = pending_or = False
        else:
            if pending_or and groups:
                groups[-1].append(item)
            else:
                groups.append([item])
            after_positive, pending_or = True, False
    return groups, excluded


def _nothing_searchable(text: str, *, had_excluded: bool) -> str:
    if had_excluded:
        return (
            "A query needs at least one word that is not excluded with -: "
            "add a word or phrase to search for."
        )
    if not text.strip():
        return "The query is empty: give at least one word or phrase to search for."
    shown = text.strip()
    if len(shown) > _QUOTED_PREVIEW_CHARS:
        shown = shown[:_QUOTED_PREVIEW_CHARS] + "…"
    return (
        f"The query has no searchable words: {shown!r} holds only punctuation, symbols or "
        "operators. Search for letters or numbers, e.g. a word, an identifier or a path."
    )


def has_tokens(term: str) -> bool:
    """True when ``term`` holds at least one word the index can find."""
    return bool(analysis.words(term))
