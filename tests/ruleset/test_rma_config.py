"""The `rma:` section (ruleset/rma.py): the shipped file equals the defaults, a rule of one's own, and
problems named by file and path."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.rma import rma_rules
from support.scenario import REPO

ROUTE = "route: {receiver: r}\nreceivers: [{name: r}]\n"


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


def test_the_shipped_file_writes_out_the_defaults() -> None:
    assert rma_rules(load_ruleset(REPO / "rules", {}).rma) == DEFAULT_RULES


def test_without_the_section_the_defaults_apply(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE)
    assert rma_rules(load_ruleset(tmp_path, {}).rma) == DEFAULT_RULES


def test_rules_of_ones_own(tmp_path: Path) -> None:
    rules = "rma:\n  rules:\n    - {name: nvlink, xids: [74], alertnames: [GPUNVLinkDown], count: 3, window: 7d}\n"
    (tmp_path / "a.yml").write_text(ROUTE + rules)
    assert rma_rules(load_ruleset(tmp_path, {}).rma) == (
        RmaRule("nvlink", 3, timedelta(days=7), xids=frozenset({74}), alertnames=frozenset({"GPUNVLinkDown"})),
    )
    (tmp_path / "a.yml").write_text(ROUTE + "rma: {rules: []}\n")
    assert rma_rules(load_ruleset(tmp_path, {}).rma) == ()


@pytest.mark.parametrize(
    ("rule", "path", "words"),
    [
        ("{name: a, xids: [48], window: 30d}", "rma.rules[0].count", "Field required"),
        ("{name: a, xids: [48], count: 0, window: 30d}", "rma.rules[0].count", "greater than or equal to 1"),
        ("{name: a, xids: [48], count: 2, window: 30}", "rma.rules[0].window", "need a unit"),
        ("{name: a, xids: [48], count: 2, window: 0s}", "rma.rules[0].window", "more than 0s"),
        ("{name: a, xids: [0, 48], count: 2, window: 30d}", "rma.rules[0].xids", "not an Xid: 0"),
        ("{name: a, xids: [forty-eight], count: 2, window: 30d}", "rma.rules[0].xids[0]", "valid integer"),
        ("{name: a, count: 2, window: 30d}", "rma.rules[0]", "needs xids or alertnames"),
        ("{name: a, xid: [48], count: 2, window: 30d}", "rma.rules[0].xid", "unknown key"),
        ("{name: '', xids: [48], count: 2, window: 30d}", "rma.rules[0].name", "at least 1 character"),
    ],
)
def test_problems_name_the_file_and_path(tmp_path: Path, rule: str, path: str, words: str) -> None:
    f = tmp_path / "rma.yml"
    (tmp_path / "a.yml").write_text(ROUTE)
    f.write_text(f"rma:\n  rules:\n    - {rule}\n")
    found = problems(tmp_path)
    assert found
    assert all(p.startswith(f"{f}:{path}") for p in found), found
    assert any(words in p for p in found), found


def test_a_rule_name_twice(tmp_path: Path) -> None:
    f = tmp_path / "rma.yml"
    (tmp_path / "a.yml").write_text(ROUTE)
    twice = "    - {name: a, xids: [48], count: 2, window: 30d}\n"
    f.write_text("rma:\n  rules:\n" + twice * 2)
    assert problems(tmp_path) == [f"{f}:rma.rules: rule names must be unique: a"]


def test_the_section_twice(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE + "rma: {rules: []}\n")
    (tmp_path / "b.yml").write_text("rma: {rules: []}\n")
    assert problems(tmp_path) == [f"{tmp_path / 'b.yml'}:rma: section already defined in {tmp_path / 'a.yml'}"]


def test_check_config_names_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a.yml"
    f.write_text(ROUTE + "rma:\n  rules:\n    - {name: a, xids: [0], count: 2, window: 30d}\n")
    assert main(["check-config", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert f"{f}:rma.rules[0].xids: not an Xid: 0 (a whole number from 1)" in out.out + out.err
