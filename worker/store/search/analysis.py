"""Text analysis for the search index: the same at index time and at query time.

A text becomes two token streams (positions are the order of each stream):

- **exact**: each word lower-cased with diacritics folded, whole: ``maxAttempts`` ->
  ``maxattempts``, ``src/worker/store.py`` -> ``src worker store py`` (punctuation splits,
  so a path or dotted name is a phrase of its parts), an unspaced CJK run as one token;
- **derived**: what a word is also findable by: the Snowball stem of each word (English
  for Latin script, Russian for Cyrillic), the stemmed parts of an identifier
  (``SqliteVectorIndex`` -> ``sqlit vector index``, ``max_attempts`` -> ``max attempt``),
  and the overlapping character bigrams of a CJK run (``测试在`` -> ``测试 试在``).

Exact tokens are searched with a higher weight, so the exact form ranks first. The work
per word is cached: a corpus's vocabulary is Zipf-like, so almost every word is a dict hit
after the first few thousand events.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from itertools import chain
from typing import Final

import snowballstemmer

from worker.store.search.function_words import FUNCTION_WORDS

# Longer "words" are pasted keys, tokens, hashes and base64 blobs: searchable as themselves
# and by their ``_`` parts, each part analysed as a word of its own; a part longer than this
# is one unstemmed token (never split at case or digit boundaries: random text would give a
# token per character pair).
MAX_TOKEN_CHARS: Final = 64
# What of a long word is its exact token: a term stays far below the engine's limit, and two
# pasted strings alike this far are the same string.
MAX_WHOLE_CHARS: Final = 256
# Distinct words each cache keeps before it is emptied (the writer's limits set it).
_CACHE_LIMIT = 200_000

_WORD: Final = re.compile(r"\w+")
# An ASCII text's bytes with what ``\w`` matches there (letters, digits, ``_``) kept and every
# other byte a space: its words are then ``split()``'s, found in C without the regex engine
# (measured 16 against 20 us per archive event).
_ASCII_WORDS: Final = bytes(
    b if b < 0x80 and (chr(b).isalnum() or b == 0x5F) else 0x20 for b in range(256)
)
# Han, Hiragana, Katakana (with the half-width forms and the phonetic extensions), Hangul.
_CJK_CLASS: Final = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
)
_CJK_RUN: Final = re.compile(f"[{_CJK_CLASS}]+")
_HAS_CJK: Final = re.compile(f"[{_CJK_CLASS}]")
_CYRILLIC: Final = re.compile("[\u0400-\u04ff]")
# An English possessive at the end of a query term ("Caroline's", "parents'"): the term
# asks for its owner, who is named bare as often as with the clitic ("my grandma").
_POSSESSIVE: Final = re.compile(r"(?<=\w)['\u2019](?:s\b)?(?=\W*$)", re.IGNORECASE)
# Russian noun endings that say the plural whatever the case (the Snowball stem removes
# them): a plural query word's other plural forms count as its exact form.
_RUSSIAN_PLURAL: Final = ("ы", "ов", "ев", "ей", "ам", "ям", "ами", "ями", "ах", "ях")
# Identifier parts: "HTTPServer" -> HTTP Server, "maxAttempts2" -> max Attempts2.
_PART: Final = re.compile(r"[A-Z]+(?![a-z])\d*|[A-Z]?[a-z]+\d*|\d+|[^\W\d_A-Za-z]+\d*")


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a text: its exact token and its derived tokens (in order)."""

    exact: str
    derived: tuple[str, ...]
    cjk: bool = False


@cache
def _stemmer(language: str) -> Callable[[str], str]:
    # snowballstemmer uses PyStemmer's C implementation when it is installed.
    return snowballstemmer.stemmer(language).stemWord  # type: ignore[no-any-return]


