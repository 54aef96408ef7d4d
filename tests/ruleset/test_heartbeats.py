"""The `heartbeats:` section: defaults, what check-config refuses (with file and path), the shipped entry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.ruleset import ConfigError, load_ruleset

REPO = Path(__file__).resolve().parents[2]


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


def test_an_entry_with_defaults(tmp_path: Path) -> None:
    matchers = 'alertname="Watchdog", prometheus="monitoring/north"'
    (tmp_path / "h.yml").write_text(f"heartbeats:\n  - name: prometheus-north\n    matchers: ['{matchers}']\n")
    (beat,) = load_ruleset(tmp_path, {}).heartbeats
    assert beat.timeout == timedelta(minutes=5)
    assert beat.warn_if_never_heard is None  # never heard from: waiting, nothing raised
    assert beat.labels == {"severity": "critical"}
    assert beat.matches({"alertname": "Watchdog", "prometheus": "monitoring/north", "severity": "none"})
    assert not beat.matches({"alertname": "Watchdog", "prometheus": "monitoring/south"})


def test_an_entry_without_matchers_is_refreshed_only_over_http(tmp_path: Path) -> None:
    (tmp_path / "h.yml").write_text("heartbeats:\n  - {name: nightly-backup, timeout: 25h}\n")
    (beat,) = load_ruleset(tmp_path, {}).heartbeats
    assert beat.timeout == timedelta(hours=25)
    assert not beat.matches({})
    assert not beat.matches({"alertname": "Watchdog"})


def test_warn_if_never_heard_takes_a_duration(tmp_path: Path) -> None:
    (tmp_path / "h.yml").write_text("heartbeats:\n  - {name: nightly-backup, timeout: 25h, warn_if_never_heard: 3d}\n")
    (beat,) = load_ruleset(tmp_path, {}).heartbeats
    assert beat.warn_if_never_heard == timedelta(days=3)


@pytest.mark.parametrize(
    ("entry", "path", "message"),
    [
        ("{name: 'prometheus north'}", "heartbeats[0].name", "is not a heartbeat name"),
        ("{name: a, timeout: 0s}", "heartbeats[0].timeout", "must be at least 1s"),
        ("{name: a, timeout: 5}", "heartbeats[0].timeout", "durations need a unit"),
        ("{name: a, warn_if_never_heard: 0s}", "heartbeats[0].warn_if_never_heard", "must be at least 1s"),
        ("{name: a, warn_if_never_heard: 1}", "heartbeats[0].warn_if_never_heard", "durations need a unit"),
        ("{name: a, matchers: ['alertname=~\".*\"']}", "heartbeats[0].matchers", "match every alert"),
        ("{name: a, matchers: ['alertname=']}", "heartbeats[0].matchers", "match every alert"),
        ("{name: a, matchers: ['alertname=~\"(\"']}", "heartbeats[0].matchers", ""),
        ("{name: a, labels: {alertname: X}}", "heartbeats[0].labels", "set by alertrouter"),
        ("{name: a, labels: {heartbeat: X}}", "heartbeats[0].labels", "set by alertrouter"),
        ("{name: a, timout: 5m}", "heartbeats[0].timout", "unknown key"),
    ],
)
def test_check_config_names_the_file_and_path(tmp_path: Path, entry: str, path: str, message: str) -> None:
    f = tmp_path / "h.yml"
    f.write_text(f"heartbeats:\n  - {entry}\n")
    (found,) = problems(tmp_path)
    assert found.startswith(f"{f}:{path}: ")
    assert message in found


def test_names_are_unique_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("heartbeats:\n  - {name: prometheus}\n")
    b = tmp_path / "b.yml"
    b.write_text("heartbeats:\n  - {name: other}\n  - {name: prometheus}\n")
    assert problems(tmp_path) == [
        f"{b}:heartbeats[1].name: duplicate name 'prometheus' (first at {tmp_path / 'a.yml'}:heartbeats[0])"
    ]


def test_the_shipped_rules_expect_the_watchdog(capsys: pytest.CaptureFixture[str]) -> None:
    (beat,) = load_ruleset(REPO / "rules", {}).heartbeats
    assert beat.matches(
        {"alertname": "Watchdog", "severity": "none"}
    )  # as rules/prometheus/watchdog.rules.yml fires it
    assert beat.labels["severity"] == "critical"
    assert main(["check-config", str(REPO / "rules")]) == 0
