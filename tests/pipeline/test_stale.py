"""Stale is not resolved (pipeline/stale.py) on the shipped rules, in both label shapes: a bare-metal node
(dcgm-exporter by IP with `Hostname`, node-exporter by IP only, named by a learned alias) and a Kubernetes
node (dcgm-exporter by pod IP, node-exporter by node IP, both relabelled with `node`)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from alertrouter.labels import parse_matchers
from alertrouter.pipeline import stale
from alertrouter.pipeline.stale import Reason, StaleRule, source_of, staleness
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Decision, LiveAlert
from support.scenario import (
    T0,
    Scenario,
    dcgm_labels,
    k8s_dcgm_labels,
    k8s_node_down_labels,
    kube_node_not_ready_labels,
    node_exporter_down_labels,
)

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
NODE = "gpu-node-07"


def metal(gpus: range) -> tuple[list[dict[str, str]], dict[str, str]]:
    """Hot GPUs of a bare-metal node, and its NodeDown (named only by IP)."""
    hot = [dcgm_labels("10.0.0.7", NODE, g, alertname="GPUHighTemp", severity="warning") for g in gpus]
    return hot, node_exporter_down_labels("10.0.0.7")


def kube(gpus: range) -> tuple[list[dict[str, str]], dict[str, str]]:
    """Hot GPUs of a Kubernetes node, and its NodeDown (relabelled with `node`)."""
    hot = [k8s_dcgm_labels(NODE, "10.244.7.23", g) for g in gpus]
    return hot, k8s_node_down_labels(NODE, "10.0.0.7")


SHAPES = pytest.mark.parametrize("shape", [metal, kube], ids=["bare-metal", "kubernetes"])


def told(sc: Scenario, alertname: str) -> list[NotifyReason]:
    return [m.reason for m in sc.messages() if m.message.labels.get("alertname") == alertname]


def hot_and_told(sc: Scenario, hot: list[dict[str, str]]) -> list[str]:
    fps = [sc.fire(labels) for labels in hot]
    sc.run(MIN)
    assert set(told(sc, "GPUHighTemp")) == {NotifyReason.FIRST}
    return fps


def decision(sc: Scenario, fp: str) -> tuple[Decision, str | None]:
    assert sc.last is not None
    d = sc.last.decisions[fp]
    return d.decision, d.stale_reason


def gpu_incident(sc: Scenario) -> dict[str, object]:
    assert sc.last is not None
    (state,) = [s for s in sc.last.incidents.values() if s.labels.get("alertname") == "GPUHighTemp"]
    return {**state.summary.to_json(), "open": state.firing}  # as the incident row stores it


@SHAPES
def test_a_node_that_dies_tells_no_resolve_for_its_gpus_and_one_node_down(shape) -> None:  # type: ignore[no-untyped-def]
    sc = Scenario()
    hot, down = shape(range(2))
    fps = hot_and_told(sc, hot)
    before = len(sc.messages())
    # the node dies: its dcgm series vanish, its GPU alerts resolve; NodeDown (for: 1m) comes a minute later
    dark = sc.now
    for labels in hot:
        sc.resolve(labels)
    sc.run(70 * S)
    sc.fire(down)
    sc.run(10 * MIN)
    assert NotifyReason.RESOLVED not in told(sc, "GPUHighTemp")
    # one incident told while it is dark: NodeDown, once per receiver (critical: the on-call)
    assert {m.message.labels["alertname"] for m in sc.messages()[before:]} == {"NodeDown"}
    assert {m.reason for m in sc.messages()[before:]} == {NotifyReason.FIRST}
    assert {decision(sc, fp) for fp in fps} == {(Decision.STALE, Reason.SOURCE_DOWN.value)}
    incident = gpu_incident(sc)
    assert incident["open"] is True
    assert incident["stale"] == 2
    assert incident["no_data_since"] == dark.isoformat()
    assert sc.last is not None
    assert sc.last.counts["stale"] == 2

    # it comes back cool: NodeDown resolves; the GPUs' resolve waits `settle` (2m) for them to fire again
    sc.resolve(down)
    sc.run(MIN)
    assert told(sc, "NodeDown")[-1] == NotifyReason.RESOLVED
    assert NotifyReason.RESOLVED not in told(sc, "GPUHighTemp")
    assert {decision(sc, fp) for fp in fps} == {(Decision.STALE, Reason.RETURNING.value)}
    sc.run(2 * MIN)
    assert told(sc, "GPUHighTemp")[-1] == NotifyReason.RESOLVED
    assert {decision(sc, fp) for fp in fps} == {(Decision.RESOLVED, None)}
    assert gpu_incident(sc)["open"] is False


@SHAPES
def test_gpus_still_hot_when_the_node_returns_fire_again_without_a_resolve_or_a_new_message(shape) -> None:  # type: ignore[no-untyped-def]
    sc = Scenario()
    hot, down = shape(range(2))
    hot_and_told(sc, hot)
    for labels in hot:
        sc.resolve(labels)
    sc.run(70 * S)
    sc.fire(down)
    sc.run(5 * MIN)
    sc.resolve(down)
    sc.run(30 * S)
    for labels in hot:  # still above 85C: Prometheus fires them again after `for`
        sc.fire(labels)
    sc.run(20 * MIN)
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST]  # its repeat (30m for warnings) is not due yet
    assert gpu_incident(sc)["open"] is True


def test_kubernetes_node_not_ready_seventeen_minutes_later_still_finds_the_gpus_stale() -> None:
    """No fast node-down alert: the GPUs resolved together, so their resolve is held for `hold` (20m), and
    KubeNodeNotReady (NotReady after a 40s grace period, then for: 15m) comes within it."""
    sc = Scenario()
    hot, _ = kube(range(3))
    fps = hot_and_told(sc, hot)
    for labels in hot:
        sc.resolve(labels)
    sc.run(5 * MIN)
    assert {decision(sc, fp) for fp in fps} == {(Decision.STALE, Reason.TOGETHER.value)}
    sc.run(12 * MIN)
    sc.fire(kube_node_not_ready_labels(NODE))
    sc.run(20 * MIN)
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST]
    assert {decision(sc, fp) for fp in fps} == {(Decision.STALE, Reason.SOURCE_DOWN.value)}


@SHAPES
def test_gpus_resolving_together_with_no_node_down_are_told_resolved_after_hold(shape) -> None:  # type: ignore[no-untyped-def]
    sc = Scenario()
    hot, _ = shape(range(2))
    hot_and_told(sc, hot)
    for labels in hot:
        sc.resolve(labels)
    sc.run(19 * MIN)
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST]
    sc.run(2 * MIN)
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST, NotifyReason.RESOLVED]


@SHAPES
def test_another_alert_of_the_same_exporter_firing_says_the_data_is_back(shape) -> None:  # type: ignore[no-untyped-def]
    sc = Scenario()
    hot, _ = shape(range(2))
    fps = hot_and_told(sc, hot)
    for labels in hot:
        sc.resolve(labels)
    sc.run(5 * MIN)
    assert {decision(sc, fp) for fp in fps} == {(Decision.STALE, Reason.TOGETHER.value)}
    xid = {**hot[0], "alertname": "GPUXidError", "severity": "critical", "gpu": "5"}
    sc.fire(xid)  # dcgm-exporter of that node answers: the temperatures really went down
    sc.run(MIN)
    assert {decision(sc, fp) for fp in fps} == {(Decision.RESOLVED, None)}
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST, NotifyReason.RESOLVED]


@SHAPES
def test_one_gpu_resolving_alone_is_told_after_the_window(shape) -> None:  # type: ignore[no-untyped-def]
    sc = Scenario()
    hot, _ = shape(range(1))
    (fp,) = hot_and_told(sc, hot)
    sc.run(5 * MIN)  # past the group interval (5m) of the first message: a resolve could go at once
    sc.resolve(hot[0])
    sc.run(MIN)
    assert decision(sc, fp) == (Decision.RESOLVING, Reason.RESOLVING.value)
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST]
    assert gpu_incident(sc)["resolving"] == 1
    sc.run(MIN + 10 * S)
    assert decision(sc, fp) == (Decision.RESOLVED, None)
    assert told(sc, "GPUHighTemp") == [NotifyReason.FIRST, NotifyReason.RESOLVED]


def test_a_node_down_that_fired_before_the_gpu_alert_is_not_about_its_data() -> None:
    """node-exporter broken since before: the GPU alert fired and resolved with dcgm data flowing."""
    sc = Scenario()
    hot, down = metal(range(1))
    sc.fire(down)
    sc.run(2 * MIN)
    fp = sc.fire(hot[0])  # teaches 10.0.0.7 = gpu-node-07: the NodeDown is its node's from here
    sc.run(2 * MIN)
    sc.resolve(hot[0])
    sc.run(3 * MIN)
    assert decision(sc, fp)[0] == Decision.INHIBITED  # explained by the NodeDown, not stale


def test_stale_decisions_survive_a_restart() -> None:
    """Nothing but the alerts and the clock decides staleness: a new evaluator decides the same."""
    sc = Scenario()
    hot, down = metal(range(2))
    fps = hot_and_told(sc, hot)
    for labels in hot:
        sc.resolve(labels)
    sc.run(70 * S)
    sc.fire(down)
    sc.run(MIN)
    before = {fp: sc.last.decisions[fp] for fp in fps}  # type: ignore[union-attr]
    sent = len(sc.messages())
    sc.restart()
    sc.run(5 * MIN)
    assert {fp: sc.last.decisions[fp] for fp in fps} == before  # type: ignore[union-attr]
    assert len(sc.messages()) == sent  # nothing told again, no resolve


# The rule alone, as a table: (what the node's other alerts did, what A is at `now`).
R = T0 + 10 * MIN  # A's resolve
RULE = StaleRule(
    enabled=True,
    source_down=tuple(parse_matchers('alertname="NodeDown"')),
    window=2 * MIN,
    together=2,
    hold=20 * MIN,
    settle=2 * MIN,
)


def _alert(fp: str, firing: bool, starts: datetime, ends: datetime | None = None) -> LiveAlert:
    return LiveAlert(fp, {}, firing, starts, starts, ends)


DCGM = {"job": "dcgm", "instance": "10.0.0.7:9400", "alertname": "GPUHighTemp"}
NODEDOWN = {"job": "node", "instance": "10.0.0.7:9100", "alertname": "NodeDown"}


@pytest.mark.parametrize(
    ("others", "now", "expected"),
    [
        ([], R + MIN, Reason.RESOLVING),
        ([], R + 2 * MIN, None),
        ([(_alert("b", False, T0, R + 30 * S), DCGM)], R + 5 * MIN, Reason.TOGETHER),
        ([(_alert("b", False, T0, R + 3 * MIN), DCGM)], R + 5 * MIN, None),  # not together: 3m apart
        ([(_alert("b", False, T0, R), DCGM)], R + 19 * MIN, Reason.TOGETHER),
        ([(_alert("b", False, T0, R), DCGM)], R + 20 * MIN, None),  # held for `hold`, no more
        ([(_alert("d", True, R + MIN), NODEDOWN)], R + 60 * MIN, Reason.SOURCE_DOWN),
        ([(_alert("d", True, R + 3 * MIN), NODEDOWN)], R + 5 * MIN, None),  # after the window, alone
        ([(_alert("d", True, T0 - MIN), NODEDOWN)], R + MIN, Reason.RESOLVING),  # down before A fired
        ([(_alert("d", False, R + MIN, R + 9 * MIN), NODEDOWN)], R + 10 * MIN, Reason.RETURNING),
        ([(_alert("d", False, R + MIN, R + 9 * MIN), NODEDOWN)], R + 11 * MIN, None),
        ([(_alert("b", False, T0, R), DCGM), (_alert("c", True, R + MIN), DCGM)], R + 5 * MIN, None),
    ],
)
def test_the_rule(others: list[tuple[LiveAlert, dict[str, str]]], now: datetime, expected: Reason | None) -> None:
    a = _alert("a", False, T0, R)
    reading = RULE.reading(DCGM)
    neighbours = [(a, reading), *((o, RULE.reading(labels)) for o, labels in others)]
    got = staleness(RULE, a, reading, [(o, r) for o, r in neighbours if r is not None], now)
    assert (got.reason if got is not None else None) == expected


@pytest.mark.parametrize(
    ("labels", "source"),
    [
        ({"job": "dcgm", "instance": "10.0.0.7:9400"}, ("dcgm", "9400")),
        ({"job": "nvidia-dcgm-exporter", "instance": "10.244.7.23:9400"}, ("nvidia-dcgm-exporter", "9400")),
        ({"job": "node", "instance": "[fd00::7]:9100"}, ("node", "9100")),
        ({"job": "node", "instance": "gpu-node-07"}, ("node", "")),
    ],
)
def test_an_alerts_source_is_its_job_and_port(labels: dict[str, str], source: tuple[str, str]) -> None:
    assert source_of(labels) == source


def test_alerts_of_one_exporter_share_one_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine keeps a reading per live alert: equal ones are one object, whatever GPU or node."""
    gpus = [dcgm_labels(f"10.0.0.{n}", f"gpu-node-{n:02d}", g) for n in (7, 8) for g in (0, 5)]
    readings = [RULE.reading(labels) for labels in gpus]
    assert readings[0] is not None
    assert readings[0].source == (gpus[0]["job"], "9400")
    assert all(r is readings[0] for r in readings)
    down = RULE.reading(node_exporter_down_labels("10.0.0.7"))
    assert down is not None
    assert down.source_down
    assert down is not readings[0]
    assert down is RULE.reading(node_exporter_down_labels("10.0.0.8"))
    # Bounded: past the limit it starts again, and reads the same values.
    monkeypatch.setattr(stale, "_READINGS_MAX", 2)
    other = RULE.reading({**gpus[0], "job": "gpu-metrics"})
    assert other is not None
    assert other.source == ("gpu-metrics", "9400")
    assert len(stale._READINGS) <= 2
    assert RULE.reading(gpus[1]) == readings[0]


