"""`time_intervals` in the rules: Alertmanager's syntax, problems as file:path: message, the built tree."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from alertrouter.pipeline.route import match_routes, render_tree
from alertrouter.pipeline.timeinterval import DayRange, TimeRange, route_mute
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.build import compile_rules

SHANGHAI = ZoneInfo("Asia/Shanghai")

RECEIVERS = """
receivers:
  - name: default
  - name: oncall
  - name: office
"""

# Written as Alertmanager's documentation writes it, unquoted times included (`17:00` is not base 60).
VALID = (
    RECEIVERS
    + """
time_intervals:
  - name: business-hours
    time_intervals:
      - times:
          - start_time: 09:00
            end_time: 17:00
        weekdays: ['monday:friday']
        location: Asia/Shanghai
  - name: quarter-end
    time_intervals:
      - days_of_month: [-3:-1, 1]
        months: [March, 6, 'september:december']
        years: [2026, '2027:2030']
mute_time_intervals:  # Alertmanager's deprecated name, still read
  - name: holidays
    time_intervals:
      - months: ['december']
        days_of_month: ['25:26']
route:
  receiver: default
  routes:
    - matchers: ['severity="warning"']
      receiver: office
      active_time_intervals: [business-hours]
      routes:
        - matchers: ['team="infra"']
    - matchers: ['severity="critical"']
      receiver: oncall
      mute_time_intervals: [holidays, quarter-end]
"""
)


def write(tmp_path: Path, text: str, name: str = "rules.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


def test_alertmanager_syntax_builds_intervals_and_routes(tmp_path: Path) -> None:
    write(tmp_path, VALID)
    rules = compile_rules(load_ruleset(tmp_path, {}))
    assert set(rules.time_intervals) == {"business-hours", "quarter-end", "holidays"}
    (business,) = rules.time_intervals["business-hours"].specs
    assert business.times == (TimeRange(540, 1020),)
    assert business.weekdays == (DayRange(1, 5),)
    assert business.location == ZoneInfo("Asia/Shanghai")
    (quarter,) = rules.time_intervals["quarter-end"].specs
    assert quarter.days_of_month == (DayRange(-3, -1), DayRange(1, 1))
    assert quarter.months == (DayRange(3, 3), DayRange(6, 6), DayRange(9, 12))
    assert quarter.years == (DayRange(2026, 2026), DayRange(2027, 2030))
    assert rules.time_intervals["holidays"].specs[0].location == UTC

    (office,) = match_routes(rules.route, {"severity": "warning", "team": "infra"})
    # A child does not inherit its parent's intervals, as in Alertmanager.
    assert office.path == "route.routes[0].routes[0]"
    assert office.active_time_intervals == ()
    (office,) = match_routes(rules.route, {"severity": "warning"})
    assert office.active_time_intervals == ("business-hours",)
    (oncall,) = match_routes(rules.route, {"severity": "critical"})
    assert oncall.mute_time_intervals == ("holidays", "quarter-end")
    # Wednesday 10:00 in Shanghai is 02:00 UTC.
    assert rules.time_intervals["business-hours"].active(datetime(2026, 11, 25, 2, 0, tzinfo=UTC))


def test_interval_problems_name_file_path_and_what_is_wrong(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        RECEIVERS
        + """
time_intervals:
  - name: bad
    time_intervals:
      - times:
          - start_time: '22:00'
            end_time: '06:00'
          - start_time: '9:00'
            end_time: '24:01'
        weekdays: ['friday:monday', 'funday']
        days_of_month: ['0', '-15:5']
        months: ['martius']
        years: ['2022:2020']
        location: Mars/Olympus
      - weekday: [monday]
""",
    )
    found = problems(tmp_path)
    where = f"{f}:time_intervals[0].time_intervals[0]"
    expected = [
        f"{where}.times[0]: start_time 22:00 must be before end_time 06:00",
        f"{where}.times[1].start_time: couldn't parse timestamp '9:00', invalid format",
        f"{where}.times[1].end_time: couldn't parse timestamp '24:01', invalid format",
        f"{where}.weekdays[0]: start day friday is after end day monday",
        f"{where}.weekdays[1]: funday is not a valid weekday",
        f"{where}.days_of_month[0]: 0 is not a valid day of the month: out of range",
        f"{where}.days_of_month[1]: end day must be negative if start day is negative",
        f"{where}.months[0]: martius is not a valid month",
        f"{where}.years[0]: end year 2020 is before start year 2022",
        f"{where}.location: unknown location 'Mars/Olympus'",
        f"{f}:time_intervals[0].time_intervals[1].weekday: unknown key",
    ]
    for want in expected:
        assert any(p.startswith(want) for p in found), (want, found)
    assert len(found) == len(expected), found


def test_undefined_interval_duplicate_name_and_root_intervals(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        RECEIVERS
        + """