def fold(text: str) -> str:
    """Lower-case with diacritics removed, so "café" and "cafe" are one term."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_stems: dict[str, str] = {}


def _stem(lowered: str) -> str:
    # Cached: identifiers share their parts (``max_attempts``, ``maxRetries``), so a part
    # is stemmed once however many new words it turns up in.
    found = _stems.get(lowered)
    if found is None:
        language = "russian" if _CYRILLIC.search(lowered) else "english"
        found = fold(_stemmer(language)(lowered))
        if len(_stems) >= _CACHE_LIMIT:
            _stems.clear()
        _stems[lowered] = found
    return found


def without_possessive(term: str) -> str:
    """A query term without an English possessive clitic ("grandma's" -> "grandma"): as
    written it analyses into a phrase of the name and ``s``, which an event naming the
    owner bare ("a gift from my grandma") does not hold."""
    return _POSSESSIVE.sub("", term)


def exact_forms(word: Word) -> tuple[str, ...]:
    """The tokens that count as ``word``'s exact form for the exact-form bonus: the word
    itself, and for a plural Russian noun its other plural forms (``тесты`` -> ``тестов``,
    ``тестам`` ...): Russian marks the case in the ending, so the exact form of a plural
    asked in the nominative is rarely in the text, and the plural is what tells a
    sentence about the tests from one about a test (the stem holds both)."""
    if word.cjk or not _CYRILLIC.search(word.exact) or len(word.derived) != 1:
        return (word.exact,)
    stem = word.derived[0]
    ending = word.exact[len(stem) :] if word.exact.startswith(stem) else ""
    if ending not in _RUSSIAN_PLURAL:
        return (word.exact,)
    return (word.exact, *(stem + e for e in _RUSSIAN_PLURAL if stem + e != word.exact))


def _analyze_plain(word: str) -> Word:
    """A word with no CJK characters."""
    exact = fold(word)
    if word.isascii():
        parts = [p.lower() for chunk in word.split("_") for p in _PART.findall(chunk)]
    else:  # folded first: case boundaries of other scripts are not identifier parts
        parts = [p for p in exact.split("_") if p]
    if len(parts) <= 1:
        return Word(exact, (_stem(exact),))
    return Word(exact, tuple(_stem(p) for p in parts))


def _analyze_long(word: str) -> Word:
    """A word longer than ``MAX_TOKEN_CHARS`` (``sk_live_51…``, ``dop_v1_<64 hex>``, a hash):
    itself, cut, as its exact token; its ``_`` parts as its derived ones, each analysed as
    a word of its own when short enough (so a query of a short part finds it)."""
    parts = [p for p in word.split("_") if p]
    derived: list[str] = []
    for part in parts:
        if len(part) > MAX_TOKEN_CHARS:
            derived.append(fold(part[:MAX_WHOLE_CHARS]))
        else:
            derived.extend(_analyze_plain(part).derived)
    return Word(fold(word[:MAX_WHOLE_CHARS]), tuple(derived))


def _bigrams(run: str) -> tuple[str, ...]:
    if len(run) == 1:
        return (run,)
    return tuple(run[i : i + 2] for i in range(len(run) - 1))


def _analyze_mixed(word: str) -> list[Word]:
    """A \\w+ run holding CJK characters: CJK runs and the plain words between them."""
    words: list[Word] = []
    pos = 0
    for run in _CJK_RUN.finditer(word):
        if run.start() > pos:
            words.append(_analyze_plain(word[pos : run.start()]))
        text = run.group()
        words.append(Word(text, _bigrams(text), cjk=True))
        pos = run.end()
    if pos < len(word):
        words.append(_analyze_plain(word[pos:]))
    return words


_cache: dict[str, tuple[Word, ...]] = {}


def words_of_token(token: str) -> tuple[Word, ...]:
    """The analysed words of one ``\\w+`` run (cached)."""
    found = _cache.get(token)
    if found is not None:
        return found
    result = _analyze_token(token)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[token] = result
    return result


def _analyze_token(token: str) -> tuple[Word, ...]:
    has_cjk = _HAS_CJK.search(token) is not None
    if len(token) > MAX_TOKEN_CHARS and has_cjk:
        result: tuple[Word, ...] = ()
    elif has_cjk:
        result = tuple(w for w in _analyze_mixed(token) if w.exact.strip("_"))
    else:
        stripped = token.strip("_")
        if not stripped:
            result = ()
        elif len(stripped) > MAX_TOKEN_CHARS:
            result = (_analyze_long(stripped),)
        else:
            result = (_analyze_plain(stripped),)
    return result


def words(text: str) -> list[Word]:
    """Every analysed word of ``text``, in order."""
    found: list[Word] = []
    for token in _WORD.findall(text):
        found.extend(words_of_token(token))
    return found


def first_derived(text: str, limit: int) -> list[str]:
    """The first ``limit`` distinct derived tokens of ``text``'s words, function words left
    out (a query never requires them), in order of first appearance. Like
    ``index_fields``, the per-token work is in C over the indexing caches (a loop over
    every word was a quarter of the follower's time)."""
    tokens = [t for t in dict.fromkeys(word_runs(text)) if t.lower() not in FUNCTION_WORDS]
    _fill_index_caches(tokens)
    found = dict.fromkeys(chain.from_iterable(map(_derived_of.__getitem__, tokens)))
    return list(found)[:limit]


# Token -> its exact tokens, and token -> its derived tokens, without the workspace prefix:
# one entry per distinct token whatever the number of workspaces (a cache per workspace
# prefix held the vocabulary once per workspace, and with thousands of small workspaces it
# filled and was cleared again and again: ingest ran at 0.42x the 24-workspace rate with
# 5,000). Filled from ``_analyze_token`` directly, not through ``words_of_token``'s cache
# (the query side's), so an indexed token is held once.
_exact_of: dict[str, tuple[str, ...]] = {}
_derived_of: dict[str, tuple[str, ...]] = {}


def _fill_index_caches(tokens: list[str]) -> None:
    """Analyse into the indexing caches the tokens they miss (emptied first when full)."""
    missing = set(tokens).difference(_exact_of)
    if missing:
        if len(_exact_of) + len(missing) > _CACHE_LIMIT:
            _exact_of.clear()
            _derived_of.clear()
            missing = set(tokens)
        for token in missing:
            _exact_of[token], _derived_of[token] = _fragment(token)


def _fragment(token: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if token.isascii():
        # ``_analyze_token``'s plain word, without its regex for CJK and its ``Word``: a word
        # the caches miss (an id, a hash) cost 5.9 us, now 4.4 (the same tokens).
        stripped = token.strip("_")
        if not stripped:
            return (), ()
        if len(stripped) <= MAX_TOKEN_CHARS:
            exact = stripped.lower()
            parts = [p.lower() for chunk in stripped.split("_") for p in _PART.findall(chunk)]
            if len(parts) <= 1:
                return (exact,), (_stem(exact),)
            return (exact,), tuple(map(_stem, parts))
    analysed = _analyze_token(token)
    return tuple(w.exact for w in analysed), tuple(d for w in analysed for d in w.derived)


def index_fields(text: str, prefix: str) -> tuple[str, str]:
    """The exact and derived token streams of ``text`` for the index, each token prefixed
    with the workspace's ``prefix`` and joined by spaces (the index splits on whitespace).

    The per-token work is in C (set difference, ``map`` and ``chain`` over the caches): a
    Python loop over every token was most of the writer's time on long tool outputs."""
    tokens = word_runs(text)
    _fill_index_caches(tokens)
    exact = list(chain.from_iterable(map(_exact_of.__getitem__, tokens)))
    derived = list(chain.from_iterable(map(_derived_of.__getitem__, tokens)))
    # The prefix goes in as the separator of one join: no per-token string work here.
    separator = " " + prefix
    return (
        prefix + separator.join(exact) if exact else "",
        prefix + separator.join(derived) if derived else "",
    )


def word_runs(text: str) -> list[str]:
    """``_WORD.findall(text)``: every run of word characters of ``text``, in order."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return _WORD.findall(text)


def set_cache_limit(words: int) -> None:
    """Bound the analysis caches (each: distinct words kept); the writer's limits set it."""
    global _CACHE_LIMIT
    if words < 1:
        raise ValueError("the analysis cache holds at least one word")
    _CACHE_LIMIT = words
    for held in (_cache, _stems, _exact_of, _derived_of):
        if len(held) > words:
            held.clear()


def tokens_of(values: Iterable[Word]) -> tuple[list[str], list[str]]:
    exact = [w.exact for w in values]
    derived = [d for w in values for d in w.derived]
    return exact, derived


def is_function_word(word: Word) -> bool:
    return not word.cjk and word.exact in FUNCTION_WORDS