def test_a_rack_that_dies_under_a_gpu_storm_tells_one_node_down_storm_and_no_resolve() -> None:
    """Six hot nodes (a GPUHighTemp storm, told once) lose power together: the GPU storm is not told
    resolved; the one message is the NodeDown storm."""
    sc = Scenario()
    hot = [
        dcgm_labels(f"10.0.0.{n}", f"gpu-node-{n:02d}", g, alertname="GPUHighTemp", severity="warning", region="north")
        for n in range(6)
        for g in (0, 1)
    ]
    for labels in hot:
        sc.fire(labels)
    sc.run(2 * MIN)
    assert [(m.incident, m.reason) for m in sc.messages()] == [
        ('gpu-by-node/cluster{alertname="GPUHighTemp",region="north"}', NotifyReason.FIRST)
    ]
    before = len(sc.messages())
    for labels in hot:
        sc.resolve(labels)
    sc.run(40 * S)
    for n in range(6):
        sc.fire(node_exporter_down_labels(f"10.0.0.{n}", region="north"))
    sc.run(9 * MIN)
    assert [(m.incident, m.reason) for m in sc.messages()[before:]] == [
        ('node/cluster{alertname="NodeDown",region="north"}', NotifyReason.FIRST)
    ]
    # power back, GPUs cool: NodeDown's storm resolves, then (settle later) the GPU storm's
    for n in range(6):
        sc.resolve(node_exporter_down_labels(f"10.0.0.{n}", region="north"))
    sc.run(6 * MIN)
    assert [(m.incident, m.reason) for m in sc.messages()[before + 1 :]] == [
        ('node/cluster{alertname="NodeDown",region="north"}', NotifyReason.RESOLVED),
        ('gpu-by-node/cluster{alertname="GPUHighTemp",region="north"}', NotifyReason.RESOLVED),
    ]
