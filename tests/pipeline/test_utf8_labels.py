"""Prometheus 3 / OpenTelemetry label names (`service.name`, `k8s.pod.name`) and alerts without an
`alertname` through routing, inhibition, silences and aggregation, as Alertmanager treats them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import Decision
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.scenario import T0, Scenario

MIN = timedelta(minutes=1)

# Matchers written as an Alertmanager 0.28+ user writes them for OTLP-ingested metrics.
RULES = """
global:
  node_labels: [k8s.node.name, instance]
inhibit_rules:
  - name: service-down-mutes-its-warnings
    source_matchers: ['alertname="ServiceDown"']
    target_matchers: ['severity="warning"']
    equal: [service.name, k8s.namespace.name]
    hold_down: 0s
  - name: anything-mutes-info-of-its-pod     # no source side: any alert of the same pod
    target_matchers: ['{severity="info"}']
    equal: ['k8s.pod.name']
    hold_down: 0s
route:
  receiver: default
  routes:
    - receiver: checkout
      matchers: ['"service.name"="checkout"', 'severity=~"critical|warning"']
    - receiver: prod
      matchers: ['{"k8s.namespace.name"=~"prod-.*"}']
    - receiver: batch
      matchers: ['job="backup"']
receivers:
  - name: default
  - name: checkout
  - name: prod
  - name: batch
"""


def otel(alertname: str | None, service: str, pod: str, severity: str, namespace: str = "shop") -> dict[str, str]:
    """An alert from a Prometheus 3 rule over OTLP metrics (UTF-8 names kept, no underscore escaping)."""
    labels = {
        "service.name": service,
        "service.namespace": "shop",
        "k8s.namespace.name": namespace,
        "k8s.pod.name": pod,
        "k8s.node.name": f"node-{pod}",  # one node each: the default aggregation is per alertname and node
        "deployment.environment": "production",
        "severity": severity,
    }
    if alertname is not None:
        labels["alertname"] = alertname
    return labels


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    (tmp_path / "rules.yml").write_text(RULES)
    return Scenario(pipeline=compile_rules(load_ruleset(tmp_path / "rules.yml", {})))


def receivers_of(sc: Scenario, fp: str) -> tuple[str, ...]:
    assert sc.last is not None
    return sc.last.decisions[fp].routed_to


def test_routes_on_utf8_label_names(sc: Scenario) -> None:
    checkout = sc.fire(otel("HighLatency", "checkout", "checkout-7d9f8b6c5-x2x4q", "warning"))
    prod = sc.fire(otel("HighLatency", "cart", "cart-0", "warning", namespace="prod-eu"))
    other = sc.fire(otel("HighLatency", "cart", "cart-1", "warning", namespace="staging"))
    sc.run(2 * MIN)
    assert receivers_of(sc, checkout) == ("checkout",)
    assert receivers_of(sc, prod) == ("prod",)
    assert receivers_of(sc, other) == ("default",)


def test_inhibition_equal_on_utf8_names(sc: Scenario) -> None:
    down = sc.fire(otel("ServiceDown", "checkout", "checkout-0", "critical"))
    same = sc.fire(otel("HighLatency", "checkout", "checkout-1", "warning"))
    other_service = sc.fire(otel("HighLatency", "cart", "cart-0", "warning"))
    sc.run(2 * MIN)
    assert sc.last is not None
    decisions = sc.last.decisions
    assert decisions[same].decision is Decision.INHIBITED
    assert decisions[same].inhibited_by == down
    assert decisions[same].inhibit_rule == "service-down-mutes-its-warnings"
    assert decisions[other_service].decision is not Decision.INHIBITED
    assert decisions[down].decision is not Decision.INHIBITED


def test_inhibit_rule_without_source_matchers_takes_any_source(sc: Scenario) -> None:
    info = sc.fire(otel("PodRestarting", "checkout", "checkout-0", "info"))
    sc.run(MIN)
    assert sc.last is not None
    assert sc.last.decisions[info].decision is not Decision.INHIBITED  # no other alert of the pod
    crash = sc.fire(otel(None, "checkout", "checkout-0", "critical"))  # any alert, even without a name
    sc.run(MIN)
    assert sc.last.decisions[info].decision is Decision.INHIBITED
    assert sc.last.decisions[info].inhibited_by == crash
    lone = sc.fire(otel("PodRestarting", "checkout", "checkout-9", "info"))
    sc.run(MIN)
    assert sc.last.decisions[lone].decision is not Decision.INHIBITED


def test_silence_on_utf8_names(sc: Scenario) -> None:
    silence = Silence.parse("ab12", ['"k8s.pod.name"=~"checkout-.*"', 'service.name="checkout"'], T0, T0 + 60 * MIN)
    sc.silences.append(silence)
    muted = sc.fire(otel("HighLatency", "checkout", "checkout-1", "warning"))
    kept = sc.fire(otel("HighLatency", "cart", "cart-1", "warning"))
    sc.run(2 * MIN)
    assert sc.last is not None
    assert sc.last.decisions[muted].decision is Decision.SILENCED
    assert sc.last.decisions[muted].silenced_by == "ab12"
    assert sc.last.decisions[kept].decision is not Decision.SILENCED


def test_alerts_without_alertname_are_their_own_incidents_and_are_delivered(sc: Scenario) -> None:
    """Alertmanager forwards them (any label set with one label is an alert); two unrelated ones on
    one node are not merged into one incident "without a name"."""
    backup = sc.fire({"job": "backup", "instance": "db-1:9100", "severity": "warning"})
    disk = sc.fire({"job": "disk-check", "instance": "db-1:9100", "severity": "warning"})
    sc.run(2 * MIN)
    assert sc.last is not None
    keys = {sc.last.decisions[fp].incident for fp in (backup, disk)}
    assert len(keys) == 2
    assert all(key and 'alertname="{' in key for key in keys)
    assert receivers_of(sc, backup) == ("batch",)
    messages = {m.message.headline for m in sc.messages()}
    assert messages == {
        'db-1: {instance="db-1:9100", job="backup", severity="warning"}',
        'db-1: {instance="db-1:9100", job="disk-check", severity="warning"}',
    }
