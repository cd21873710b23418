"""The allow-list compiler from a model's search text to an FTS5 expression.

Supported syntax, and nothing else:

- words, ANDed: ``flaky test``
- "double-quoted phrases": ``"connection refused"`` (an unbalanced quote runs to the end)
- ``OR`` (upper case, between two terms) binds the adjacent terms: ``a b OR c d`` is
  ``a AND (b OR c) AND d``
- a leading ``-`` excludes a term: ``-foo``, ``-"a phrase"``
- a bare upper-case ``AND`` is dropped: terms are ANDed anyway, and a model that writes
  ``refund AND ledger`` means exactly that, not the word "and"

Every other character is literal text. Each term becomes an FTS5 string literal, so
``src/worker/store.py``, ``foo.bar()``, ``NEAR``, ``*``, ``^`` and ``:`` are plain text; the
tokenizer turns a term into a phrase of adjacent tokens, which keeps identifiers and paths
findable. A term with no token characters is dropped (an empty FTS5 phrase would match
nothing and turn the whole query into "no results"); which characters make tokens is asked
of FTS5 itself, so the answer agrees with the index's tokenizer exactly.

The result is meant for the ``body`` column: the provider wraps it as
``ws:"<token>" AND body:(<expression>)``.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from worker.store import schema
from worker.store.errors import InvalidQuery

_QUOTED_PREVIEW_CHARS: Final = 80
# NUL ends an FTS5 query string early, and lone surrogates cannot be bound as UTF-8; both
# are separators for the tokenizer anyway, so a space is the same text to FTS5.
_UNSAFE: Final = re.compile(r"[\x00\ud800-\udfff]")
_ASCII_TOKEN_CHAR: Final = re.compile(r"[0-9A-Za-z]")


@dataclass(frozen=True, slots=True)
class _Term:
    text: str
    excluded: bool


class _Or:
    """The ``OR`` operator between two terms."""


_OR: Final = _Or()


def compile_query(text: str) -> str:
    """Compile the model's ``text`` into an FTS5 expression, or raise ``InvalidQuery``."""
    items = [
        item
        for item in _lex(_UNSAFE.sub(" ", text))
        if isinstance(item, _Or) or has_tokens(item.text)
    ]
    groups, excluded = _group(items)
    if not groups:
        raise InvalidQuery(_nothing_searchable(text, had_excluded=bool(excluded)))
    positive = " AND ".join(_group_expression(group) for group in groups)
    if not excluded:
        return positive
    return f"({positive})" + "".join(f" NOT {_literal(term)}" for term in excluded)


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
            items.append(_Term(text[start + 1 : end], excluded))
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


def _group_expression(group: list[_Term]) -> str:
    if len(group) == 1:
        return _literal(group[0])
    return "(" + " OR ".join(_literal(term) for term in group) + ")"


def _literal(term: _Term) -> str:
    return '"' + term.text.replace('"', '""') + '"'


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
    """True when the index's tokenizer finds at least one token in ``term``."""
    if term.isascii():
        return _ASCII_TOKEN_CHAR.search(term) is not None
    if _ASCII_TOKEN_CHAR.search(term) is not None:
        return True
    return _fts5_has_tokens(_UNSAFE.sub(" ", term))


_probe_lock = threading.Lock()
_probe_conn: sqlite3.Connection | None = None


@lru_cache(maxsize=8192)
def _fts5_has_tokens(term: str) -> bool:
    # Unicode tables differ between Python and SQLite, and diacritic folding can leave no
    # token at all, so FTS5 is asked directly: tokenize the term into a scratch table.
    global _probe_conn
    with _probe_lock:
        if _probe_conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(
                f"CREATE VIRTUAL TABLE probe USING fts5(body, tokenize = '{schema.TOKENIZER}')"
            )
            conn.execute("CREATE VIRTUAL TABLE probe_vocab USING fts5vocab(probe, 'row')")
            _probe_conn = conn
        conn = _probe_conn
        conn.execute("INSERT INTO probe (rowid, body) VALUES (1, ?)", (term,))
        try:
            row = conn.execute("SELECT count(*) FROM probe_vocab").fetchone()
        finally:
            conn.execute("DELETE FROM probe WHERE rowid = 1")
        return bool(row[0])
