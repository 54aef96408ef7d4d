"""Aggregation: incident keys, node summaries ("6/8 GPUs"), worst severity, storm roll-up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.labels import parse_matchers
from alertrouter.model import AlertView
from alertrouter.pipeline.aggregate import (
    DEFAULT_RULE,
    AggregationRule,
    RollupRule,
    assign_rule,
    incident_key,
    rollup_key,
    severity_rank,
    storm_headline,
    summarize_incident,
)

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
GPU_RULE = AggregationRule(
    name="gpu-by-node",
    matchers=tuple(parse_matchers('gpu!=""')),
    group_by=("alertname", "node"),
    unit_label="gpu",
    units_per_group=8,
    rollup=RollupRule(threshold=5, window=timedelta(minutes=2), by=("alertname", "region")),
)


def gpu(node: str, index: int, severity: str = "warning", **extra: str) -> AlertView:
    labels = {"alertname": "GPUHighTemp", "node": node, "gpu": str(index), "severity": severity, "region": "north"}
    return AlertView(fingerprint=f"{node}-{index}", labels={**labels, **extra}, firing=True)


def test_rule_assignment_first_match_then_default() -> None:
    assert assign_rule([GPU_RULE], gpu("n1", 0).labels) is GPU_RULE
    assert assign_rule([GPU_RULE], {"alertname": "NodeDown", "node": "n1"}) is DEFAULT_RULE


def test_incident_key_is_per_alertname_and_node() -> None:
    a, b = gpu("gpu-node-07", 0), gpu("gpu-node-07", 5)
    assert incident_key(GPU_RULE, a.labels) == incident_key(GPU_RULE, b.labels)
    assert incident_key(GPU_RULE, a.labels) == 'gpu-by-node{alertname="GPUHighTemp",node="gpu-node-07"}'
    assert incident_key(GPU_RULE, a.labels) != incident_key(GPU_RULE, gpu("gpu-node-08", 0).labels)
    # quoting keeps keys unambiguous whatever the values hold
    tricky = {"alertname": 'x",node="y', "node": "z"}
    assert incident_key(GPU_RULE, tricky) != incident_key(GPU_RULE, {"alertname": "x", "node": 'y",node="z'})


def test_one_node_six_hot_gpus_is_one_summary() -> None:
    alerts = [gpu("gpu-node-07", i, "critical" if i == 3 else "warning") for i in (0, 1, 3, 4, 6, 7)]
    s = summarize_incident(GPU_RULE, incident_key(GPU_RULE, alerts[0].labels), alerts)
    assert s.units == ("0", "1", "3", "4", "6", "7")
    assert (s.units_total, s.alerts, s.severity) == (8, 6, "critical")
    assert s.headline == "gpu-node-07: GPUHighTemp on 6/8 GPUs"
    assert s.common_labels["region"] == "north"
    assert "gpu" not in s.common_labels


def test_units_sort_numerically() -> None:
    alerts = [gpu("n", i) for i in (10, 2, 1)]
    assert summarize_incident(GPU_RULE, "k", alerts).units == ("1", "2", "10")


@pytest.mark.parametrize(
    ("severity", "rank"), [("critical", 0), ("warning", 1), ("info", 2), ("page-me-maybe", 3), ("", 3)]
)
def test_severity_rank(severity: str, rank: int) -> None:
    assert severity_rank(severity) == rank


def test_rollup_key_and_storm_headline() -> None:
    labels = gpu("n1", 0).labels
    assert rollup_key(GPU_RULE, labels) == 'gpu-by-node/cluster{alertname="GPUHighTemp",region="north"}'
    assert rollup_key(DEFAULT_RULE, labels) is None
    members = [
        summarize_incident(GPU_RULE, f"k{n}", [gpu(f"n{n}", i, rack="r12") for i in range(n % 8 + 1)])
        for n in range(37)
    ]
    expected_gpus = sum(n % 8 + 1 for n in range(37))
    headline = storm_headline("GPUHighTemp", members, ("region", "rack", "cluster"))
    assert headline == f"GPUHighTemp on 37 nodes in region north, rack r12: {expected_gpus} GPUs"
