"""Time in a question: dates, months, years and relative expressions a query names.

"Which city did John recommend in January 2024?" names a time, not words an event holds:
``read`` finds such expressions among the query's terms (English and Russian, the
languages the analyser stems), so the query compiler can leave them out of the words and
the search can softly favour events from that time. What is recognised:

- ISO dates and months: ``2024-01-15``, ``2024-01``;
- a month name with a day and/or a year: ``January 2024``, ``January 15, 2024``,
  ``15 January 2024``, ``Jan 2024``, ``январь 2024``, ``15 января 2024``; a month name
  alone only after ``in``/``during``/``since``/``в`` (``May`` is also a verb);
- a year after such a word or a month: ``in 2024``, ``в 2024``;
- relative: ``today``, ``yesterday``, ``last``/``this`` ``week``/``month``/``year``,
  ``сегодня``, ``вчера``, ``на прошлой неделе``, ``в прошлом месяце``/``году``, ``на этой
  неделе``, ``в этом месяце``/``году``.

A reading without a year (``in May``) or a relative one needs a reference time; the store
gives the newest activity of the caller's workspace (``resolve``), so a reply stays a
function of the workspace and the request, and replicas agree. Every range is in UTC,
whole days, first and last millisecond inclusive.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Final

_MONTHS_EN: Final = tuple(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)
_MONTH_ABBR: Final = {m[:3]: i + 1 for i, m in enumerate(_MONTHS_EN)} | {"sept": 9}
# Russian month names: nominative, genitive ("15 января") and prepositional ("в январе").
_MONTHS_RU: Final = (
    ("январь", "января", "январе"),
    ("февраль", "февраля", "феврале"),
    ("март", "марта", "марте"),
    ("апрель", "апреля", "апреле"),
    ("май", "мая", "мае"),
    ("июнь", "июня", "июне"),
    ("июль", "июля", "июле"),
    ("август", "августа", "августе"),
    ("сентябрь", "сентября", "сентябре"),
    ("октябрь", "октября", "октябре"),
    ("ноябрь", "ноября", "ноябре"),
    ("декабрь", "декабря", "декабре"),
)
MONTHS: Final = (
    {m: i + 1 for i, m in enumerate(_MONTHS_EN)}
    | _MONTH_ABBR
    | {form: i + 1 for i, forms in enumerate(_MONTHS_RU) for form in forms}
)
# Words after which a bare month name or year is a time ("in May", "during 2024").
_TIME_PREPOSITIONS: Final = frozenset({"in", "during", "since", "from", "until", "в", "во"})
_YEARS: Final = range(1990, 2101)
_ISO_DAY: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_ISO_MONTH: Final = re.compile(r"(\d{4})-(\d{2})")
_DAY: Final = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?")
# Relative expressions: the words as lowered, and what they name.
_RELATIVE: Final = {
    ("today",): ("day", 0),
    ("yesterday",): ("day", -1),
    ("this", "week"): ("week", 0),
    ("last", "week"): ("week", -1),
    ("this", "month"): ("month", 0),
    ("last", "month"): ("month", -1),
    ("this", "year"): ("year", 0),
    ("last", "year"): ("year", -1),
    ("сегодня",): ("day", 0),
    ("вчера",): ("day", -1),
    ("на", "этой", "неделе"): ("week", 0),
    ("на", "прошлой", "неделе"): ("week", -1),
    ("в", "этом", "месяце"): ("month", 0),
    ("в", "прошлом", "месяце"): ("month", -1),
    ("в", "этом", "году"): ("year", 0),
    ("в", "прошлом", "году"): ("year", -1),
}
_LONGEST_RELATIVE: Final = max(len(words) for words in _RELATIVE)
# Trailing punctuation of a sentence, not part of a word ("2024?", "January,").
_TRAILING: Final = re.compile(r"[?!.,;:]+$")
# A range of event times: first and last millisecond, inclusive.
TimeRange = tuple[int, int]


@dataclass(frozen=True, slots=True)
class TimeExpression:
    """One expression as written, and what it names: an absolute day, month or year
    (``year`` set), or a span relative to the reference time (``offset`` units back)."""

    text: str
    unit: str  # "day" | "week" | "month" | "year"
    year: int | None = None
    month: int | None = None
    day: int | None = None
    offset: int = 0  # relative: 0 this unit, -1 the previous one

    @property
    def needs_reference(self) -> bool:
        return self.year is None


@dataclass(frozen=True, slots=True)
class TimeReading:
    """An expression resolved to a UTC range of whole days (inclusive milliseconds)."""

    text: str
    start_ms: int
    end_ms: int

    @property
    def span(self) -> TimeRange:
        return (self.start_ms, self.end_ms)

    def describe(self) -> str:
        first = _day_of(self.start_ms).isoformat()
        last = _day_of(self.end_ms).isoformat()
        span = first if first == last else f"{first}..{last}"
        return f"read {self.text!r} as {span} (UTC)"


def bare(term: str) -> str:
    """A term without the sentence punctuation that may end it ("2024?" -> "2024")."""
    return _TRAILING.sub("", term)


def read(terms: Sequence[str]) -> list[tuple[range, TimeExpression]]:
    """The time expressions among ``terms`` (the query's plain terms, in order), each with
    the positions it takes."""
    lowered = [bare(t).lower() for t in terms]
    found: list[tuple[range, TimeExpression]] = []
    i = 0
    while i < len(terms):
        match = _relative(lowered, i) or _absolute(lowered, i)
        if match is None:
            i += 1
            continue
        end, expression = match
        text = bare(" ".join(terms[i:end]))
        found.append((range(i, end), replace(expression, text=text)))
        i = end
    return found


def resolve(expression: TimeExpression, reference_ms: int | None) -> TimeReading | None:
    """The expression's UTC range; ``None`` when it needs a reference and has none."""
    if expression.year is not None:
        start, end = _absolute_span(expression.year, expression.month, expression.day)
    elif reference_ms is None:
        return None
    elif expression.month is not None:  # "in May": the latest May not after the reference
        ref = _day_of(reference_ms)
        year = ref.year if expression.month <= ref.month else ref.year - 1
        start, end = _absolute_span(year, expression.month, expression.day)
    else:
        start, end = _relative_span(_day_of(reference_ms), expression.unit, expression.offset)
    return TimeReading(expression.text, _ms(start), _ms(end + timedelta(days=1)) - 1)


def _relative(lowered: Sequence[str], i: int) -> tuple[int, TimeExpression] | None:
    for n in range(_LONGEST_RELATIVE, 0, -1):
        named = _RELATIVE.get(tuple(lowered[i : i + n]))
        if named is not None:
            return i + n, TimeExpression("", named[0], offset=named[1])
    return None


def _absolute(lowered: Sequence[str], i: int) -> tuple[int, TimeExpression] | None:
    word = lowered[i]
    if iso := _iso(word):
        return i + 1, iso
    after_preposition = i > 0 and lowered[i - 1] in _TIME_PREPOSITIONS
    # "15 January [2024]"
    if (first := _DAY.fullmatch(word)) and i + 1 < len(lowered) and lowered[i + 1] in MONTHS:
        return _month_from(lowered, i + 1, int(first[1]), start=i)
    if word in MONTHS:
        nxt = lowered[i + 1] if i + 1 < len(lowered) else ""
        if (then := _DAY.fullmatch(nxt)) and not _year(nxt):  # "January 15[,] [2024]"
            return _month_from(lowered, i + 1, int(then[1]), start=i, day_after=True)
        if _year(nxt) or after_preposition:
            return _month_from(lowered, i, None, start=i)
        return None
    if after_preposition and (year := _year(word)):
        return i + 1, TimeExpression("", "year", year)
    return None


def _iso(word: str) -> TimeExpression | None:
    """``2024-01-15`` (a day) or ``2024-01`` (a month), when it is a real date."""
    if day := _ISO_DAY.fullmatch(word):
        y, m, d = (int(g) for g in day.groups())
        return TimeExpression("", "day", y, m, d) if _valid(y, m, d) else None
    if month := _ISO_MONTH.fullmatch(word):
        y, m = int(month[1]), int(month[2])
        return TimeExpression("", "month", y, m) if _valid(y, m) else None
    return None


def _month_from(
    lowered: Sequence[str], at: int, day: int | None, *, start: int, day_after: bool = False
) -> tuple[int, TimeExpression] | None:
    """A month name at ``at`` (or, ``day_after``, the day at ``at`` after the month at
    ``start``), then an optional year."""
    month = MONTHS[lowered[start if day_after else at]]
    end = at + 1
    year = _year(lowered[end]) if end < len(lowered) else None
    if year is not None:
        end += 1
    if day is not None and not _valid(year or 2000, month, day):
        return None
    unit = "month" if day is None else "day"
    return end, TimeExpression("", unit, year, month, day)


def _year(word: str) -> int | None:
    return int(word) if word.isdigit() and len(word) == 4 and int(word) in _YEARS else None


def _valid(year: int, month: int, day: int = 1) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _absolute_span(year: int, month: int | None, day: int | None) -> tuple[date, date]:
    if month is None:
        return date(year, 1, 1), date(year, 12, 31)
    if day is not None:
        return date(year, month, day), date(year, month, day)
    first = date(year, month, 1)
    return first, _next_month(first) - timedelta(days=1)


def _relative_span(today: date, unit: str, offset: int) -> tuple[date, date]:
    if unit == "day":
        day = today + timedelta(days=offset)
        return day, day
    if unit == "week":  # ISO weeks: Monday to Sunday
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return monday, monday + timedelta(days=6)
    if unit == "month":
        first = today.replace(day=1)
        if offset < 0:
            first = (first - timedelta(days=1)).replace(day=1)
        return first, _next_month(first) - timedelta(days=1)
    year = today.year + offset
    return date(year, 1, 1), date(year, 12, 31)


def _next_month(first: date) -> date:
    return (first + timedelta(days=32)).replace(day=1)


def _day_of(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000, UTC).date()


def _ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)
