"""The derived `xid_action` label through the real pipeline (engine passes on the shipped aggregation and
GPU triage rules): application faults go to the workload's owner, GPU and node faults to infrastructure,
from dcgm-exporter's real label sets (`Hostname` before 2026, `hostname` after; `err_code` on the series as
dcgm-exporter 4.x sends it, and the shipped Prometheus rules' `xid`)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.gpu_fixtures import XID_ACTION_ROUTES
from support.scenario import REPO, Scenario, dcgm_labels, k8s_dcgm_labels

MIN = timedelta(minutes=1)


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    for name in ("aggregation.yml", "gpu_triage.yml"):
        shutil.copy(REPO / "rules" / name, tmp_path / name)
    (tmp_path / "routes.yml").write_text(XID_ACTION_ROUTES)
    return tmp_path


def lowercase_hostname(labels: Mapping[str, str]) -> dict[str, str]:
    """dcgm-exporter since May 2026: `hostname`, not `Hostname`."""
    return {("hostname" if k == "Hostname" else k): v for k, v in labels.items()}


def dcgm4_series(ip: str, host: str, gpu: int, code: str, msg: str) -> dict[str, str]:
    """A rule of one's own on `DCGM_FI_DEV_XID_ERRORS != 0`, keeping the series' labels: dcgm-exporter 4.x
    puts `err_code` and `err_msg` on it; no `xid`."""
    labels = dcgm_labels(ip, host, gpu, "DCGMXidErrors", err_code=code, err_msg=msg)
    return lowercase_hostname(labels)


CASES = [
    # the shipped GPUXidError (`xid`), bare metal, `Hostname`: XID 13 is the application's
    ("gpu-node-01", dcgm_labels("10.0.0.1", "gpu-node-01", 2, xid="13"), "workload-owner", "RESTART_APP"),
    # the same, `hostname`
    (
        "gpu-node-02",
        lowercase_hostname(dcgm_labels("10.0.0.2", "gpu-node-02", 5, xid="31")),
        "workload-owner",
        "RESTART_APP",
    ),
    # dcgm-exporter 4.x's own `err_code` (a float as a label value reads as the code)
    (
        "gpu-node-03",
        dcgm4_series("10.0.0.3", "gpu-node-03", 3, "79", "GPU has fallen off the bus"),
        "infrastructure",
        "RESTART_BM",
    ),
    (
        "gpu-node-04",
        dcgm4_series("10.0.0.4", "gpu-node-04", 1, "48.0", "Double Bit ECC Error"),
        "infrastructure",
        "WORKFLOW_XID_48",
    ),
    # the shipped GPUFallenOffBus (`xid: "79"`), Kubernetes shape
    (
        "gpu-node-05",
        k8s_dcgm_labels("gpu-node-05", "10.244.3.7", 6, "GPUFallenOffBus", "critical", xid="79"),
        "infrastructure",
        "RESTART_BM",
    ),
    ("gpu-node-06", dcgm_labels("10.0.0.6", "gpu-node-06", 0, xid="119"), "infrastructure", "RESET_GPU"),
    # IGNORE and an Xid the catalog does not know: neither route
    ("gpu-node-08", dcgm_labels("10.0.0.8", "gpu-node-08", 4, xid="63"), "everything-else", "IGNORE"),
    ("gpu-node-09", dcgm_labels("10.0.0.9", "gpu-node-09", 4, xid="4242"), "everything-else", "UNKNOWN"),
]


@pytest.mark.parametrize(("node", "labels", "receiver", "action"), CASES, ids=[c[0] for c in CASES])
def test_the_action_label_routes_each_fault(
    rules: Path, node: str, labels: dict[str, str], receiver: str, action: str
) -> None:
    sc = Scenario(compile_rules(load_ruleset(rules, {})))
    sc.fire(labels)
    sc.run(MIN)
    assert [(m.receiver, m.message.headline.split(":")[0]) for m in sc.messages()] == [(receiver, node)]
    assert sc.pipeline.nodes.enrich(labels)["xid_action"] == action


def test_an_alerts_own_label_wins_and_an_alert_without_an_xid_gets_none(rules: Path) -> None:
    sc = Scenario(compile_rules(load_ruleset(rules, {})))
    own = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="79", xid_action="RESTART_APP")
    hot = dcgm_labels("10.0.0.8", "gpu-node-08", 1, "GPUHighTemp", severity="warning")
    sc.fire(own)
    sc.fire(hot)
    sc.run(MIN)
    assert sorted(m.receiver for m in sc.messages()) == ["everything-else", "workload-owner"]
    assert sc.pipeline.nodes.enrich(own)["xid_action"] == "RESTART_APP"
    assert "xid_action" not in sc.pipeline.nodes.enrich(hot)


def test_one_node_s_gpus_with_one_application_xid_are_one_message_to_the_owner(rules: Path) -> None:
    sc = Scenario(compile_rules(load_ruleset(rules, {})))
    for gpu in range(8):
        sc.fire(dcgm_labels("10.0.0.7", "gpu-node-07", gpu, xid="13", exported_pod="llama-3-worker-0"))
    sc.run(MIN)
    assert [(m.receiver, m.message.headline) for m in sc.messages()] == [
        ("workload-owner", "gpu-node-07: GPUXidError on 8/8 GPUs")
    ]


def test_the_shipped_routes_example_sends_faults_by_action_and_on_by_severity(tmp_path: Path) -> None:
    """rules/routes.yml's commented example, uncommented, with receivers of those names."""
    shutil.copytree(REPO / "rules", tmp_path / "rules")
    routes = tmp_path / "rules" / "routes.yml"
    text = routes.read_text()
    example = [line for line in text.splitlines() if line.startswith("    # - matchers: ['xid_action")]
    assert len(example) == 2
    for line in text.splitlines():
        if line.startswith(("    # - matchers: ['xid_action", "    #   receiver:", "    #   continue:")):
            text = text.replace(line + "\n", line.replace("    # ", "    ", 1) + "\n", 1)
    routes.write_text(text)
    (tmp_path / "rules" / "zz-owners.yml").write_text("receivers: [{name: workload-owner}, {name: infrastructure}]\n")
    sc = Scenario(compile_rules(load_ruleset(tmp_path / "rules", {})))
    sc.fire(dcgm_labels("10.0.0.1", "gpu-node-01", 2, xid="13", exported_pod="llama-3-worker-0"))
    sc.fire(dcgm_labels("10.0.0.2", "gpu-node-02", 3, "GPUFallenOffBus", xid="79"))
    sc.run(MIN)
    sent = sorted((m.message.headline.split(":")[0], m.receiver) for m in sc.messages())
    assert sent == [
        ("gpu-node-01", "oncall-core"),
        ("gpu-node-01", "workload-owner"),
        ("gpu-node-02", "infrastructure"),
        ("gpu-node-02", "oncall-core"),
    ]
