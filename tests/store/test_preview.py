"""An event preview is the start of its text with whitespace collapsed: the same whether
it is collapsed from a prefix (as ``rows.preview`` does) or from the whole text."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from worker.store.results import PREVIEW_CHARS, preview

_WS = re.compile(r"\s+")
# Words, every kind of whitespace (Unicode too) and long runs of it.
_PIECES = st.sampled_from(["a", "word", "é", "测试", " ", "\t", "\n", "\u00a0", "\u3000",
                           "\x1c", "\r\n", " " * 40, "\n" * 300])  # fmt: skip


def _collapsed_whole(body: str) -> str:
    text = _WS.sub(" ", body).strip()
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


@given(st.lists(_PIECES, max_size=400).map("".join))
def test_preview_equals_the_whole_text_collapsed(body: str) -> None:
    assert preview(body) == _collapsed_whole(body)


def test_preview_past_a_long_whitespace_run() -> None:
    # The prefix is all whitespace: the words after it still make the preview.
    body = " " * 2000 + "after the run"
    assert preview(body) == "after the run"
