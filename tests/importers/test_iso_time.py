"""``base.iso_time`` writes what its strftime form wrote (it is now isoformat's, faster):
every importer's event times depend on it byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.importers.base import iso_time

ZONES = st.builds(
    timezone, st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23))
)


def _strftime_form(moment: datetime) -> str:
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@settings(max_examples=500, deadline=None)
@given(
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=ZONES),
    st.sampled_from(["auto", "seconds", "milliseconds", "microseconds"]),
)
def test_an_iso_time_is_the_strftime_form(moment: datetime, spec: str) -> None:
    text = moment.isoformat(timespec=spec)
    assert iso_time(text) == _strftime_form(datetime.fromisoformat(text))


def test_a_year_before_1000_keeps_strftime_s_unpadded_year() -> None:
    moment = datetime(999, 5, 6, 7, 8, 9, 123999, tzinfo=UTC)
    assert iso_time("0999-05-06T07:08:09.123999Z") == _strftime_form(moment)
