"""The `gpu_triage:` section (ruleset/gpu_triage.py): defaults, the shipped file, the derived `xid_action`
label, and what check-config refuses, named by file and path."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.gpu.triage import TriageRules
from alertrouter.pipeline.folding import FollowOnRules
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.gpu_triage import triage_rules
from support.scenario import REPO

MIN = timedelta(minutes=1)
ROUTE = "route: {receiver: r}\nreceivers: [{name: r}]\n"
XID = {"alertname": "GPUXidError", "Hostname": "gpu-node-07", "gpu": "3", "xid": "79"}


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


def test_without_the_section_the_defaults_apply(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE)
    ruleset = load_ruleset(tmp_path, {})
    assert triage_rules(ruleset.gpu_triage) == TriageRules()
    assert compile_rules(ruleset).nodes.enrich(XID)["xid_action"] == "RESTART_BM"


def test_the_shipped_section_says_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    ruleset = load_ruleset(REPO / "rules", {})
    assert "gpu_triage" in ruleset.origins
    assert triage_rules(ruleset.gpu_triage) == TriageRules()
    assert main(["check-config", str(REPO / "rules")]) == 0


def test_every_value_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(
        ROUTE + "gpu_triage:\n  action_label: gpu_action\n  follow_on_window: 2m\n  burst: 0s\n"
        "  consequences: [43, 45]\n  hardware: {count: 3, window: 7d}\n"
        "  diagnose: {xids: [31], count: 3, window: 12h}\n  application: {gpus: 4, window: 1h}\n"
    )
    ruleset = load_ruleset(tmp_path, {})
    assert triage_rules(ruleset.gpu_triage) == TriageRules(
        follow_on_window=timedelta(minutes=2),
        burst=timedelta(0),
        consequences=frozenset({43, 45}),
        hardware_count=3,
        hardware_window=timedelta(days=7),
        diagnose_xids=frozenset({31}),
        diagnose_count=3,
        diagnose_window=timedelta(hours=12),
        application_gpus=4,
        application_window=timedelta(hours=1),
    )
    enriched = compile_rules(ruleset).nodes.enrich(XID)
    assert (enriched.get("gpu_action"), enriched.get("xid_action")) == ("RESTART_BM", None)


def test_an_empty_label_name_adds_none(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE + "gpu_triage: {action_label: ''}\n")
    enriched = compile_rules(load_ruleset(tmp_path, {})).nodes.enrich(XID)
    assert "xid_action" not in enriched
    assert enriched["node"] == "gpu-node-07"


@pytest.mark.parametrize(
    ("section", "path", "words"),
    [
        ("{follow_on_window: 0s}", "gpu_triage.follow_on_window", "more than 0s"),
        ("{follow_on_window: 5}", "gpu_triage.follow_on_window", "need a unit"),
        ("{burst: -1m}", "gpu_triage.burst", ""),
        ("{consequences: [45, 4242]}", "gpu_triage.consequences", "not in NVIDIA's Xid catalog: 4242"),
        ("{consequences: [45, 45]}", "gpu_triage.consequences", "must not repeat"),
        ("{consequences: [forty-five]}", "gpu_triage.consequences[0]", "valid integer"),
        ("{hardware: {count: 1}}", "gpu_triage.hardware.count", "greater than or equal to 2"),
        ("{hardware: {window: 0s}}", "gpu_triage.hardware.window", "more than 0s"),
        ("{diagnose: {xids: [0]}}", "gpu_triage.diagnose.xids", "not in NVIDIA's Xid catalog: 0"),
        ("{application: {gpus: 1}}", "gpu_triage.application.gpus", "greater than or equal to 2"),
        ("{application: {window: -1h}}", "gpu_triage.application.window", ""),
        ("{follow_on: 5m}", "gpu_triage.follow_on", ""),
    ],
)
def test_problems_name_the_file_and_path(tmp_path: Path, section: str, path: str, words: str) -> None:
    (tmp_path / "a.yml").write_text(ROUTE)
    f = tmp_path / "triage.yml"
    f.write_text(f"gpu_triage: {section}\n")
    found = problems(tmp_path)
    assert found
    assert all(p.startswith(f"{f}:{path}") for p in found), found
    assert any(words in p for p in found), found


def test_the_section_is_defined_once(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE + "gpu_triage: {burst: 1m}\n")
    b = tmp_path / "b.yml"
    b.write_text("gpu_triage: {burst: 2m}\n")
    assert problems(tmp_path) == [f"{b}:gpu_triage: section already defined in {tmp_path / 'a.yml'}"]


def test_the_follow_on_hold_is_read_and_defaults_to_30s(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE)
    assert compile_rules(load_ruleset(tmp_path, {})).follow_ons == FollowOnRules(hold_down=timedelta(seconds=30))
    (tmp_path / "a.yml").write_text(ROUTE + "gpu_triage: {follow_on_hold: 2m, follow_on_window: 1m, action_label: a}\n")
    folds = compile_rules(load_ruleset(tmp_path, {})).follow_ons
    assert (folds.hold_down, folds.triage.follow_on_window, folds.action_label) == (2 * MIN, MIN, "a")
    (tmp_path / "a.yml").write_text(ROUTE + "gpu_triage: {follow_on_hold: -1s}\n")
    assert any("gpu_triage.follow_on_hold" in p for p in problems(tmp_path))


def test_an_inhibit_rule_named_as_the_fold_is_renamed(tmp_path: Path) -> None:
    """The folding of follow-on Xids reports `gpu-follow-on`: a rule of that name would be taken for it."""
    rules = "inhibit_rules: [{name: gpu-follow-on, target_matchers: ['a=\"1\"']}]\n"
    (tmp_path / "a.yml").write_text(ROUTE + rules)
    (rule,) = compile_rules(load_ruleset(tmp_path, {})).inhibit_rules
    assert rule.name == "gpu-follow-on (inhibit_rules[0])"
