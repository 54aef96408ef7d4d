"""Label shapes through the cluster in a box: regional routing of bare-metal nodes with a `region` target label,
and the Kubernetes shape of kube-prometheus-stack + NVIDIA GPU Operator with and without the docs' `node`
relabelling; on nodes of that shape, a GPU whose second Xid 48 in 11 days makes it an RMA candidate (lemon.py),
and a GPU's Xid 79 with the Xid 45 it causes on the node's seven other GPUs, told as one page (follow_on.py).
tests/cluster/labels.py runs the timeline once for the module, about a minute of wall clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from cluster.dcgm import MODEL
from cluster.follow_on import FOLLOW_ON, OTHERS, ROOT_GPU
from cluster.labels import (
    NORTH,
    POD,
    POD_IP,
    RELABELLED,
    SOUTH,
    UNRELABELLED,
    XID48_GPU,
    Labels,
    labels_box,
    name,
    run_labels,
)
from cluster.lemon import DAYS, LEMON, LEMON_GPU, MOVED_DAYS, MOVED_FROM, MOVED_TO, SPARE, Lemon, rule_labels
from cluster.scenarios import MARKS, Boxes, Scenario
from cluster.told import about, clock

pytestmark = MARKS


SCENARIO = Scenario(box=labels_box, run=run_labels)


@pytest.fixture(scope="module")
def labels(boxes: Boxes) -> Iterator[Labels]:
    with boxes.outcome(SCENARIO) as outcome:
        yield outcome


def test_a_north_node_pages_the_north_and_not_the_south(labels: Labels) -> None:
    told, store = labels.told, labels.store
    for index, region, other in ((NORTH, "north", "south"), (SOUTH, "south", "north")):
        node = name(index)
        incident = store.incident(alertname="GPUXidError", node=node)
        assert incident["labels"]["region"] == region
        assert store.delivered(incident["id"]) == {f"dingtalk-{region}": 1, "wecom-core": 1, "sms-oncall": 1}
        assert {r["receiver"] for r in store.notifications if r["incident_id"] == incident["id"]} == {
            f"critical-{region}"
        }
        # the region's robot and phone got it, the other region's and the region-less ones did not
        (robot,) = about(told[f"dingtalk-{region}"], "GPUXidError")
        assert f"{node}：1/8 块 GPU GPUXidError" in robot  # zh-CN, as the shipped rules say
        assert f"{region} 区" in robot  # "region %(value)s" in zh-CN
        assert not about(told[f"dingtalk-{other}"], node)
        assert not about(told["dingtalk-core"], node)
        assert [t for t in told[f"sms-{region}"]] == [
            f'{{"severity": "严重", "node": "{node}", "alert": "GPUXidError", "gpus": "1/8"}}'
        ]  # the severity in the receiver's language (zh-CN), as the robots say it
        assert not about(told[f"sms-{other}"], node)
        assert not about(told["sms-oncall"], node)
        assert len(about(told["wecom-core"], f"{node}：1/8 块 GPU GPUXidError")) == 1
        (alert,) = store.of("GPUXidError", node)
        assert (alert["labels"]["gpu"], alert["labels"]["xid"]) == (str(XID48_GPU[index]), "48")


def test_kubernetes_job_names_fire_the_node_rules(labels: Labels) -> None:
    """kube-prometheus-stack's `node-exporter` and the GPU Operator's `nvidia-dcgm-exporter` jobs."""
    store = labels.store
    for index in (RELABELLED, UNRELABELLED):
        (down,) = store.of("NodeDown", name(index))
        assert down["labels"]["job"] == "node-exporter"
        assert down["labels"]["instance"] == f"10.0.0.{index}:9100"  # the node's IP: hostNetwork
        assert down["labels"]["nodename"] == name(index)
        incident = store.incident(alertname="NodeDown", node=name(index))
        assert store.delivered(incident["id"]) == {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
    dcgm_down = [a for a in store.alerts if a["alertname"] == "DCGMExporterDown"]
    assert sorted(a["labels"]["instance"] for a in dcgm_down) == sorted(f"{POD_IP[i]}:9400" for i in POD_IP)
    assert {a["labels"]["job"] for a in dcgm_down} == {"nvidia-dcgm-exporter"}


def test_relabelled_node_meets_its_gpu_alerts(labels: Labels) -> None:
    """(a) `node` relabelled from `__meta_kubernetes_pod_node_name` on both exporters: the pod-named,
    pod-IP-scraped dcgm alerts and node-exporter's NodeDown are one node, so the GPUs are muted."""
    store, told, node = labels.store, labels.told, name(RELABELLED)
    xid79 = store.of("GPUFallenOffBus", node)
    assert len(xid79) == 8
    assert {a["labels"]["Hostname"] for a in xid79} == {POD[RELABELLED]}
    assert {a["labels"]["instance"] for a in xid79} == {f"{POD_IP[RELABELLED]}:9400"}
    (down,) = store.of("NodeDown", node)
    (dcgm_down,) = store.of("DCGMExporterDown", node)
    # resolved as the node's series vanished: stale, their node's source-down alerts firing (rules/stale.yml)
    assert {a["decision"] for a in xid79} == {"stale"}
    assert {a["decision_detail"]["stale_reason"] for a in xid79} == {"source_down"}
    assert {a["decision_detail"]["stale_source"] for a in xid79} <= {down["fingerprint"], dcgm_down["fingerprint"]}
    assert dcgm_down["decision"] == "inhibited"
    assert dcgm_down["decision_detail"]["inhibited_by"] == down["fingerprint"]
    # one message per critical channel, the NodeDown; no word of the pod or its IP anywhere
    everything = [t for texts in told.values() for t in texts]
    assert len(about(everything, node)) == 3
    assert all("NodeDown" in t for t in about(everything, node))
    for channel in ("dingtalk-core", "wecom-core"):  # since Prometheus' startsAt, in Beijing time
        (text,) = about(told[channel], node)
        assert clock([down]) in text, text
    assert not about(everything, POD[RELABELLED])
    assert not about(everything, POD_IP[RELABELLED])


