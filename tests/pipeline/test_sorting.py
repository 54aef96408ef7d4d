"""`sort_incident`: one node incident's alerts sorted into held, muted (inhibited, silenced) and
counting, on the shipped rules (rules/inhibit.yml: a NodeDown mutes its node's GPU alerts, which
wait 30 s for one), with the alerts as the exporters send them: dcgm-exporter's scraped by IP with
the node only in `Hostname`, node-exporter's `up == 0` with the IP alone."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.fingerprints import fingerprint
from alertrouter.pipeline.inhibit import Inhibitor
from alertrouter.pipeline.silence import Silence, Silencer
from alertrouter.pipeline.sorting import sort_incident
from alertrouter.pipeline.types import AlertDecision, Decision, LiveAlert
from alertrouter.pipeline.views import AlertViews
from support.scenario import T0, dcgm_labels, node_exporter_down_labels, shipped_pipeline

S = timedelta(seconds=1)
PIPELINE = shipped_pipeline()
IP, HOST = "10.0.3.7", "gpu-node-07"
HOT = [dcgm_labels(IP, HOST, g, alertname="GPUHighTemp") for g in range(8)]
FPS = {fingerprint(labels) for labels in HOT}
NODE_DOWN = node_exporter_down_labels(IP)


def firing(labels: dict[str, str], at: object = T0) -> LiveAlert:
    return LiveAlert(fingerprint(labels), labels, True, at, at)  # type: ignore[arg-type]


def viewed(*alerts: LiveAlert) -> tuple[AlertViews, Inhibitor, str]:
    """The views and inhibitor of these alerts, the node-exporter's IP known as the node's name (as
    the alias book learns it from dcgm-exporter's alerts); and the GPU alerts' incident key."""
    inhibitor = Inhibitor(PIPELINE.inhibit_rules)
    views = AlertViews(PIPELINE.aggregation, PIPELINE.nodes, inhibitor, courtesy=lambda: None)
    views.learn({IP: HOST})
    views.sync(alerts, [], set(), {})
    (key,) = {views.placements[fp].key for fp in FPS}
    return views, inhibitor, key


def test_gpu_alerts_wait_their_hold_down_then_count() -> None:
    views, inhibitor, key = viewed(*map(firing, HOT))
    held = sort_incident(key, views.members[key], views, PIPELINE, inhibitor, Silencer(), T0 + 10 * S)
    assert {v.fingerprint for v in held.group.held} == FPS
    assert not held.group.eligible
    assert {fp: (d.decision, d.held_until) for fp, d in held.decisions.items()} == {
        fp: (Decision.HELD, T0 + 30 * S) for fp in FPS
    }
    assert held.hold_wake == T0 + 30 * S
    counting = sort_incident(key, views.members[key], views, PIPELINE, inhibitor, Silencer(), T0 + 30 * S)
    assert {v.fingerprint for v in counting.group.eligible} == FPS
    assert counting.decisions == {}  # those that count are decided when the incident is told
    assert counting.summary.firing == FPS
    assert counting.group.firing == 8


def test_a_node_down_named_by_its_ip_mutes_the_gpu_alerts_named_by_hostname() -> None:
    views, inhibitor, key = viewed(*map(firing, HOT), firing(NODE_DOWN, T0 + 5 * S))
    node = sort_incident(key, views.members[key], views, PIPELINE, inhibitor, Silencer(), T0 + 31 * S)
    assert {fp: (d.decision, d.inhibited_by, d.inhibit_rule) for fp, d in node.decisions.items()} == {
        fp: (Decision.INHIBITED, fingerprint(NODE_DOWN), "node-down-mutes-node") for fp in FPS
    }
    assert (node.group.muted, node.group.firing, node.group.eligible) == (8, 8, [])
    assert node.summary.firing == frozenset()  # nothing of it counts


def test_a_silence_mutes_what_no_inhibition_does() -> None:
    views, inhibitor, key = viewed(*map(firing, HOT))
    silence = Silence.parse("maint-07", [f'Hostname="{HOST}"', 'gpu=~"[0-3]"'], T0, T0 + 3600 * S)
    node = sort_incident(key, views.members[key], views, PIPELINE, inhibitor, Silencer([silence]), T0 + 31 * S)
    silenced = {
        fp for fp, d in node.decisions.items() if d.decision is Decision.SILENCED and d.silenced_by == "maint-07"
    }
    assert silenced == {fingerprint(labels) for labels in HOT[:4]}
    assert {v.fingerprint for v in node.group.eligible} == FPS - silenced
    assert (node.group.muted, node.group.silenced) == (4, 4)


def test_a_wake_up_alone_keeps_the_mutes_of_the_last_sort_but_not_a_stale_decision() -> None:
    views, inhibitor, key = viewed(*map(firing, HOT))  # no NodeDown held now
    labels = {fingerprint(labels): labels for labels in HOT}
    first, second, *rest = sorted(FPS)
    inhibited = AlertDecision(
        Decision.INHIBITED, key, inhibited_by="0123456789abcdef", inhibit_rule="node-down-mutes-node"
    )
    # `second` was stale then: no mute was looked for, so one is now (a silence of its GPU).
    kept = {first: inhibited, second: AlertDecision(Decision.STALE, key, stale_reason="node_down")}
    silence = Silence.parse("gpu", [f'gpu="{labels[second]["gpu"]}"'], T0, T0 + 3600 * S)
    node = sort_incident(
        key, views.members[key], views, PIPELINE, inhibitor, Silencer([silence]), T0 + 31 * S, kept=kept
    )
    assert node.decisions[first] is inhibited
    assert node.decisions[second].decision is Decision.SILENCED
    assert {v.fingerprint for v in node.group.eligible} == set(rest)
