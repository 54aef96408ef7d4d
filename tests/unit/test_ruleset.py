"""Loading rules: env interpolation, merging, and problems reported as file:path: message."""

from __future__ import annotations

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
    f = write(
        tmp_path, "a.yml", "global:\n  node_labels: [node, 3, node]\n  sevrity_label: x\ninhbit_rules: []\n"
    )
    found = problems(tmp_path)
    assert f"{f}:global.sevrity_label: unknown key" in found
    assert f"{f}:inhbit_rules: unknown section" in found
    assert any(p.startswith(f"{f}:global.node_labels[1]: ") for p in found)


def test_repeated_labels_rejected(tmp_path: Path) -> None:
    f = write(tmp_path, "a.yml", "global:\n  node_labels: [node, node]\n")
    assert problems(tmp_path) == [f"{f}:global.node_labels: Value error, labels must not repeat"]


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