def test_unrelabelled_node_is_three_names_as_the_readme_says(labels: Labels) -> None:
    """(b) No relabelling, older GPU Operator chart (`Hostname` = the dcgm-exporter pod's name): the docs'
    node-identity.md says nothing in the labels ties the pod to its node and an alert with a `pod` label teaches no
    alias. So the GPU alerts are the pod, DCGMExporterDown the pod IP, NodeDown node-exporter's nodename: the
    GPU alerts are not muted by the NodeDown, and DCGMExporterDown is told, named by the pod IP."""
    store, told, node = labels.store, labels.told, name(UNRELABELLED)
    pod, pod_ip = POD[UNRELABELLED], POD_IP[UNRELABELLED]
    xid79 = store.of("GPUFallenOffBus", pod)
    assert len(xid79) == 8
    # resolved by staleness inside their hold-down, never muted: nothing told about them either way. No
    # source-down alert names their node (the pod): their resolve waits `window` (resolving), then, all eight
    # of one exporter having resolved together, `hold` (stale, together), rules/stale.yml
    assert {a["decision"] for a in xid79} <= {"resolving", "stale"}
    assert {a["decision_detail"]["stale_reason"] for a in xid79} <= {"resolving", "together"}
    incident = store.incident(alertname="GPUFallenOffBus", node=pod)
    assert incident["status"] == "firing"
    assert not [r for r in store.notifications if r["incident_id"] == incident["id"]]
    told_decisions = ("notify", "throttled")  # told, then "already told" until its repeat
    (down,) = store.of("NodeDown", node)
    assert down["decision"] in told_decisions
    (dcgm_down,) = store.of("DCGMExporterDown", pod_ip)
    assert dcgm_down["decision"] in told_decisions
    incident = store.incident(alertname="DCGMExporterDown", node=pod_ip)
    assert store.delivered(incident["id"]) == {"dingtalk-ops": 1, "email-ops": 1}
    (ops,) = told["dingtalk-ops"]
    assert f"{pod_ip}：DCGMExporterDown" in ops
    assert clock([dcgm_down]) in ops, ops
    (mail,) = told["email-ops"]
    assert mail.startswith(f"[警告] {pod_ip}：DCGMExporterDown")
    # no address was learned from the Kubernetes alerts (every one carries a `pod`)
    learned = {a["address"] for a in store.addresses}
    assert learned == {"10.0.0.1", "10.0.0.2"}  # the bare-metal nodes' GPU alerts taught theirs


