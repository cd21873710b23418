"""Times render as UTC ISO 8601 with milliseconds, and recalled text is quoted so that it
cannot close its own quote: checked against the straightforward definitions."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from worker.tools.formatting import RECALLED_CLOSE, RECALLED_OPEN, format_time, quote_recalled


def _iso(ms: int) -> str:
    instant = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@given(st.integers(min_value=-(10**12), max_value=253_402_300_799_999))
def test_format_time_is_utc_iso_with_milliseconds(ms: int) -> None:
    assert format_time(ms) == _iso(ms)


def test_format_time_edges() -> None:
    assert format_time(None) == "unknown"
    assert format_time(0) == "1970-01-01T00:00:00.000Z"
    assert format_time(-1) == "1969-12-31T23:59:59.999Z"
    assert format_time(1_796_200_000_999) == _iso(1_796_200_000_999)


@given(st.text(alphabet=st.sampled_from(["a", " ", RECALLED_OPEN, RECALLED_CLOSE, "\\", "é"])))
def test_recalled_text_cannot_close_its_quote(text: str) -> None:
    quoted = quote_recalled(text)
    inner = quoted[1:-1]
    assert quoted[0] == RECALLED_OPEN and quoted[-1] == RECALLED_CLOSE
    assert RECALLED_OPEN not in inner and RECALLED_CLOSE not in inner
    expected = text.replace(RECALLED_OPEN, "\\u27e6").replace(RECALLED_CLOSE, "\\u27e7")
    assert inner == expected