time_intervals:
  - name: nights
    time_intervals: [{times: [{start_time: '00:00', end_time: '07:00'}]}]
mute_time_intervals:
  - name: nights
    time_intervals: []
route:
  receiver: default
  mute_time_intervals: [nights]
  routes:
    - matchers: ['severity="info"']
      receiver: office
      mute_time_intervals: [nights, night]
      active_time_intervals: [weekends]
""",
    )
    assert sorted(problems(tmp_path)) == sorted(
        [
            f"{f}:route.mute_time_intervals: the root route must not have any mute time intervals",
            f"{f}:route.routes[0].mute_time_intervals[1]: undefined time interval 'night' used in route "
            "(known: nights)",
            f"{f}:route.routes[0].active_time_intervals[0]: undefined time interval 'weekends' used in route "
            "(known: nights)",
            # Alertmanager reads the deprecated list first: the later definition is the duplicate.
            f"{f}:time_intervals[0].name: time interval 'nights' is not unique (first at {f}:mute_time_intervals[0])",
        ]
    )


def test_intervals_from_another_file_are_known(tmp_path: Path) -> None:
    write(
        tmp_path,
        "time_intervals:\n  - name: weekends\n    time_intervals: [{weekdays: [saturday, sunday]}]\n",
        "intervals.yml",
    )
    write(
        tmp_path,
        RECEIVERS
        + "route:\n  receiver: default\n  routes:\n    - receiver: office\n      mute_time_intervals: [weekends]\n",
        "routes.yml",
    )
    rules = compile_rules(load_ruleset(tmp_path, {}))
    assert rules.route.routes[0].mute_time_intervals == ("weekends",)


def test_route_tree_text_shows_intervals(tmp_path: Path) -> None:
    write(tmp_path, VALID)
    text = render_tree(compile_rules(load_ruleset(tmp_path, {})).route)
    assert "active_time_intervals: [business-hours]" in text
    assert "mute_time_intervals: [holidays, quarter-end]" in text


REPO = Path(__file__).resolve().parents[2]


def uncommented(text: str) -> str:
    """rules/routes.yml with its time interval examples uncommented, as a user would."""
    lines = text.splitlines()
    start = lines.index("# time_intervals:")
    out = []
    for i, line in enumerate(lines):
        use = re.match(r"^(\s*)# ((?:mute|active)_time_intervals: \[[\w, -]+\])$", line)
        if i >= start:
            line = line.removeprefix("# ")
        elif use:
            line = use.group(1) + use.group(2)
        out.append(line)
    return "\n".join(out) + "\n"


def test_shipped_examples_are_commented_and_valid_once_uncommented(tmp_path: Path) -> None:
    shipped = compile_rules(load_ruleset(REPO / "rules", {}))
    assert shipped.time_intervals == {}  # commented: the shipped behaviour does not change
    for path in (REPO / "rules").glob("*.yml"):
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "routes.yml").write_text(uncommented((REPO / "rules" / "routes.yml").read_text()))
    rules = compile_rules(load_ruleset(tmp_path, {}))
    assert set(rules.time_intervals) == {"business-hours", "night", "north-maintenance"}

    def mute(labels: dict[str, str], at: datetime) -> tuple[str, ...] | None:
        (match,) = match_routes(rules.route, labels)
        found, _ = route_mute(
            rules.time_intervals, mute=match.mute_time_intervals, active=match.active_time_intervals, at=at
        )
        return None if found is None else found.intervals

    tuesday_3am = datetime(2026, 11, 24, 3, 0, tzinfo=SHANGHAI)
    wednesday_10am = datetime(2026, 11, 25, 10, 0, tzinfo=SHANGHAI)
    wednesday_11pm = datetime(2026, 11, 25, 23, 0, tzinfo=SHANGHAI)
    north_warning = {"severity": "warning", "region": "north"}
    assert mute(north_warning, tuesday_3am) == ("business-hours",)  # outside business hours, first
    assert mute(north_warning, wednesday_10am) is None
    assert mute({"severity": "warning", "region": "south"}, wednesday_11pm) == ("business-hours",)
    assert mute({"severity": "critical", "region": "north"}, tuesday_3am) == ("north-maintenance",)
    assert mute({"severity": "critical", "region": "north"}, wednesday_10am) is None
    assert mute({"severity": "critical", "region": "south"}, tuesday_3am) is None
    assert mute({"severity": "info"}, wednesday_11pm) == ("night",)
    assert mute({"severity": "info"}, wednesday_10am) is None
