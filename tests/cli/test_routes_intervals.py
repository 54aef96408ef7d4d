"""`alertrouter routes test` says which time intervals let each route send now, or at `--at`, in the
rules' `global.timezone` as every other time alertrouter shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.cli.main import main

RULES = """
receivers: [{name: default}, {name: office}, {name: oncall}]
time_intervals:
  - name: business-hours
    time_intervals:
      - weekdays: ['monday:friday']
        times: [{start_time: '09:00', end_time: '18:00'}]
        location: Asia/Shanghai
  - name: night
    time_intervals: [{times: [{start_time: '00:00', end_time: '07:00'}], location: Asia/Shanghai}]
route:
  receiver: default
  routes:
    - matchers: ['severity="warning"']
      receiver: office
      continue: true
      active_time_intervals: [business-hours]
    - matchers: ['severity=~"warning|critical"']
      receiver: oncall
      mute_time_intervals: [night]
"""


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    (tmp_path / "rules.yml").write_text(RULES)  # no global.timezone: UTC
    return tmp_path


@pytest.fixture
def shanghai_rules(tmp_path: Path) -> Path:
    (tmp_path / "rules.yml").write_text("global: {timezone: Asia/Shanghai}\n" + RULES)
    return tmp_path


def test_routes_test_at_says_which_routes_are_muted(shanghai_rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Wednesday 2026-11-25 20:00 UTC is Thursday 04:00 in Shanghai: night (until 07:00), and outside business
    # hours (until 09:00); told in Shanghai's time, as the rules' global.timezone says.
    args = ["routes", "test", "--config", str(shanghai_rules), "--at", "2026-11-25T20:00:00Z", "severity=warning"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "office,oncall",
        "office via route.routes[0] at 2026-11-26 04:00:00 CST: muted: outside active_time_intervals "
        "[business-hours] until 2026-11-26 09:00:00 CST (active_time_intervals [business-hours])",
        "oncall via route.routes[1] at 2026-11-26 04:00:00 CST: muted by mute_time_intervals [night] "
        "until 2026-11-26 07:00:00 CST (mute_time_intervals [night])",
    ]


def test_routes_test_at_office_hours(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Thursday 2026-11-26 02:00 UTC is 10:00 in Shanghai.
    args = ["routes", "test", "--config", str(rules), "--at", "2026-11-26T02:00:00Z", "-v", "severity=warning"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["office  via route.routes[0]", "oncall  via route.routes[1]"]
    assert out[2].startswith("office via route.routes[0] at 2026-11-26 02:00:00 UTC: sends until 2026-11-26 10:00")
    assert out[3].startswith("oncall via route.routes[1] at 2026-11-26 02:00:00 UTC: sends until 2026-11-26 16:00")


def test_routes_without_intervals_print_only_the_receivers(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routes", "test", "--config", str(rules), "--expect", "default", "severity=info"]) == 0
    assert capsys.readouterr().out == "default\n"


def test_routes_test_at_needs_a_time(rules: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["routes", "test", "--config", str(rules), "--at", "tomorrow", "severity=warning"])
    assert "not an RFC 3339 time" in capsys.readouterr().err
