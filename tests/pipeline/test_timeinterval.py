"""Time intervals: Alertmanager's `timeinterval` semantics, on the inputs and outcomes of its own tests
(timeinterval_test.go: timeIntervalTestCases, yamlUnmarshalTestCases, completeTestCases, TestIntervener_Mutes),
then what Alertmanager leaves to the wall clock (DST days) and the next-change search the engine wakes on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from alertrouter.pipeline.timeinterval import (
    DayRange,
    IntervalClock,
    TimeInterval,
    TimeRange,
    TimeSpec,
    describe_spec,
    parse_clock,
    parse_days_of_month,
    parse_location,
    parse_months,
    parse_time_range,
    parse_weekdays,
    parse_years,
    route_mute,
)

SYDNEY = ZoneInfo("Australia/Sydney")
NEW_YORK = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
SHANGHAI = ZoneInfo("Asia/Shanghai")


def at(text: str) -> datetime:
    """Go's RFC822Z, as Alertmanager's tests write instants: `02 Jan 06 15:04 +0000`."""
    return datetime.strptime(text, "%d %b %y %H:%M %z")


def spec(
    *,
    times: list[tuple[str, str]] | None = None,
    weekdays: list[Any] | None = None,
    days_of_month: list[Any] | None = None,
    months: list[Any] | None = None,
    years: list[Any] | None = None,
    location: str | None = None,
) -> TimeSpec:
    """A spec from the strings a rules file holds, through the parsers."""
    return TimeSpec(
        times=None if times is None else tuple(parse_time_range(a, b) for a, b in times),
        weekdays=None if weekdays is None else tuple(parse_weekdays(w) for w in weekdays),
        days_of_month=None if days_of_month is None else tuple(parse_days_of_month(d) for d in days_of_month),
        months=None if months is None else tuple(parse_months(m) for m in months),
        years=None if years is None else tuple(parse_years(y) for y in years),
        location=UTC if location is None else parse_location(location),
    )


BUSINESS = spec(times=[("09:00", "17:00")], weekdays=["monday:friday"])

# (case, spec, instants inside, instants outside): Alertmanager's timeIntervalTestCases, yamlUnmarshalTestCases
# and completeTestCases, each instant as its test wrote it.
CONTAINS = [
    ("empty spec: always", TimeSpec(), ["02 Jan 06 15:04 +0000", "03 Jan 07 10:04 +0000", "04 Jan 06 09:04 +0000"], []),
    (
        "9-17 monday to friday",
        BUSINESS,
        ["04 May 20 15:04 +0000", "05 May 20 10:04 +0000", "09 Jun 20 09:04 +0000"],
        ["03 May 20 15:04 +0000", "04 May 20 08:59 +0000", "05 May 20 05:00 +0000"],
    ),
    (
        "easter 2020",
        spec(days_of_month=["4:6"], months=["4"], years=["2020"]),
        ["04 Apr 20 15:04 +0000", "05 Apr 20 00:00 +0000", "06 Apr 20 23:05 +0000"],
        [
            "03 May 18 15:04 +0000",
            "03 Apr 20 23:59 +0000",
            "04 Jun 20 23:59 +0000",
            "06 Apr 19 23:59 +0000",
            "07 Apr 20 00:00 +0000",
        ],
    ),
    (
        "last 3 days of each month",
        spec(days_of_month=["-3:-1"]),
        [
            "31 Jan 20 15:04 +0000",
            "30 Jan 20 15:04 +0000",
            "29 Jan 20 15:04 +0000",
            "30 Jun 20 00:00 +0000",
            "29 Feb 20 23:05 +0000",
        ],
        [
            "03 May 18 15:04 +0000",
            "27 Jan 20 15:04 +0000",
            "03 Apr 20 23:59 +0000",
            "04 Jun 20 23:59 +0000",
            "06 Apr 19 23:59 +0000",
            "07 Apr 20 00:00 +0000",
            "01 Mar 20 00:00 +0000",
        ],
    ),
    (
        # Built directly, as Alertmanager's test does: the parser refuses -31:31 (a negative start, positive end).
        "out-of-bound days clamped to the month",
        TimeSpec(months=(DayRange(6, 6),), days_of_month=(DayRange(-31, 31),)),
        ["30 Jun 20 00:00 +0000", "01 Jun 20 00:00 +0000"],
        ["31 May 20 00:00 +0000", "1 Jul 20 00:00 +0000"],
    ),
    (
        "Sydney 9-17 monday to friday",
        spec(times=[("09:00", "17:00")], weekdays=["monday:friday"], location="Australia/Sydney"),
        ["06 Apr 21 13:00 +1000"],
        ["06 Apr 21 13:00 +0000"],
    ),
    (
        "Sydney in daylight saving time",
        spec(times=[("09:00", "17:00")], weekdays=["monday:friday"], months=["11"], location="Australia/Sydney"),
        ["01 Nov 21 09:00 +1100", "31 Oct 21 22:00 +0000"],
        ["31 Oct 21 21:00 +0000"],
    ),
    (
        "last day in a spring-forward month (New York)",
        spec(days_of_month=["-1"], location="America/New_York"),
        ["31 Mar 21 12:00 -0400"],
        ["30 Mar 21 12:00 -0400"],
    ),
    (
        "simple business hours",
        BUSINESS,
        ["08 Jul 20 09:00 +0000", "08 Jul 20 16:59 +0000", "01 Apr 21 13:00 +0000"],
        ["08 Jul 20 05:00 +0000", "08 Jul 20 08:59 +0000"],
    ),
    (
        "last week of Q1 but saturday, business hours, 2020-2025 and 2030-2035",
        spec(
            weekdays=["monday:friday", "sunday"],
            months=["january:march"],
            days_of_month=["-7:-1"],
            years=["2020:2025", "2030:2035"],
            times=[("09:00", "17:00")],
        ),
        [
            "27 Jan 21 09:00 +0000",
            "28 Jan 21 16:59 +0000",
            "29 Jan 21 13:00 +0000",
            "31 Mar 25 13:00 +0000",
            "31 Jan 35 13:00 +0000",
        ],
        ["30 Jan 21 13:00 +0000", "01 Apr 21 13:00 +0000", "30 Jan 26 13:00 +0000", "31 Jan 35 17:01 +0000"],
    ),
    (
        "complete: weekday ranges, day 1, 10 and 20 to the end, Q1 2020-2023, 13-15",
        spec(
            weekdays=["monday:wednesday", "saturday", "sunday"],
            times=[("13:00", "15:00")],
            days_of_month=["1", "10", "20:-1"],
            years=["2020:2023"],
            months=["january:march"],
        ),
        ["10 Jan 21 13:00 +0000", "30 Jan 21 14:24 +0000"],
        ["09 Jan 21 13:00 +0000", "20 Jan 21 12:59 +0000", "02 Feb 21 13:00 +0000"],
    ),
    (
        "30:31 in february is skipped, not clamped to the 28th",
        spec(days_of_month=["30:31"], years=["2020:2023"], months=["february"]),
        [],
        ["28 Feb 21 13:00 +0000"],
    ),
]


@pytest.mark.parametrize(("case", "s", "inside", "outside"), CONTAINS, ids=[c[0] for c in CONTAINS])
def test_contains_as_alertmanager(case: str, s: TimeSpec, inside: list[str], outside: list[str]) -> None:
    assert [t for t in inside if not s.contains(at(t))] == []
    assert [t for t in outside if s.contains(at(t))] == []


# Alertmanager's timeStringTestCases: the minutes a range holds, or an error.
@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("00:00", "24:00", TimeRange(0, 1440)),
        ("01:35", "17:39", TimeRange(95, 1059)),
        ("09:35", "09:39", TimeRange(575, 579)),
        ("17:31", "17:31", None),  # equal
        ("12:30", "24:01", None),  # end out of range
        ("09:30", "07:41", None),  # start after end
        ("24:00", "17:41", None),  # start out of range and after end
        ("22:00", "06:00", None),  # across midnight: two ranges, not one
    ],
)
def test_time_ranges(start: str, end: str, expected: TimeRange | None) -> None:
    if expected is None:
        with pytest.raises(ValueError, match=r"must be before|invalid format"):
            parse_time_range(start, end)
    else:
        assert parse_time_range(start, end) == expected


def test_across_midnight_is_refused_with_the_two_ranges_to_write() -> None:
    with pytest.raises(ValueError, match="22:00-24:00 and 00:00-06:00"):
        parse_time_range("22:00", "06:00")


@pytest.mark.parametrize("text", ["01:99", "99:99", "9:00", "24:30", "0900", "", "12:00:00"])
def test_bad_clock_times(text: str) -> None:
    with pytest.raises(ValueError, match="couldn't parse timestamp"):
        parse_clock(text)


# Alertmanager's yamlUnmarshalTestCases that must fail, with (part of) its message.
@pytest.mark.parametrize(
    ("parse", "value", "message"),
    [
        (parse_weekdays, "friday:monday", "start day friday is after end day monday"),
        (parse_weekdays, "saturday:sunday", "cannot wrap round the week"),
        (parse_weekdays, "blurgsday:flurgsday", "blurgsday is not a valid weekday"),
        (parse_weekdays, "1:3", "1 is not a valid weekday"),
        (parse_weekdays, "-2:-1", "-2 is not a valid weekday"),
        (parse_weekdays, "monday:tuesday:friday", "invalid format"),
        (parse_days_of_month, "0", "0 is not a valid day of the month: out of range"),
        (parse_days_of_month, "-50:-20", "-50 is not a valid day of the month: out of range"),
        (parse_days_of_month, "1:50", "50 is not a valid day of the month: out of range"),
        (parse_days_of_month, "-15:5", "end day must be negative if start day is negative"),
        (parse_days_of_month, "10:-25", "end day -25 is always before start day 10"),
        (parse_months, "martius:june", "martius is not a valid month"),
        (parse_months, "march:junius", "junius is not a valid month"),
        (parse_months, "december:january", "end month january is before start month december"),
        (parse_months, "13", "out of range"),  # stricter than Alertmanager, which never matches it
        (parse_years, "2022:2020", "end year 2020 is before start year 2022"),
        (parse_years, "twenty", "twenty is not a valid year"),
        (parse_weekdays, True, "not a valid weekday"),
    ],
)
def test_bad_ranges(parse: Any, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(value)


@pytest.mark.parametrize(
    ("parse", "value", "expected"),
    [
        (parse_weekdays, "Monday:FRIDAY", DayRange(1, 5)),
        (parse_weekdays, "sunday", DayRange(0, 0)),
        (parse_days_of_month, "1:-1", DayRange(1, -1)),
        (parse_days_of_month, -1, DayRange(-1, -1)),  # YAML reads it as a number
        (parse_months, "January:december", DayRange(1, 12)),
        (parse_months, "1:3", DayRange(1, 3)),
        (parse_months, "may", DayRange(5, 5)),
        (parse_years, 2026, DayRange(2026, 2026)),
    ],
)
def test_good_ranges(parse: Any, value: Any, expected: DayRange) -> None:
    assert parse(value) == expected


@pytest.mark.parametrize("name", ["Mars/Olympus", "Local", "", "asia/shanghai"])
def test_bad_locations(name: str) -> None:
    with pytest.raises(ValueError, match="location"):
        parse_location(name)


EVENINGS = TimeInterval(
    "evenings", (spec(times=[("00:00", "09:00"), ("17:00", "24:00")], location="Australia/Sydney"),)
)
WEEKENDS = TimeInterval("weekends", (spec(weekdays=["saturday", "sunday"], location="Australia/Sydney"),))
INTERVALS = {"evenings": EVENINGS, "weekends": WEEKENDS}


# Alertmanager's TestIntervener_Mutes: the mute intervals in force, by name.
@pytest.mark.parametrize(
    ("now", "muted_by"),
    [
        (datetime(2024, 1, 1, 0, 0, tzinfo=SYDNEY), ("evenings",)),
        (datetime(2024, 1, 1, 9, 0, tzinfo=SYDNEY), None),
        (datetime(2024, 1, 6, 10, 0, tzinfo=SYDNEY), ("weekends",)),
        (datetime(2024, 1, 6, 17, 0, tzinfo=SYDNEY), ("evenings", "weekends")),
        (datetime(2024, 1, 1, 10, 0, tzinfo=UTC), ("evenings",)),  # 21:00 in Sydney
        (datetime(2024, 1, 6, 10, 0, tzinfo=UTC), ("evenings", "weekends")),
    ],
)
def test_route_muted_by_mute_intervals(now: datetime, muted_by: tuple[str, ...] | None) -> None:
    mute, _ = route_mute(INTERVALS, mute=["evenings", "weekends"], active=[], at=now)
    assert (mute.intervals if mute else None) == muted_by
    assert mute is None or not mute.outside_active


def test_active_intervals_mute_outside_all_of_them_naming_them_all() -> None:
    business = TimeInterval("business", (spec(times=[("09:00", "18:00")], weekdays=["monday:friday"]),))
    maintenance = TimeInterval("maintenance", (spec(weekdays=["saturday"]),))
    intervals = {"business": business, "maintenance": maintenance}
    inside, _ = route_mute(intervals, mute=[], active=["business", "maintenance"], at=at("04 Nov 26 10:00 +0000"))
    assert inside is None
    outside, change = route_mute(intervals, mute=[], active=["business", "maintenance"], at=at("04 Nov 26 20:00 +0000"))
    assert outside is not None
    assert outside.outside_active
    assert outside.intervals == ("business", "maintenance")
    assert change == datetime(2026, 11, 5, 9, 0, tzinfo=UTC)  # thursday 09:00, when business begins
    # Active but muted too: the mute interval wins.
    muted, _ = route_mute(intervals, mute=["maintenance"], active=["maintenance"], at=at("07 Nov 26 10:00 +0000"))
    assert muted is not None
    assert muted.intervals == ("maintenance",)
    assert not muted.outside_active


def test_an_interval_without_specs_is_never_active_and_an_empty_list_matches_nothing() -> None:
    never = TimeInterval("never", ())
    assert not never.active(at("04 Nov 26 10:00 +0000"))
    assert never.next_change(at("04 Nov 26 10:00 +0000")) is None
    assert not TimeSpec(weekdays=()).contains(at("04 Nov 26 10:00 +0000"))


# DST days, read on the wall clock.
def test_a_business_day_in_new_york_across_the_spring_forward() -> None:
    s = spec(times=[("09:00", "17:00")], location="America/New_York")
    # 2021-03-14: clocks jump from 02:00 EST to 03:00 EDT; 09:00 local is 13:00 UTC that day, 14:00 the day before.
    assert s.contains(datetime(2021, 3, 13, 14, 0, tzinfo=UTC))
    assert not s.contains(datetime(2021, 3, 14, 12, 59, tzinfo=UTC))
    assert s.contains(datetime(2021, 3, 14, 13, 0, tzinfo=UTC))
    interval = TimeInterval("ny", (s,))
    assert interval.next_change(datetime(2021, 3, 14, 0, 0, tzinfo=UTC)) == datetime(2021, 3, 14, 13, 0, tzinfo=UTC)


def test_a_range_inside_the_skipped_hour_never_matches_that_day() -> None:
    skipped = TimeInterval("skipped", (spec(times=[("02:15", "02:45")], location="Europe/Berlin"),))
    # 2026-03-29: Berlin skips 02:00-03:00 (01:00 UTC). The day before and after, 02:15 CET/CEST is inside.
    assert skipped.active(datetime(2026, 3, 28, 1, 20, tzinfo=UTC))
    assert not any(
        skipped.active(datetime(2026, 3, 28, 23, 0, tzinfo=UTC) + timedelta(minutes=m)) for m in range(0, 24 * 60, 5)
    )
    assert skipped.next_change(datetime(2026, 3, 28, 12, 0, tzinfo=UTC)) == datetime(2026, 3, 30, 0, 15, tzinfo=UTC)


def test_a_range_cut_by_the_spring_forward_ends_at_the_jump() -> None:
    cut = TimeInterval("cut", (spec(times=[("01:30", "02:30")], location="Europe/Berlin"),))
    # 2026-03-29 01:00 UTC: Berlin's 02:00 CET becomes 03:00 CEST, past the range's end.
    assert cut.active(datetime(2026, 3, 29, 0, 45, tzinfo=UTC))
    assert cut.next_change(datetime(2026, 3, 29, 0, 45, tzinfo=UTC)) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_the_repeated_hour_matches_both_times_round() -> None:
    repeated = TimeInterval("repeated", (spec(times=[("02:00", "03:00")], location="Europe/Berlin"),))
    # 2026-10-25: Berlin goes 03:00 CEST back to 02:00 CET; 02:00-03:00 local is 00:00-01:00 and 01:00-02:00 UTC.
    start = datetime(2026, 10, 24, 22, 0, tzinfo=UTC)
    assert repeated.next_change(start) == datetime(2026, 10, 25, 0, 0, tzinfo=UTC)
    assert repeated.active(datetime(2026, 10, 25, 0, 30, tzinfo=UTC))
    assert repeated.active(datetime(2026, 10, 25, 1, 30, tzinfo=UTC))
    assert repeated.next_change(datetime(2026, 10, 25, 0, 30, tzinfo=UTC)) == datetime(2026, 10, 25, 2, 0, tzinfo=UTC)


def test_a_night_mute_across_the_fall_back_ends_at_local_morning() -> None:
    night = TimeInterval("night", (spec(times=[("22:00", "24:00"), ("00:00", "07:00")], location="America/New_York"),))
    # 2026-11-01: New York falls back at 02:00 EDT; 07:00 EST is 12:00 UTC (11:00 the day before).
    assert night.next_change(datetime(2026, 11, 1, 3, 0, tzinfo=UTC)) == datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert night.next_change(datetime(2026, 10, 31, 3, 0, tzinfo=UTC)) == datetime(2026, 10, 31, 11, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("interval", "now", "expected"),
    [
        # Shanghai business hours: from a wednesday 20:00 local (12:00 UTC), they begin at thursday 09:00 local.
        (
            TimeInterval(
                "shanghai",
                (spec(times=[("09:00", "18:00")], weekdays=["monday:friday"], location="Asia/Shanghai"),),
            ),
            datetime(2026, 11, 25, 12, 0, tzinfo=UTC),
            datetime(2026, 11, 26, 1, 0, tzinfo=UTC),
        ),
        # ... and from friday 17:59:30 local they end at 18:00, not at midnight.
        (
            TimeInterval(
                "shanghai",
                (spec(times=[("09:00", "18:00")], weekdays=["monday:friday"], location="Asia/Shanghai"),),
            ),
            datetime(2026, 11, 27, 9, 59, 30, tzinfo=UTC),
            datetime(2026, 11, 27, 10, 0, tzinfo=UTC),
        ),
        # A whole-day interval ends at the next local midnight; last day of the month to the next month's.
        (
            TimeInterval("last-day", (spec(days_of_month=["-1"]),)),
            datetime(2026, 2, 28, 10, 0, tzinfo=UTC),
            datetime(2026, 3, 1, 0, 0, tzinfo=UTC),
        ),
        (
            TimeInterval("last-day", (spec(days_of_month=["-1"]),)),
            datetime(2026, 3, 1, 0, 0, tzinfo=UTC),
            datetime(2026, 3, 31, 0, 0, tzinfo=UTC),
        ),
        # Two specs whose days touch: one interval, active across the boundary without a change.
        (
            TimeInterval("weekend", (spec(weekdays=["saturday"]), spec(weekdays=["sunday"]))),
            datetime(2026, 11, 28, 12, 0, tzinfo=UTC),
            datetime(2026, 11, 30, 0, 0, tzinfo=UTC),
        ),
        # Years: the next change may be months away.
        (
            TimeInterval("2027", (spec(years=["2027"]),)),
            datetime(2026, 11, 25, 12, 0, tzinfo=UTC),
            datetime(2027, 1, 1, 0, 0, tzinfo=UTC),
        ),
        # Nothing changes within the horizon: ever active.
        (TimeInterval("always", (TimeSpec(),)), datetime(2026, 11, 25, 12, 0, tzinfo=UTC), None),
    ],
)
def test_next_change(interval: TimeInterval, now: datetime, expected: datetime | None) -> None:
    assert interval.next_change(now) == expected
    if expected is not None:  # a change, and the first: constant from now until just before it
        assert interval.active(expected) != interval.active(now)
        assert interval.active(expected - timedelta(seconds=1)) == interval.active(now)


def test_describe_spec_in_the_configs_terms() -> None:
    s = spec(times=[("09:00", "18:00")], weekdays=["monday:friday", "sunday"], months=["1:3"], location="Asia/Shanghai")
    assert describe_spec(s) == (
        "times 09:00-18:00; weekdays monday:friday, sunday; months january:march; in Asia/Shanghai"
    )
    assert describe_spec(TimeSpec()) == "always; in UTC"


def test_the_interval_clock_remembers_changes_and_answers_as_the_search_does() -> None:
    intervals = {
        "shanghai": TimeInterval(
            "shanghai", (spec(times=[("09:00", "18:00")], weekdays=["monday:friday"], location="Asia/Shanghai"),)
        ),
        "berlin-night": TimeInterval(
            "berlin-night", (spec(times=[("22:00", "24:00"), ("00:00", "06:00")], location="Europe/Berlin"),)
        ),
    }
    clock = IntervalClock(intervals)
    t = datetime(2026, 3, 26, 0, 0, tzinfo=UTC)  # through Berlin's spring forward on the 29th
    while t < datetime(2026, 4, 2, tzinfo=UTC):
        for name, interval in intervals.items():
            assert clock.next_change(name, t) == interval.next_change(t), (name, t)
        t += timedelta(minutes=7)
