"""The `stale:` section (ruleset/stale.py): defaults, the shipped file, and problems named by file and path."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.labels import Matcher, MatchType
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.scenario import REPO

ROUTE = "route: {receiver: r}\nreceivers: [{name: r}]\n"


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


def test_without_the_section_nothing_is_stale(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE)
    assert not compile_rules(load_ruleset(tmp_path, {})).stale.enabled


def test_the_shipped_section(tmp_path: Path) -> None:
    rule = compile_rules(load_ruleset(REPO / "rules", {})).stale
    assert rule.enabled
    assert rule.window == timedelta(minutes=2)
    assert rule.hold == timedelta(minutes=20)
    assert rule.together == 2
    for name in ("NodeDown", "DCGMExporterDown", "KubeNodeNotReady"):
        assert rule.is_source_down({"alertname": name})
    assert rule.is_target({"alertname": "GPUHighTemp"})
    assert not rule.is_target({"alertname": "NodeDown"})  # a source-down alert is never stale itself


def test_defaults_and_all(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE + "stale:\n  source_down: ['alertname=\"NodeDown\"']\n  together: all\n")
    rule = compile_rules(load_ruleset(tmp_path, {})).stale
    assert rule.source_down == (Matcher("alertname", MatchType.EQ, "NodeDown"),)
    assert rule.targets == ()
    assert rule.together is None
    assert (rule.window, rule.hold, rule.settle) == (timedelta(minutes=2), timedelta(minutes=20), timedelta(minutes=2))


def test_disabled(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE + "stale: {enabled: false}\n")
    assert not compile_rules(load_ruleset(tmp_path, {})).stale.enabled


@pytest.mark.parametrize(
    ("section", "path", "words"),
    [
        ("{source_down: ['alertname=\"NodeDown\"'], together: 1}", "stale.together", "2 or more"),
        ("{source_down: ['alertname=\"NodeDown\"'], together: most}", "stale.together", ""),
        ("{source_down: ['alertname=\"NodeDown\"'], hold: 0s}", "stale.hold", "more than 0s"),
        ("{source_down: ['alertname=~\"(\"']}", "stale.source_down", ""),
        ("{window: 2m}", "stale", "source_down"),
        ("{source_down: ['alertname=\"NodeDown\"'], window: 5m, hold: 1m}", "stale", "hold"),
        ("{source_down: ['alertname=\"NodeDown\"'], wait: 5m}", "stale.wait", ""),
    ],
)
def test_problems_name_the_file_and_path(tmp_path: Path, section: str, path: str, words: str) -> None:
    f = tmp_path / "stale.yml"
    (tmp_path / "a.yml").write_text(ROUTE)
    f.write_text(f"stale: {section}\n")
    found = problems(tmp_path)  # `most` is neither an int nor `all`: one problem for each
    assert found
    assert all(p.startswith(f"{f}:{path}") for p in found), found
    assert any(words in p for p in found)
