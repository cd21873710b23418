"""Time in a question (issue 34): which expressions are read, the UTC ranges they name, and
what the query compiler leaves of the words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from worker.store.search import time_words
from worker.store.search.query import compile_query

# Wednesday 2025-05-14 12:00 UTC: what relative times count from below.
REFERENCE_MS = int(datetime(2025, 5, 14, 12, tzinfo=UTC).timestamp() * 1000)


def described(query: str, reference_ms: int | None = REFERENCE_MS) -> list[str]:
    plan = compile_query(query)
    readings = [time_words.resolve(t, reference_ms) for t in plan.times]
    return [r.describe() for r in readings if r is not None]


@pytest.mark.parametrize(
    ("query", "reading"),
    [
        (
            "Which city did John recommend in January 2024?",
            "'January 2024' as 2024-01-01..2024-01-31",
        ),
        ("deploy on January 15, 2024", "'January 15, 2024' as 2024-01-15"),
        ("deploy on 15 January 2024", "'15 January 2024' as 2024-01-15"),
        ("deploy on 2024-02-29", "'2024-02-29' as 2024-02-29"),
        ("deploy 2024-02", "'2024-02' as 2024-02-01..2024-02-29"),
        ("what broke in 2023", "'2023' as 2023-01-01..2023-12-31"),
        ("what broke during Sept 2023", "'Sept 2023' as 2023-09-01..2023-09-30"),
        ("ошибка 15 января 2024", "'15 января 2024' as 2024-01-15"),
        ("что сломалось в марте 2024", "'марте 2024' as 2024-03-01..2024-03-31"),
        # Relative, from the reference (a Wednesday in May 2025).
        ("what did we fix yesterday", "'yesterday' as 2025-05-13"),
        ("what did we fix today", "'today' as 2025-05-14"),
        ("what did we fix last week", "'last week' as 2025-05-05..2025-05-11"),
        ("what did we fix this week", "'this week' as 2025-05-12..2025-05-18"),
        ("what did we fix last month", "'last month' as 2025-04-01..2025-04-30"),
        ("what did we fix last year", "'last year' as 2024-01-01..2024-12-31"),
        ("что мы чинили на прошлой неделе", "'на прошлой неделе' as 2025-05-05..2025-05-11"),
        ("что мы чинили вчера", "'вчера' as 2025-05-13"),
        # A month without its year: the latest one not after the reference.
        ("the garden in May", "'May' as 2025-05-01..2025-05-31"),
        ("the garden in June", "'June' as 2024-06-01..2024-06-30"),
    ],
)
def test_reads_dates_months_years_and_relative_times(query: str, reading: str) -> None:
    assert described(query) == [f"read {reading} (UTC)"]


@pytest.mark.parametrize(
    "query",
    [
        "May we deploy the fix",  # a modal, not a month: no preposition, no year
        "error 2024 in the log",  # a number: no preposition before it
        "port 8080 in use",
        "deploy on 2024-02-30",  # not a date
        "the last weekly report",
        '"January 2024"',  # quoted: exact words
    ],
)
def test_leaves_other_words_alone(query: str) -> None:
    assert compile_query(query).times == ()


def test_the_reading_is_not_a_word_and_punctuation_is_not_part_of_one() -> None:
    plan = compile_query("Which city did John recommend in January 2024?")
    assert [t.text for g in plan.required for t in g] == ["city", "John", "recommend"]
    plan = compile_query("whose test might fail tomorrow?")
    # "whose" and "might" are function words; "tomorrow?" is echoed without its "?".
    assert [t.text for g in plan.required for t in g] == ["test", "fail", "tomorrow"]


def test_a_query_of_a_time_alone_searches_it_as_words() -> None:
    plan = compile_query("2024-01-15")
    assert plan.times == () and [t.text for g in plan.groups for t in g] == ["2024-01-15"]


def test_a_relative_time_needs_a_reference() -> None:
    (expression,) = compile_query("fixes last week").times
    assert expression.needs_reference
    assert time_words.resolve(expression, None) is None
    (absolute,) = compile_query("fixes in March 2024").times
    reading = time_words.resolve(absolute, None)
    assert reading is not None
    start = int(datetime(2024, 3, 1, tzinfo=UTC).timestamp() * 1000)
    assert reading.span == (start, int(datetime(2024, 4, 1, tzinfo=UTC).timestamp() * 1000) - 1)
