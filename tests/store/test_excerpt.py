"""Excerpts highlight what the search matched on: content words, in a window centred on
them (issue 24: "[Work] [on] [bead] … [the]")."""

from __future__ import annotations

import re

from worker.store.marks import mark_matches, plain_excerpt, split_excerpt
from worker.store.search.excerpt import WINDOW_CHARS, highlighter
from worker.store.search.query import compile_query

FILLER = "The notes of the day said the team had a plan for the build and the release. "
TEXT = (
    FILLER * 4
    + "Then we started the work on the bead tracker, the first task of the week. "
    + FILLER * 4
)


def _bracketed(excerpt: str) -> list[str]:
    return [word.lower() for word in re.findall(r"\[([^\]]+)\]", excerpt)]


def test_function_words_of_a_question_are_not_highlighted() -> None:
    excerpt = highlighter(compile_query("where did we start work on the bead")).excerpt(TEXT)
    assert excerpt is not None
    assert _bracketed(excerpt) == ["started", "work", "bead"]


def test_the_window_is_centred_on_the_content_words() -> None:
    excerpt = highlighter(compile_query("where did we start work on the bead")).excerpt(TEXT)
    assert excerpt is not None
    before, _, rest = excerpt.partition("[started]")
    after = rest.rpartition("[bead]")[2]
    # Text on both sides of the matches, about as much on each.
    assert len(before) > 20 and len(after) > 20 and abs(len(before) - len(after)) < 25
    assert len(excerpt) < WINDOW_CHARS * 2


def test_a_query_of_function_words_or_a_phrase_is_highlighted_as_written() -> None:
    alone = highlighter(compile_query("on the")).excerpt("put it on the shelf")
    assert alone is not None and _bracketed(alone) == ["on", "the"]
    phrase = highlighter(compile_query('"work on the bead"')).excerpt(TEXT)
    assert phrase is not None and _bracketed(phrase) == ["work on the bead"]


def test_literal_brackets_are_escaped_so_a_bare_bracket_is_a_mark() -> None:
    text = "- [X] pinned the refund ledger; pip printed [end of output] and a\\[0] path C:\\tmp"
    excerpt = highlighter(compile_query("refund")).excerpt(text)
    assert excerpt is not None
    # Only the match is between bare brackets; the text's own read as escaped.
    assert re.findall(r"(?<!\\)\[([^\]]*)(?<!\\)\]", excerpt) == ["refund"]
    assert "\\[X\\]" in excerpt and "\\[end of output\\]" in excerpt
    assert "C:\\tmp" in excerpt  # a backslash before no bracket stays as it is
    plain, spans = split_excerpt(excerpt)
    assert plain == text
    assert [plain[s:e] for s, e in spans] == ["refund"]


def test_marking_and_splitting_are_exact_inverses() -> None:
    # Every mix of brackets, backslashes and marks, including a backslash before a mark.
    import itertools

    alphabet = ("a", "[", "]", "\\", " ")
    for length in range(5):
        for chars in itertools.product(alphabet, repeat=length):
            for cut in range(length + 1):
                pieces = [("".join(chars[:cut]), False), ("".join(chars[cut:]), True)]
                plain, spans = split_excerpt(mark_matches(pieces))
                assert plain == "".join(chars)
                assert spans == [(cut, length)]
    assert plain_excerpt("[X] done") == "\\[X\\] done"
