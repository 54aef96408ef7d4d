"""Loading rules: env interpolation, merging, and problems reported as file:path: message."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.ruleset import ConfigError, load_ruleset

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path: Path, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, env or {})
    return [str(p) for p in info.value.problems]


def test_shipped_rules_load() -> None:
    ruleset = load_ruleset(REPO / "rules", {})
    assert ruleset.global_.node_labels[0] == "node"
    assert ruleset.global_.external_url == "http://localhost:9095"  # the ${VAR:-default} in the shipped file
    assert len(ruleset.config_hash) == 16


def test_env_interpolation(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "global:\n  external_url: https://${HOST}:${PORT:-443}/x$$y\n")
    ruleset = load_ruleset(tmp_path, {"HOST": "ar.example"})
    assert ruleset.global_.external_url == "https://ar.example:443/x$y"


def test_unset_env_var_names_file_path_and_variable(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "global:\n  external_url: ${ALERTROUTER_URL}\n")
    assert problems(tmp_path) == [f"{f}:global.external_url: environment variable ALERTROUTER_URL is not set"]


def test_unknown_keys_and_bad_types(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "global:\n  node_labels: [node, 3, node]\n  sevrity_label: x\ninhbit_rules: []\n")
    found = problems(tmp_path)
    assert f"{f}:global.sevrity_label: unknown key" in found
    assert f"{f}:inhbit_rules: unknown section" in found
    assert any(p.startswith(f"{f}:global.node_labels[1]: ") for p in found)


def test_repeated_labels_rejected(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "global:\n  node_labels: [node, node]\n")
    assert problems(tmp_path) == [f"{f}:global.node_labels: labels must not repeat"]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "global:\n  node_labels: [node\n")
    (found,) = problems(tmp_path)
    assert found.startswith(f"{f}:line ")
    assert "invalid YAML" in found


def test_duplicate_keys_rejected(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "global:\n  severity_label: a\n  severity_label: b\n")
    (found,) = problems(tmp_path)
    assert found.startswith(f"{f}:line 3")
    assert "duplicate key 'severity_label'" in found


def test_section_defined_twice_names_both_files(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yml", "global:\n  severity_label: a\n")
    b = write(tmp_path, "b.yml", "global:\n  severity_label: b\n")
    assert problems(tmp_path) == [f"{b}:global: section already defined in {a}"]


def test_every_problem_reported_not_just_the_first(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "global: [1]\n")
    write(tmp_path, "b.yml", "nonsense: true\n")
    assert len(problems(tmp_path)) == 2


def test_non_mapping_file_and_missing_path(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "- just\n- a list\n")
    assert problems(tmp_path) == [f"{f}: must be a mapping of sections, not list"]
    assert problems(tmp_path / "nope") == [f"{tmp_path / 'nope'}: no such file or directory"]


def test_empty_file_is_defaults_and_subdirs_ignored(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "# nothing yet\n")
    (tmp_path / "prometheus").mkdir()
    write(tmp_path / "prometheus", "x.yml", "groups: []\n")
    assert load_ruleset(tmp_path, {}).global_.severity_label == "severity"


def test_config_hash_follows_content(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "global:\n  severity_label: a\n")
    before = load_ruleset(tmp_path, {}).config_hash
    write(tmp_path, "a.yml", "global:\n  severity_label: b\n")
    assert load_ruleset(tmp_path, {}).config_hash != before


def test_shipped_rules_build_the_whole_pipeline() -> None:
    from alertrouter.ruleset.build import compile_rules

    pipeline = compile_rules(load_ruleset(REPO / "rules", {}))
    assert pipeline.inhibit_rules[0].name == "node-down-mutes-node"
    assert [a.name for a in pipeline.aggregation] == ["gpu-by-node", "node"]
    assert pipeline.route.receiver == "weekly-digest"
    assert {"critical-north", "ops-south", "weekly-digest"} <= set(pipeline.receivers)


RULES_WITH_CROSS_REFERENCE_PROBLEMS = """\
inhibit_rules:
  - {name: same, source_matchers: ['a="1"'], target_matchers: ['b="1"']}
  - {name: same, source_match: {"bad-name": "v"}, target_matchers: ['b="1"']}
aggregation:
  - {name: gpu}
route:
  receiver: digest
  routes:
    - {matchers: ['severity="critical"'], receiver: pager, repeat_interval: {critical: 0s}}
    - {matchers: ['severity="warning"'], receiver: chat}
receivers:
  - {name: digest}
  - {name: chat}
"""


def test_cross_reference_problems_name_file_and_path(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", RULES_WITH_CROSS_REFERENCE_PROBLEMS)
    found = problems(tmp_path)
    assert f"{f}:route.routes[0].receiver: undefined receiver 'pager'" in found
    assert any(p.startswith(f"{f}:inhibit_rules[1].source_match: ") and "bad-name" in p for p in found), found
    assert any("repeat_interval" in p and "positive" in p for p in found), found


def test_items_from_several_files_keep_their_own_file(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "receivers: [{name: x}]\nroute: {receiver: x}\n")
    b = write(tmp_path, "b.yml", "receivers: [{name: y}, {name: x}]\n")
    assert problems(tmp_path) == [
        f"{b}:receivers[1].name: duplicate name 'x' (first at {tmp_path / 'a.yml'}:receivers[0])"
    ]


def test_root_route_rules(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "route: {matchers: ['a=\"b\"']}\n")
    found = problems(tmp_path)
    assert f"{f}:route.receiver: the root route needs a receiver" in found
    assert f"{f}:route.matchers: the root route matches every alert and takes no matchers" in found


def test_rollup_off_and_shorthands(tmp_path: Path) -> None:
    from alertrouter.ruleset.build import compile_rules

    write(
        tmp_path,
        "a.yml",
        "aggregation: [{name: g, rollup: off}]\n"
        "route: {receiver: r, repeat_interval: 1h, max_repeats: 3, routes: [{receiver: r, max_repeats: unlimited}]}\n"
        "receivers: [{name: r}]\n",
    )
    pipeline = compile_rules(load_ruleset(tmp_path, {}))
    assert pipeline.aggregation[0].rollup is None
    hour = timedelta(hours=1)
    assert pipeline.route.repeat_interval == {"critical": hour, "warning": hour, "info": hour, "default": hour}


def test_a_name_longer_than_the_stores_columns_is_a_config_error(tmp_path: Path) -> None:
    # Stored by every engine pass (an incident's rule, a receiver, a channel): PostgreSQL would refuse it
    # at each pass, so check-config refuses it first, naming the file and the path.
    long = "r" * 256
    write(
        tmp_path,
        "a.yml",
        f"aggregation:\n  - name: {long}\n    group_by: [alertname, node]\n"
        f"receivers:\n  - name: {long}\n"
        f"channels:\n  - {{name: {long}, type: dingtalk, url: 'http://127.0.0.1:1/robot/send',"
        " access_token: '${T}'}\n",
    )
    found = problems(tmp_path, {"T": "dt-token"})
    for where in ("aggregation[0].name", "receivers[0].name", "channels[0].name"):
        assert any(p.startswith(f"{tmp_path / 'a.yml'}:{where}:") and "at most 255 characters" in p for p in found), (
            where,
            found,
        )
