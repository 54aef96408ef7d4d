"""The `maintenance:` section (ruleset/maintenance.py): the shipped file equals the defaults, taints as
`kubectl taint` writes them, and `check-config` naming file, path and problem for a bad section."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.pipeline.maintenance import TaintRule
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.maintenance import DEFAULT_TAINTS, MaintenanceConfig, parse_taint, taint_rules
from support.scenario import REPO

ROUTE = "route: {receiver: r}\nreceivers: [{name: r}]\n"


def problems(path: Path) -> list[str]:
    try:
        load_ruleset(path, {})
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_the_shipped_file_is_the_defaults(tmp_path: Path) -> None:
    assert load_ruleset(REPO / "rules", {}).maintenance == MaintenanceConfig()
    (tmp_path / "a.yml").write_text(ROUTE)
    defaults = load_ruleset(tmp_path, {}).maintenance
    assert (defaults.cordoned, tuple(defaults.taints), defaults.stuck_after) == (
        True,
        DEFAULT_TAINTS,
        timedelta(hours=24),
    )
    assert taint_rules(defaults)[0] == TaintRule("nvidia.com/gpu-xid-error")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("nvidia.com/gpu-xid-error", TaintRule("nvidia.com/gpu-xid-error")),
        ("repair", TaintRule("repair")),
        ("example.com/repair=true", TaintRule("example.com/repair", "true")),
        ("example.com/repair=", TaintRule("example.com/repair", "")),
        ("example.com/repair:NoExecute", TaintRule("example.com/repair", None, "NoExecute")),
        ("example.com/repair=rma:NoSchedule", TaintRule("example.com/repair", "rma", "NoSchedule")),
    ],
)
def test_taints_as_kubectl_writes_them(text: str, rule: TaintRule) -> None:
    assert parse_taint(text) == rule


def test_a_rule_matches_key_then_value_and_effect_when_given() -> None:
    assert TaintRule("k").matches("k", "anything", "NoExecute")
    assert not TaintRule("k").matches("k2", "", "NoSchedule")
    assert TaintRule("k", "true").matches("k", "true", "NoSchedule")
    assert not TaintRule("k", "true").matches("k", "false", "NoSchedule")
    assert not TaintRule("k", None, "NoExecute").matches("k", "true", "NoSchedule")


@pytest.mark.parametrize(
    ("section", "path", "words"),
    [
        ("{taints: ['nvidia.com/gpu-xid-error:NoPanic']}", "maintenance.taints", "the effect is one of NoSchedule"),
        ("{taints: ['-bad-']}", "maintenance.taints", "is not a taint key"),
        ("{taints: ['k=a b']}", "maintenance.taints", "is not a taint value"),
        ("{taints: [k, k]}", "maintenance.taints", "a taint twice: k"),
        ("{taints: k}", "maintenance.taints", "valid list"),
        ("{stuck_after: 0s}", "maintenance.stuck_after", "more than 0s"),
        ("{stuck_after: soon}", "maintenance.stuck_after", "soon"),
        ("{cordoned: maybe}", "maintenance.cordoned", "valid boolean"),
        ("{cordon: true}", "maintenance.cordon", "unknown key"),
    ],
)
def test_problems_name_the_file_and_path(tmp_path: Path, section: str, path: str, words: str) -> None:
    f = tmp_path / "maintenance.yml"
    (tmp_path / "a.yml").write_text(ROUTE)
    f.write_text(f"maintenance: {section}\n")
    found = problems(tmp_path)
    assert found
    assert all(p.startswith(f"{f}:{path}") for p in found), found
    assert any(words in p for p in found), found


def test_check_config_refuses_a_bad_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yml").write_text(ROUTE + "maintenance: {taints: ['k:Sometimes']}\n")
    assert main(["check-config", str(tmp_path)]) != 0
    out = capsys.readouterr()
    assert f"{tmp_path / 'a.yml'}:maintenance.taints" in out.out + out.err
