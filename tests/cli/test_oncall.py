"""`alertrouter oncall who`: now and next per schedule, --at in the schedule's zone, unknown names."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from alertrouter.cli.main import main
from alertrouter.cli.oncall import parse_when

RULES = """
oncall:
  people:
    - {name: ana, display_name: Ana Li}
    - {name: bo}
  schedules:
    - name: primary
      timezone: America/New_York
      layers:
        - {people: [ana, bo], rotation: 1d, start: "2026-10-30 09:00"}
      overrides:
        - {from: "2026-11-05 09:00", to: "2026-11-06 09:00", person: bo}
    - name: lead
      timezone: Asia/Shanghai
      layers:
        - {people: [bo], rotation: 1w, start: "2026-11-02 10:00"}
route: {receiver: r}
receivers: [{name: r}]
"""


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    (tmp_path / "rules.yml").write_text(RULES)
    return tmp_path


def test_who_at_a_time_prints_now_and_next_in_the_schedules_zone(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # New York left DST on 2026-11-01: the 09:00 handover is 14:00 UTC after it, 13:00 before.
    assert main(["oncall", "who", "primary", "--config", str(rules), "--at", "2026-11-02T08:00"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "primary (America/New_York)",
        "  now:  Ana Li (ana), until 2026-11-02 09:00 EST",  # 10-30 ana, 10-31 bo, 11-01 ana
        "  next: bo, from 2026-11-02 09:00 EST until 2026-11-03 09:00 EST",
    ]


def test_an_override_is_marked(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 2026-11-05 is Ana's day by the layer (day 6 from 10-30); bo covers it
    assert main(["oncall", "who", "primary", "--config", str(rules), "--at", "2026-11-05T12:00-05:00"]) == 0
    assert (
        capsys.readouterr().out.splitlines()[1] == "  now:  bo [override], until 2026-11-07 09:00 EST"
    )  # and the 6th is bo's own day


def test_every_schedule_by_default(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oncall", "who", "--config", str(rules)]) == 0
    out = capsys.readouterr().out
    assert "primary (America/New_York)" in out
    assert "lead (Asia/Shanghai)\n  now:  bo, no change within a year" in out


def test_an_unknown_schedule_is_an_error(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oncall", "who", "secondary", "--config", str(rules)]) == 1
    assert "unknown schedule 'secondary' (known: primary, lead)" in capsys.readouterr().err


def test_a_bad_time_is_refused_by_the_parser(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["oncall", "who", "--config", str(rules), "--at", "next week"])
    assert "expected ISO 8601" in capsys.readouterr().err


def test_relative_times_are_read_in_the_zone() -> None:
    zone = ZoneInfo("Asia/Shanghai")
    now = datetime(2026, 11, 24, 17, 0, tzinfo=UTC)  # already the 25th in Shanghai
    assert parse_when("tomorrow 03:00", zone, now) == datetime(2026, 11, 26, 3, 0, tzinfo=zone)
    assert parse_when("03:00", zone, now) == datetime(2026, 11, 25, 3, 0, tzinfo=zone)
    assert parse_when("2026-12-01T00:00Z", zone, now) == datetime(2026, 12, 1, tzinfo=UTC)
