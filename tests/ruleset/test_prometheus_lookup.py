"""`topology.prometheus`: defaults, what check-config refuses (with file, path and a clear message), and
the bearer token as a secret (an ${ENV} reference, redacted)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.channels.registry import secret_values
from alertrouter.cli.main import main
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.topology import DEFAULT_NODE_LABELS, LOOKUP_SERIES


def rules(tmp_path: Path, lookup: str, extra: str = "") -> Path:
    (tmp_path / "topology.yml").write_text(f"topology:\n{extra}  prometheus:\n{lookup}")
    return tmp_path


def problems(path: Path, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, env or {})
    return [str(p) for p in info.value.problems]


def test_off_by_default() -> None:
    assert load_ruleset(Path(__file__).resolve().parents[2] / "rules", {}).topology.prometheus is None


def test_defaults(tmp_path: Path) -> None:
    topology = load_ruleset(rules(tmp_path, "    url: http://prometheus:9090/\n"), {}).topology
    lookup = topology.prometheus
    assert lookup is not None
    assert lookup.url == "http://prometheus:9090"  # the trailing slash dropped: paths are appended
    assert (lookup.refresh, lookup.timeout) == (timedelta(minutes=1), timedelta(seconds=10))
    assert lookup.series == list(LOOKUP_SERIES)
    assert lookup.node_labels == DEFAULT_NODE_LABELS
    assert topology.lookup_keep_for == timedelta(days=7)  # learned_alias_ttl


def test_the_whole_section(tmp_path: Path) -> None:
    text = (
        "    url: https://thanos.example/prometheus\n"
        "    refresh: 30s\n"
        "    timeout: 5s\n"
        "    keep_for: 2h\n"
        "    bearer_token: ${PROM_TOKEN}\n"
        "    series: [node_uname_info, kube_node_labels]\n"
        "    node_labels: {rack: label_example_com_rack, region: [label_topology_kubernetes_io_region]}\n"
    )
    ruleset = load_ruleset(rules(tmp_path, text), {"PROM_TOKEN": "eyJhbGciOi-token"})
    lookup = ruleset.topology.prometheus
    assert lookup is not None
    assert lookup.bearer_token is not None
    assert lookup.bearer_token.get_secret_value() == "eyJhbGciOi-token"
    assert ruleset.topology.lookup_keep_for == timedelta(hours=2)
    assert lookup.node_labels == {"rack": ["label_example_com_rack"], "region": ["label_topology_kubernetes_io_region"]}
    assert "eyJhbGciOi-token" in secret_values(ruleset)  # redacted from logs, masked on the console
    assert "eyJhbGciOi" not in repr(ruleset)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("    refresh: 1m\n", "topology.prometheus.url: Field required"),
        ("    url: prometheus:9090\n", "topology.prometheus.url: must be an http:// or https:// URL with a host"),
        ("    url: ftp://prometheus\n", "must be an http:// or https:// URL"),
        ("    url: http://\n", "must be an http:// or https:// URL with a host"),
        ("    url: http://p:9090/api/v1/query?query=up\n", "without ?query"),
        ("    url: http://p:99999\n", "topology.prometheus.url: invalid port"),
        ("    url: http://p:9090\n    refresh: 60\n", "topology.prometheus.refresh: durations need a unit"),
        ("    url: http://p:9090\n    refresh: 500ms\n", "topology.prometheus.refresh: must be at least 1s"),
        ("    url: http://p:9090\n    timeout: soon\n", "topology.prometheus.timeout: "),
        ("    url: http://p:9090\n    keep_for: 30s\n", "prometheus.keep_for must be longer than prometheus.refresh"),
        ("    url: http://p:9090\n    series: []\n", "topology.prometheus.series: must name at least one series"),
        ("    url: http://p:9090\n    series: [kube_pod_labels]\n", "topology.prometheus.series[0]: Input should be"),
        ("    url: http://p:9090\n    node_labels: {rack: [label.rack]}\n", "'label.rack' is not a Prometheus label"),
        ("    url: http://p:9090\n    bearer_token: hunter2-in-the-file\n", "secrets must be ${ENV_VAR} references"),
        ("    url: http://p:9090\n    bearer_token: ${PROM_TOKEN}\n", "environment variable PROM_TOKEN is not set"),
        ("    url: http://p:9090\n    refreh: 1m\n", "topology.prometheus.refreh: unknown key"),
    ],
)
def test_check_config_refuses(tmp_path: Path, text: str, says: str) -> None:
    found = problems(rules(tmp_path, text))
    assert any(says in p for p in found), found
    assert all(str(tmp_path / "topology.yml") in p for p in found)
    assert not any("hunter2" in p for p in found)


def test_learned_ttl_zero_needs_an_explicit_keep_for(tmp_path: Path) -> None:
    path = rules(tmp_path, "    url: http://p:9090\n", extra="  learned_alias_ttl: 0s\n")
    [problem] = problems(path)
    assert "learned_alias_ttl (prometheus.keep_for unset) must be longer than prometheus.refresh" in problem


def test_check_config_prints_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules(tmp_path, "    url: prometheus:9090\n")
    assert main(["check-config", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'topology.yml'}:topology.prometheus.url: must be an http:// or https:// URL" in err
