"""The proof of `alertrouter import alertmanager`: for real-world configs, `alertrouter routes test` on the
imported rules names the same receivers, in the same order, as Alertmanager's own `amtool config routes
test` on the original, for every label set of a table; and `check-config` passes on every import."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.pipeline.aggregate import assign_rule, common_labels, incident_key, severity_rank
from alertrouter.pipeline.telling import Teller
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.procs import run_tool, tool

CONFIGS = Path(__file__).parent / "configs"
AT = "2026-12-08T03:00:00Z"  # a Tuesday, 11:00 in Shanghai: inside business-hours, outside night

# config -> (labels, the receivers amtool names); the expectations are Alertmanager's, asserted of both.
TABLE: dict[str, list[tuple[dict[str, str], list[str]]]] = {
    "kube-prometheus-stack": [
        ({"alertname": "Watchdog", "severity": "none"}, ["null"]),
        ({"alertname": "KubePodCrashLooping", "namespace": "default", "severity": "warning"}, ["null"]),
        ({"alertname": "InfoInhibitor", "severity": "none"}, ["null"]),
    ],
    "webhook-dingtalk": [
        ({"alertname": "HostDown"}, ["webhook1"]),
        ({"severity": "critical"}, ["webhook2"]),
        ({"severity": "critical", "service": "mysql"}, ["webhook2", "dba-pager"]),
        ({"severity": "warning", "service": "postgres"}, ["dba"]),
        ({"service": "mysqlx"}, ["webhook1"]),
        ({"team": "gpu", "env": "prod"}, ["webhook_legacy"]),
        ({"team": "gpu", "env": "staging"}, ["webhook1"]),
        ({"severity": "critical", "team": "gpu"}, ["webhook2", "webhook_legacy"]),
    ],
    "prometheusalert": [
        ({"instance": "10.0.0.7:9100"}, ["web.hook.prometheusalert"]),
        ({"severity": "warning", "team": "sre"}, ["prometheusalert-wx"]),
        ({"severity": "warning", "team": "dev"}, ["web.hook.prometheusalert"]),
        ({"alertname": "NodeDown", "env": "prod"}, ["prometheusalert-fs"]),
        ({"alertname": "KubeNodeDown", "env": "prod"}, ["slack-and-dd"]),
    ],
    "nested-continue": [
        ({"alertname": "Anything"}, ["default"]),
        ({"severity": "critical", "region": "north", "cluster": "gpu-a"}, ["north-gpu", "north"]),
        ({"severity": "critical", "region": "north", "cluster": "cpu-a"}, ["north"]),
        ({"severity": "critical", "region": "west"}, ["south"]),
        ({"severity": "critical", "region": "east"}, ["oncall"]),
        ({"alertname": "GPUHighTemp", "severity": "critical", "gpu": "3"}, ["oncall", "gpu-team"]),
        ({"alertname": "GPUHighTemp", "severity": "warning"}, ["gpu-nodes"]),
        ({"alertname": "GPUHighTemp", "severity": "info"}, ["blackhole"]),
        ({"team": "ml", "namespace": "kube-system"}, ["ml-catchall"]),
        ({"team": "ml", "namespace": "train"}, ["ml-workloads", "ml-catchall"]),
        (
            {"alertname": "GPUXidError", "severity": "critical", "team": "ml", "namespace": "train"},
            ["oncall", "gpu-nodes", "ml-workloads", "ml-catchall"],
        ),
        ({"alertname": "NodeDown", "node": "gpu-node-07"}, ["node-owners"]),
        # No `node` label: Alertmanager routes on the labels as sent, though alertrouter names the node.
        ({"alertname": "NodeDown", "instance": "10.0.0.7:9100"}, ["default"]),
    ],
}
CASES = [(config, labels, want) for config, rows in TABLE.items() for labels, want in rows]


def _case_id(case: tuple[str, dict[str, str], list[str]]) -> str:
    config, labels, _ = case
    return f"{config}:" + ",".join(f"{k}={v}" for k, v in labels.items())


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("imported")
    out = {}
    for config in TABLE:
        out[config] = base / config
        assert main(["import", "alertmanager", str(CONFIGS / f"{config}.yml"), "--out", str(out[config])]) == 0
    return out


def test_every_config_has_its_table() -> None:
    assert sorted(TABLE) == sorted(p.stem for p in CONFIGS.glob("*.yml"))


@pytest.mark.parametrize("config", sorted(TABLE))
def test_check_config_passes_on_the_import(
    imported: dict[str, Path], config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["check-config", str(imported[config])]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


@pytest.mark.alertmanager
@pytest.mark.parametrize(("config", "labels", "want"), CASES, ids=[_case_id(c) for c in CASES])
def test_routes_test_names_the_receivers_amtool_names(
    imported: dict[str, Path],
    config: str,
    labels: dict[str, str],
    want: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [f"{name}={value}" for name, value in labels.items()]
    amtool = tool("amtool", "prometheus-alertmanager")
    theirs = run_tool([amtool, "config", "routes", "test", f"--config.file={CONFIGS / config}.yml", *args])
    assert theirs.returncode == 0, theirs.stderr
    assert theirs.stdout.strip().split(",") == want

    capsys.readouterr()
    assert main(["routes", "test", "--config", str(imported[config]), "--at", AT, *args]) == 0
    ours = capsys.readouterr().out.splitlines()[0]
    assert ours.split(",") == want


@pytest.mark.parametrize("config", sorted(TABLE))
def test_an_incident_routes_as_each_of_its_alerts(imported: dict[str, Path], config: str) -> None:
    """alertrouter routes an incident by the labels its alerts share and their worst severity: alerts of
    the table that fall into one incident must each be routed where the incident is."""
    pipeline = compile_rules(load_ruleset(imported[config], env={}))
    teller = Teller(pipeline)
    alerts = [pipeline.nodes.enrich(labels) for labels, _ in TABLE[config]]
    incidents: dict[str, list[Mapping[str, str]]] = {}
    for alert in alerts:
        incidents.setdefault(incident_key(assign_rule(pipeline.aggregation, alert), alert), []).append(alert)
    for members in incidents.values():
        severity = min((m.get("severity", "") for m in members), key=lambda s: severity_rank(s, pipeline.severities))
        told = [r.receiver for r in teller.routes(common_labels(members), severity)]
        for member in members:
            assert told == list(dict.fromkeys(r.receiver for r in teller.routes(member, member.get("severity", ""))))
