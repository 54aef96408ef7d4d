"""Which alerts of a payload are heartbeats': `watch.heard` tells most alerts apart by their alertname
alone when every heartbeat names its alert by one; its answer must be the heartbeats' own matching
(`HeartbeatConfig.matches`) for any heartbeats and alerts. And what a never-heard source is told to do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alertrouter.fingerprints import fingerprint
from alertrouter.liveness.watch import heard, how_to_be_heard
from alertrouter.model import AlertStatus
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.transitions import IncomingAlert
from support.scenario import T0

MATCHERS = [
    ['alertname="Watchdog"'],
    ['alertname="Watchdog"', 'prometheus="monitoring/north"'],
    ['alertname="DeadMansSwitch"'],
    ['alertname=~"Watch.*"'],  # by a regex: the alertname alone does not tell
    ['prometheus="monitoring/south"', 'severity="none"'],  # no alertname at all
    [],  # refreshed over HTTP only
]


def _config(i: int) -> HeartbeatConfig:
    return HeartbeatConfig.model_validate({"name": f"source-{i}", "matchers": MATCHERS[i]})


_labels = st.fixed_dictionaries(
    {"alertname": st.sampled_from(["Watchdog", "DeadMansSwitch", "WatchdogX", "GPUHighTemp", "NodeDown"])},
    optional={
        "prometheus": st.sampled_from(["monitoring/north", "monitoring/south"]),
        "severity": st.sampled_from(["none", "critical"]),
    },
)


def _alert(labels: dict[str, str], firing: bool) -> IncomingAlert:
    status = AlertStatus.FIRING if firing else AlertStatus.RESOLVED
    return IncomingAlert(fingerprint(labels), labels, {}, status, T0, None if firing else T0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, len(MATCHERS) - 1), unique=True, max_size=4),
    st.lists(st.tuples(_labels, st.booleans()), max_size=12),
)
def test_the_alerts_told_apart_are_those_the_heartbeats_match(
    which: list[int], payload: list[tuple[dict[str, str], bool]]
) -> None:
    configs = [_config(i) for i in which]
    alerts = [_alert(labels, firing) for labels, firing in payload]
    out = heard(configs, alerts)
    matched = [[c.name for c in configs if c.matches(a.labels)] for a in alerts]
    assert out.others == [a for a, m in zip(alerts, matched, strict=True) if not m]
    assert out.beats == sum(1 for m in matched if m)
    firing = zip(alerts, matched, strict=True)
    assert out.names == {name for a, m in firing if a.status is AlertStatus.FIRING for name in m}


def test_the_shipped_watchdog_is_told_apart_from_a_gpu_alert() -> None:
    config = HeartbeatConfig.model_validate({"name": "prometheus", "matchers": ['alertname="Watchdog"']})
    watchdog = _alert({"alertname": "Watchdog", "severity": "none"}, True)
    gpu = _alert({"alertname": "GPUHighTemp", "instance": "10.0.0.7:9400", "Hostname": "gpu-node-07"}, True)
    out = heard([config], [gpu, watchdog])
    assert (out.names, out.others, out.beats) == (frozenset({"prometheus"}), [gpu], 1)


@pytest.mark.parametrize(
    ("matchers", "said"),
    [
        (
            ['alertname="Watchdog"'],
            'point Alertmanager at /webhook/alertmanager with a firing alert matching alertname="Watchdog" '
            "(rules/deploy/alertmanager.yml, rules/prometheus/watchdog.rules.yml), or POST /api/v1/heartbeats/src "
            "with the webhook's credentials",
        ),
        (
            ['alertname="DeadMansSwitch"'],  # not the shipped rule: its file is not named
            'point Alertmanager at /webhook/alertmanager with a firing alert matching alertname="DeadMansSwitch" '
            "(rules/deploy/alertmanager.yml), or POST /api/v1/heartbeats/src with the webhook's credentials",
        ),
        ([], "POST /api/v1/heartbeats/src with the webhook's credentials"),  # refreshed over HTTP only
    ],
)
def test_how_a_never_heard_source_is_told_to_send(matchers: list[str], said: str) -> None:
    config = HeartbeatConfig.model_validate({"name": "src", "matchers": matchers})
    assert how_to_be_heard(config) == said
