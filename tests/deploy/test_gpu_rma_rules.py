"""The shipped rules on the DCGM signals that precede an RMA (group `gpu-rma` of rules/prometheus/gpu.rules.yml):
their names and severities are a contract with routes and RMA rules, they read only fields dcgm-exporter really
has, and they behave as their promtool unit tests (gpu_rma.tests.yml, gpu_rma_week.tests.yml) say."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.dcgm import FIELDS, RMA_FIELDS
from support.procs import run_tool, tool

REPO = Path(__file__).resolve().parents[2]
RULES_DIR = REPO / "rules" / "prometheus"
UNIT_TESTS = ("gpu_rma.tests.yml", "gpu_rma_week.tests.yml")
# alertname -> severity: what routes, inhibit rules and the GPU history match on. Renaming one breaks them.
RMA_ALERTS = {
    "GPURowRemapFailure": "critical",
    "GPURowRemapPending": "warning",
    "GPUUncorrectableRemappedRows": "warning",
    "GPURetiredPagesPending": "warning",
    "GPURetiredPagesDBELimit": "critical",
    "GPURetiredPagesLimit": "critical",
    "GPUNVLinkCRCErrors": "warning",
    "GPUNVLinkReplayErrors": "warning",
    "GPUNVLinkRecoveryErrors": "warning",
}
ANNOTATIONS = {"summary", "description", "summary_zh_CN", "description_zh_CN"}
METRIC = re.compile(r"\bDCGM_[A-Z0-9_]+\b")


def rma_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((RULES_DIR / "gpu.rules.yml").read_text(encoding="utf-8"))["groups"]
    (group,) = [group for group in groups if group["name"] == "gpu-rma"]
    rules: list[dict[str, Any]] = group["rules"]
    return rules


def test_the_rma_alerts_are_the_documented_ones() -> None:
    assert {rule["alert"]: rule["labels"]["severity"] for rule in rma_rules()} == RMA_ALERTS


@pytest.mark.parametrize("rule", rma_rules(), ids=lambda rule: f"{rule['alert']}:{rule['expr'].split('(')[0][:30]}")
def test_an_rma_rule_waits_speaks_both_languages_and_names_the_gpu(rule: dict[str, Any]) -> None:
    assert rule["for"] in {"1m", "10m", "15m"}
    assert set(rule["annotations"]) == ANNOTATIONS
    for text in rule["annotations"].values():
        # whichever host label the exporter writes, the text names the node
        assert "{{ $labels.hostname }}{{ $labels.Hostname }}" in text
        assert "{{ $labels.gpu }}" in text
    for key in ("description", "description_zh_CN"):
        assert "{{ $labels.UUID }}" in rule["annotations"][key]
        assert "{{ $labels.instance }}" in rule["annotations"][key]


def test_the_rma_rules_read_only_real_dcgm_fields() -> None:
    read = {name for rule in rma_rules() for name in METRIC.findall(rule["expr"])}
    assert read == set(RMA_FIELDS) - {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"}
    assert read <= set(FIELDS)


def test_promtool_rma_unit_tests_pass() -> None:
    result = run_tool([tool("promtool", "prometheus"), "test", "rules", *UNIT_TESTS], cwd=RULES_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(UNIT_TESTS)


# (unit tests, text in gpu.rules.yml, its replacement, the alert whose test must fail)
CHANGES = {
    # GPU 3 sits at 62 retired pages, GPU 6 at 15 double-bit pages, GPU 2 at 90 CRC errors/s: just short
    "page-limit": (0, "DCGM_FI_DEV_RETIRED_DBE >= 63", "DCGM_FI_DEV_RETIRED_DBE >= 62", "GPURetiredPagesLimit"),
    "dbe-limit": (1, "DCGM_FI_DEV_RETIRED_DBE > 15", "DCGM_FI_DEV_RETIRED_DBE >= 15", "GPURetiredPagesDBELimit"),
    "dbe-week": (1, "offset 1w > 1", "offset 1w > 0", "GPURetiredPagesDBELimit"),
    "crc-rate": (0, "[5m]) >= 100", "[5m]) >= 90", "GPUNVLinkCRCErrors"),
    # a total above zero is no alert, a new row is
    "new-row": (0, "> DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS offset 1h", "> 0", "GPUUncorrectableRemappedRows"),
    # a one-off replay burst is no alert, a steady one is; a pending remap a reset clears soon is none
    "burst": (
        0,
        "REPLAY_ERROR_COUNT_TOTAL[5m]) > 0\n        for: 10m",
        "REPLAY_ERROR_COUNT_TOTAL[5m]) > 0\n        for: 3m",
        "GPUNVLinkReplayErrors",
    ),
    "pending": (
        0,
        "ROW_REMAP_PENDING > 0\n        for: 15m",
        "ROW_REMAP_PENDING > 0\n        for: 3m",
        "GPURowRemapPending",
    ),
    "failure": (0, "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", "DCGM_FI_DEV_ROW_REMAP_FAILURE >= 0", "GPURowRemapFailure"),
}


@pytest.mark.parametrize("change", CHANGES)
def test_promtool_rma_unit_tests_catch_a_changed_rule(tmp_path: Path, change: str) -> None:
    index, old, new, alertname = CHANGES[change]
    tests = UNIT_TESTS[index]
    shutil.copy(RULES_DIR / tests, tmp_path / tests)
    rules = (RULES_DIR / "gpu.rules.yml").read_text(encoding="utf-8")
    assert old in rules
    (tmp_path / "gpu.rules.yml").write_text(rules.replace(old, new), encoding="utf-8")
    result = run_tool([tool("promtool", "prometheus"), "test", "rules", tests], cwd=tmp_path)
    assert result.returncode != 0, result.stdout
    failed = {
        line.split("alertname: ")[1].split(",")[0] for line in result.stderr.splitlines() if "alertname: " in line
    }
    assert failed == {alertname}, result.stderr
