"""An event's readable text in parts, and where a query matches in it: every offset in code
points, parts on fixed boundaries that never split a character, and the match a hit
shows (the excerpt's window), not the first word of the query found anywhere."""

from __future__ import annotations

import unicodedata

import pytest

from worker.store.search.readable import (
    best_match,
    character_start,
    matches,
    part_bounds,
    part_of,
)

SIZE = 64
# Characters of several code points each, and of several UTF-8 bytes / UTF-16 units.
FAMILY = "👨\u200d👩\u200d👧"  # joined by zero-width joiners
THUMB = "👍🏽"  # a skin tone
FLAG = "🇳🇿"  # two regional indicators
E_ACUTE = "e\u0301"  # e and a combining acute accent
TEXTS = {
    "cyrillic": "Журнал: шаг завершён успешно. " * 20,
    "cjk": "构建日志：编译步骤已经完成。" * 30,
    "emoji": f"deploy {FAMILY} ok {THUMB} {FLAG} ✅ " * 25,
    "combining": unicodedata.normalize("NFD", "café crème brûlée ñandú Dvořák ") * 25,
}


def _continues(text: str, at: int) -> bool:
    return (
        unicodedata.category(text[at]).startswith("M")
        or text[at] in "\u200d🏽"
        or (at > 0 and text[at - 1] == "\u200d")
    )


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_parts_cover_the_text_and_never_split_a_character(name: str) -> None:
    text = TEXTS[name]
    parts = -(-len(text) // SIZE)
    pieces = [part_bounds(text, k, SIZE) for k in range(parts)]
    assert "".join(text[s:e] for s, e in pieces) == text
    for k, (start, end) in enumerate(pieces):
        assert k * SIZE - 32 <= start <= k * SIZE and start < end
        assert start == 0 or not _continues(text, start), (name, k, text[start - 2 : start + 2])
        for at in (start, end - 1):
            assert part_of(text, at, SIZE) == k  # any offset in a part asks for that part


def test_a_boundary_inside_a_character_moves_back_to_its_start() -> None:
    for glyph in (FAMILY, THUMB, E_ACUTE):
        for inside in range(1, len(glyph)):
            text = "x" * (SIZE - inside) + glyph + "y" * SIZE
            assert character_start(text, SIZE) == SIZE - inside, glyph
            assert part_bounds(text, 1, SIZE)[0] == SIZE - inside
            assert text[part_bounds(text, 0, SIZE)[1] :].startswith(glyph)


@pytest.mark.parametrize(
    ("query", "word", "before"),
    [
        ("Векторный", "Векторный", "Журнал сборки: шаг завершён. " * 700),
        ("向量索引", "向量索引", "编译步骤已经完成，没有错误。" * 1500),
        ("quokkafailover", "quokkafailover", f"ok {FAMILY} {THUMB} {FLAG} " * 1500),
        ("zarzuela", "zarzuela", unicodedata.normalize("NFD", "crème brûlée ñandú ") * 1500),
    ],
)
def test_match_offsets_are_code_points_past_the_first_part(
    query: str, word: str, before: str
) -> None:
    text = before + word + " tail"
    # Bytes and UTF-16 units would both be off by thousands here.
    assert len(before.encode()) - len(before) > 5_000 or len(before.encode("utf-16-le")) > 2 * len(
        before
    )
    assert matches(query, text) == [(len(before), len(before) + len(word))]
    assert best_match(query, text) == len(before)


def test_a_match_keeps_the_marks_of_its_last_letter() -> None:
    text = unicodedata.normalize("NFD", "Построен векторный индекс")  # й as и + breve
    [(start, end)] = [m for m in matches("векторный", text) if text[m[0]] in "вВ"]
    assert text[start:end] == unicodedata.normalize("NFD", "векторный")


def test_the_hit_s_match_is_the_excerpt_s_window_not_the_first_word() -> None:
    # One word of the query alone early, both together later: a hit's excerpt shows the
    # later place, so the part a hit opens must hold it.
    text = "индекс обновлён. " + "шаг завершён. " * 2_000 + "Векторный индекс перестроен."
    assert matches("Векторный индекс", text)[0][0] == 0
    at = best_match("Векторный индекс", text)
    assert at is not None and text[at:].startswith("Векторный индекс")
    assert best_match("absent", text) is None
