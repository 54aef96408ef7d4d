"""Rota maths: rotations, handover at a local wall-clock time (across DST), restricted layers, overrides."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alertrouter.pipeline.oncall import Layer, Override, Schedule

SHANGHAI = ZoneInfo("Asia/Shanghai")
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def at(text: str, zone: ZoneInfo) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=zone)


def weekly(zone: ZoneInfo, start: str = "2026-11-02 10:00") -> Schedule:
    layer = Layer("weekly", ("ana", "bo", "cy"), timedelta(weeks=1), datetime.fromisoformat(start))
    return Schedule("primary", zone, (layer,))


@pytest.mark.parametrize(
    ("when", "who"),
    [
        ("2026-11-02 09:59", None),  # before the first turn
        ("2026-11-02 10:00", "ana"),
        ("2026-11-09 09:59", "ana"),
        ("2026-11-09 10:00", "bo"),
        ("2026-11-16 10:00", "cy"),
        ("2026-11-23 10:00", "ana"),  # round again
        ("2027-11-01 10:00", "cy"),  # 52 weeks later: 52 % 3 == 1 ... counted below
    ],
)
def test_weekly_rotation_in_shanghai(when: str, who: str | None) -> None:
    schedule = weekly(SHANGHAI)
    if when.startswith("2027"):
        weeks = (datetime(2027, 11, 1) - datetime(2026, 11, 2)).days // 7
        who = ("ana", "bo", "cy")[weeks % 3]
    assert schedule.who(at(when, SHANGHAI)).person == who


def test_next_change_is_the_next_handover() -> None:
    schedule = weekly(SHANGHAI)
    assert schedule.next_change(at("2026-11-04 03:00", SHANGHAI)) == at("2026-11-09 10:00", SHANGHAI)
    now, following = schedule.shifts(at("2026-11-04 03:00", SHANGHAI))
    assert (now.oncall.person, following.oncall.person) == ("ana", "bo")
    assert following.start == at("2026-11-09 10:00", SHANGHAI)
    assert following.end == at("2026-11-16 10:00", SHANGHAI)


@pytest.mark.parametrize(
    ("zone", "before", "after", "hours"),
    [
        # Europe/Berlin: clocks go back 2026-10-25 03:00 -> 02:00, forward 2027-03-28 02:00 -> 03:00
        (BERLIN, "2026-10-24 10:00", "2026-10-25 10:00", 25),
        (BERLIN, "2027-03-27 10:00", "2027-03-28 10:00", 23),
        # America/New_York: back 2026-11-01, forward 2027-03-14
        (NEW_YORK, "2026-10-31 10:00", "2026-11-01 10:00", 25),
        (NEW_YORK, "2027-03-13 10:00", "2027-03-14 10:00", 23),
    ],
)
def test_a_daily_handover_stays_at_ten_by_the_clock_across_dst(
    zone: ZoneInfo, before: str, after: str, hours: int
) -> None:
    layer = Layer("daily", ("ana", "bo"), timedelta(days=1), datetime(2026, 1, 1, 10, 0))
    schedule = Schedule("s", zone, (layer,))
    first = at(before, zone)
    handover = schedule.next_change(first)
    assert handover == at(after, zone)
    assert handover is not None
    assert handover.astimezone(zone).hour == 10
    assert (handover - first).total_seconds() == hours * 3600  # the real length of that day's shift
    assert schedule.who(handover).person != schedule.who(handover - timedelta(seconds=1)).person


def test_a_handover_in_the_skipped_hour_happens_with_the_offset_before_the_change() -> None:
    # 02:30 does not exist in Berlin on 2027-03-28: read as 02:30 CET, i.e. 03:30 CEST.
    layer = Layer("daily", ("ana", "bo"), timedelta(days=1), datetime(2027, 3, 20, 2, 30))
    schedule = Schedule("s", BERLIN, (layer,))
    handover = schedule.next_change(at("2027-03-28 00:00", BERLIN))
    assert handover == datetime(2027, 3, 28, 1, 30, tzinfo=UTC)
    assert schedule.who(handover).person != schedule.who(handover - timedelta(minutes=1)).person


def test_twelve_hour_shifts_hand_over_at_eight_and_twenty_local() -> None:
    layer = Layer("halves", ("day", "night"), timedelta(hours=12), datetime(2026, 10, 20, 8, 0))
    schedule = Schedule("s", BERLIN, (layer,))
    # after the clocks went back on 2026-10-25 the halves still start at 08:00 and 20:00 CET
    assert schedule.who(at("2026-10-26 07:59", BERLIN)).person == "night"
    assert schedule.who(at("2026-10-26 08:00", BERLIN)).person == "day"
    assert schedule.who(at("2026-10-26 20:00", BERLIN)).person == "night"


def test_a_night_layer_covers_the_day_layer_only_at_night() -> None:
    day = Layer("day", ("ana",), timedelta(weeks=1), datetime(2026, 11, 2, 10, 0))
    night = Layer(
        "night", ("nia", "ned"), timedelta(days=1), datetime(2026, 11, 2, 20, 0), restrict=(time(20), time(8))
    )
    schedule = Schedule("s", SHANGHAI, (day, night))
    assert schedule.who(at("2026-11-03 19:59", SHANGHAI)).person == "ana"
    assert schedule.who(at("2026-11-03 20:00", SHANGHAI)).person == "ned"  # second night
    assert schedule.who(at("2026-11-04 03:00", SHANGHAI)).source == "night"
    assert schedule.who(at("2026-11-04 08:00", SHANGHAI)).person == "ana"
    assert schedule.next_change(at("2026-11-04 12:00", SHANGHAI)) == at("2026-11-04 20:00", SHANGHAI)


def test_a_restricted_layer_alone_leaves_no_one_on_call_by_day() -> None:
    night = Layer("night", ("nia",), timedelta(days=1), datetime(2026, 11, 2, 20, 0), restrict=(time(20), time(8)))
    schedule = Schedule("s", SHANGHAI, (night,))
    assert schedule.who(at("2026-11-03 12:00", SHANGHAI)).person is None
    assert schedule.next_change(at("2026-11-03 12:00", SHANGHAI)) == at("2026-11-03 20:00", SHANGHAI)


def test_overrides_win_and_the_last_listed_wins_among_them() -> None:
    base = weekly(SHANGHAI)
    holiday = Override(at("2026-11-05 00:00", SHANGHAI), at("2026-11-06 00:00", SHANGHAI), "cy")
    swap = Override(at("2026-11-05 12:00", SHANGHAI), at("2026-11-05 18:00", SHANGHAI), "bo")
    schedule = Schedule("s", SHANGHAI, base.layers, (holiday, swap))
    assert schedule.who(at("2026-11-04 23:59", SHANGHAI)).person == "ana"
    assert schedule.who(at("2026-11-05 00:00", SHANGHAI)).person == "cy"
    assert schedule.who(at("2026-11-05 12:00", SHANGHAI)).person == "bo"
    assert schedule.who(at("2026-11-05 18:00", SHANGHAI)).person == "cy"
    assert schedule.who(at("2026-11-06 00:00", SHANGHAI)).person == "ana"
    assert schedule.next_change(at("2026-11-04 12:00", SHANGHAI)) == at("2026-11-05 00:00", SHANGHAI)
    assert [o.person for o in schedule.upcoming_overrides(at("2026-11-05 13:00", SHANGHAI))] == ["cy", "bo"]


def test_an_override_by_the_person_already_on_call_is_no_change() -> None:
    base = weekly(SHANGHAI)
    same = Override(at("2026-11-05 00:00", SHANGHAI), at("2026-11-06 00:00", SHANGHAI), "ana")
    schedule = Schedule("s", SHANGHAI, base.layers, (same,))
    assert schedule.next_change(at("2026-11-04 12:00", SHANGHAI)) == at("2026-11-09 10:00", SHANGHAI)


ZONES = st.sampled_from([SHANGHAI, BERLIN, NEW_YORK])
INSTANTS = st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2028, 12, 31)).map(
    lambda d: d.replace(tzinfo=UTC)
)


@settings(max_examples=200, deadline=None)
@given(
    zone=ZONES,
    instant=INSTANTS,
    rotation=st.sampled_from([timedelta(hours=8), timedelta(hours=12), timedelta(days=1), timedelta(weeks=1)]),
    hour=st.integers(0, 23),
)
def test_who_is_constant_between_changes_and_differs_at_a_change(
    zone: ZoneInfo, instant: datetime, rotation: timedelta, hour: int
) -> None:
    layer = Layer("l", ("ana", "bo", "cy"), rotation, datetime(2025, 12, 1, hour, 30))
    schedule = Schedule("s", zone, (layer,))
    current = schedule.who(instant)
    assert current.person is not None  # a layer without restriction always has exactly one person
    change = schedule.next_change(instant)
    assert change is not None
    assert change > instant
    assert change - instant <= rotation + timedelta(hours=1)  # one DST hour at most
    assert schedule.who(change - timedelta(microseconds=1)) == current
    assert schedule.who(change) != current
    assert schedule.who(instant + (change - instant) / 2) == current


@settings(max_examples=100, deadline=None)
@given(zone=ZONES, instant=INSTANTS, length=st.integers(1, 72))
def test_an_override_in_force_always_wins(zone: ZoneInfo, instant: datetime, length: int) -> None:
    base = weekly(zone, "2025-12-01 10:00")
    override = Override(instant, instant + timedelta(hours=length), "zed")
    schedule = Schedule("s", zone, base.layers, (override,))
    assert schedule.who(instant).person == "zed"
    assert schedule.who(override.end - timedelta(microseconds=1)).person == "zed"
    assert schedule.who(override.end).person == base.who(override.end).person