def test_the_vendors_refused_nothing(labels: Labels) -> None:
    assert labels.box.vendors.refused() == []
    assert {row["status"] for row in labels.store.notifications} == {"sent"}


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value)


def test_a_second_xid_48_in_11_days_pages_the_gpu_as_an_rma_candidate(labels: Labels) -> None:
    """The first Xid 48 pushed 11 days back is the very alert Prometheus makes for the GPU (same labels, so
    one fingerprint); the page of the second says, in zh-CN, the GPU's slot, UUID prefix and evidence."""
    store, told, lemon, node = labels.store, labels.told, labels.lemon, name(LEMON)
    assert lemon.fired == lemon.labels  # Prometheus' own alert: the series' labels + the rule's
    assert {k: lemon.labels[k] for k in rule_labels()} == rule_labels()
    assert (lemon.labels["UUID"], lemon.labels["gpu"], lemon.labels["node"]) == (lemon.uuid, str(LEMON_GPU), node)
    incident = store.incident(alertname="GPUXidError", node=node)
    assert store.delivered(incident["id"]) == {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
    assert lemon.alert is not None
    _page(labels, lemon, node, LEMON_GPU, DAYS)  # its clock: Prometheus' startsAt, not 11 days back
    everything = [t for texts in told.values() for t in texts]
    # the first Xid 48 (and the moved GPU's, also here) resolved inside its hold-down: never told
    assert len(about(everything, node)) == 3


def test_the_gpu_history_keeps_both_xid_48_by_uuid_the_first_at_its_past_start(labels: Labels) -> None:
    lemon, gpu, alert = labels.lemon, labels.lemon.gpu, labels.lemon.alert
    assert gpu is not None
    assert alert is not None
    assert lemon.episodes is not None
    assert (gpu["uuid"], gpu["node"], gpu["gpu"], gpu["model"]) == (lemon.uuid, name(LEMON), str(LEMON_GPU), MODEL)
    events = [(e["xid"], e["alertname"], _at(e["at"])) for e in gpu["events"]]
    assert events == [(48, "GPUXidError", lemon.first_at), (48, "GPUXidError", _at(alert["starts_at"]))]
    assert (events[1][2] - events[0][2]).days == DAYS
    assert gpu["rma_candidate"] is True
    assert gpu["rma_rule"] == "dbe-repeated"
    assert gpu["reason"] == f"Xid 48 twice in {DAYS} days (rule dbe-repeated)"
    assert [e["at"] for e in gpu["evidence"]] == [e["at"] for e in gpu["events"]]
    # alertrouter's alert: the pushed episode, resolved, then Prometheus'
    first, second = sorted(lemon.episodes, key=lambda e: _at(e["starts_at"]))
    assert (_at(first["starts_at"]), first["ends_at"] is not None) == (lemon.first_at, True)
    assert (_at(second["starts_at"]), second["ends_at"]) == (_at(alert["starts_at"]), None)
    assert alert["status"] == "firing"


def _page(labels: Labels, lemon: Lemon, node: str, slot: int, days: int) -> None:
    """The page about `node` in every channel of oncall-core: the RMA line in DingTalk and WeCom."""
    line = f"RMA 候选：GPU {slot}（{lemon.uuid[:12]}…）：{days} 天内 Xid 48 共 2 次"
    assert lemon.alert is not None
    for channel in ("dingtalk-core", "wecom-core"):
        (page,) = about(labels.told[channel], node)
        assert f"{node}：1/8 块 GPU GPUXidError" in page, page
        assert line in page, page
        assert clock([lemon.alert]) in page, page
    assert about(labels.told["sms-oncall"], node) == [
        f'{{"severity": "严重", "node": "{node}", "alert": "GPUXidError", "gpus": "1/8"}}'
    ]


def test_a_gpu_moved_to_another_node_keeps_its_history(labels: Labels) -> None:
    """Its first Xid 48 at gpu-node-05 GPU 6, the second at gpu-node-06 GPU 1 after `move_gpu`: one UUID,
    one history, both places; the page of gpu-node-06 counts the Xid 48 it had at gpu-node-05."""
    moved, store = labels.moved, labels.store
    gpu, alert = moved.gpu, moved.alert
    assert gpu is not None
    assert alert is not None
    (node, slot), (first_node, first_slot) = MOVED_TO, MOVED_FROM
    assert moved.fired is not None
    assert moved.fired["UUID"] == moved.labels["UUID"] == moved.uuid
    assert (moved.fired["node"], moved.fired["gpu"]) == (name(node), str(slot))
    assert (moved.labels["node"], moved.labels["gpu"]) == (name(first_node), str(first_slot))
    incident = store.incident(alertname="GPUXidError", node=name(SPARE))
    assert store.delivered(incident["id"]) == {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
    _page(labels, moved, name(node), slot, MOVED_DAYS)
    assert (gpu["uuid"], gpu["node"], gpu["gpu"], gpu["conflict"]) == (moved.uuid, name(node), str(slot), False)
    assert [(p["node"], p["gpu"], p["events"]) for p in gpu["places"]] == [
        (name(first_node), str(first_slot), 1),
        (name(node), str(slot), 1),
    ]
    events = [(e["xid"], _at(e["at"])) for e in gpu["events"]]
    assert events == [(48, moved.first_at), (48, _at(alert["starts_at"]))]
    assert gpu["rma_candidate"] is True
    assert gpu["reason"] == f"Xid 48 twice in {MOVED_DAYS} days (rule dbe-repeated)"


# The root's line of the one page, in the shipped zh-CN (alertrouter/gpu/triage_words.py)
ROOT_LINE = f"GPU {ROOT_GPU}：Xid 79（GPU 已从总线掉线）— 重启节点；另有 7 块 GPU 随之报告 Xid 45（连带故障）"


def test_xid_79_then_xid_45_on_the_others_is_one_page_of_the_root(labels: Labels) -> None:
    """GPU 3 of gpu-node-07 fell off the bus, then its seven other GPUs reported Xid 45: one page on each
    channel of oncall-core, the GPUFallenOffBus, whose root line counts the seven; none for the 45s."""
    store, told, fault, node = labels.store, labels.told, labels.fault, name(FOLLOW_ON)
    root = fault.root
    assert (root["labels"]["gpu"], root["labels"]["xid"], root["status"]) == (str(ROOT_GPU), "79", "firing")
    for channel in ("dingtalk-core", "wecom-core"):
        (page,) = about(told[channel], node)
        assert f"{node}：1/8 块 GPU GPUFallenOffBus" in page, page
        assert ROOT_LINE in page, page
        assert clock([root]) in page, page  # since Prometheus' startsAt, in Beijing time
        assert "GPUXidError" not in page, page
    assert about(told["sms-oncall"], node) == [
        f'{{"severity": "严重", "node": "{node}", "alert": "GPUFallenOffBus", "gpus": "1/8"}}'
    ]
    everything = [t for texts in told.values() for t in texts]
    assert len(about(everything, node)) == 3
    incident = store.incident(alertname="GPUFallenOffBus", node=node)
    assert store.delivered(incident["id"]) == {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
    # the 45s' own incident, if one was opened, told nothing
    follow_on_incidents = [i["id"] for i in fault.incidents if i["labels"].get("alertname") == "GPUXidError"]
    assert not [r for r in store.notifications if r["incident_id"] in follow_on_incidents]


def test_the_seven_xid_45_read_as_inhibited_by_the_root(labels: Labels) -> None:
    """GET /api/v1/alerts: each Xid 45 is muted by rule `gpu-follow-on`, the 79's fingerprint as source."""
    fault = labels.fault
    assert [(a["labels"]["gpu"], a["labels"]["xid"]) for a in fault.follow_ons] == [(str(g), "45") for g in OTHERS]
    for alert in fault.follow_ons:
        assert alert["status"] == "firing"
        assert alert["decision"] == "inhibited", alert
        assert alert["decision_detail"] == {"inhibited_by": fault.root["fingerprint"], "inhibit_rule": "gpu-follow-on"}
