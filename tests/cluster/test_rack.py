"""A rack loses power, through the whole real chain (tests/cluster/box.py): the fleet's exporters, Prometheus
with the shipped alerting rules, an Alertmanager HA pair, two alertrouter replicas on one PostgreSQL database
with the shipped rules/, and the vendors' fakes.

The timeline of rack.py (40 of 48 nodes dark) runs once for the module (about a minute of wall clock), then each
test checks one promise. Expected: one cluster NodeDown message per critical channel (DingTalk core, WeCom, SMS)
listing all 40 nodes, nothing about the dark nodes' GPUs anywhere, the XID 48 delivered on every critical
channel, the hot node in one message per warning channel (DingTalk ops, email).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from cluster.box import DINGTALK_CORE, DINGTALK_OPS, OPS_EMAIL, WECOM_KEY, ClusterBox
from cluster.rack import DARK, DARK_NAMES, HOT, NODES, XID48, Rack, run_rack
from cluster.scenarios import MARKS, Boxes, Scenario
from cluster.told import clock
from support.fakes.dingtalk import MAX_BODY_BYTES as DINGTALK_MAX_BODY
from support.fakes.wecom import MAX_CONTENT_BYTES as WECOM_MAX_CONTENT

pytestmark = MARKS


SCENARIO = Scenario(box=lambda: ClusterBox(nodes=NODES), run=run_rack)


@pytest.fixture(scope="module")
def rack(boxes: Boxes) -> Iterator[Rack]:
    with boxes.outcome(SCENARIO) as outcome:
        yield outcome


def test_one_cluster_node_down_message_per_critical_channel(rack: Rack) -> None:
    cluster = rack.incident(kind="cluster", alertname="NodeDown")
    assert cluster["summary"]["nodes"] == len(DARK)
    assert rack.delivered(cluster["id"]) == {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
    # what the vendors received: one NodeDown message each, naming the storm
    dingtalk = [b for b in rack.box.vendors.dingtalk.messages(DINGTALK_CORE) if "NodeDown" in json.dumps(b)]
    wecom = [b for b in rack.box.vendors.wecom.messages(WECOM_KEY) if "NodeDown" in json.dumps(b)]
    assert len(dingtalk) == 1, dingtalk
    assert len(wecom) == 1, wecom
    card, markdown = dingtalk[0]["actionCard"], wecom[0]["markdown"]["content"]
    # zh-CN, as the shipped rules say: the catalogue's "%(nodes)s 个节点 %(what)s" and "告警风暴：..."
    assert card["title"] == f"[严重] {len(DARK)} 个节点 NodeDown"
    for text in (card["text"], markdown):
        assert f"{len(DARK)} 个节点 NodeDown" in text
        assert f"告警风暴：{len(DARK)} 个节点已合并为一个事件" in text
        # the listing: every dark node once, in order; none left out (the product lists up to 50 members
        # and says "另有 N 个节点" (+N more nodes) beyond what the message size allows: 40 fit both vendors' limits)
        listed = re.findall(r"gpu-node-\d\d(?=：NodeDown)", text)
        assert listed == sorted(DARK_NAMES), text
        assert "另有" not in text
        # since the first node went dark, by Prometheus' startsAt, in Beijing time (the shipped zone)
        assert "开始于" in text
        assert clock([a for a in rack.alerts if a["alertname"] == "NodeDown"]) in text
    assert len(json.dumps(dingtalk[0], ensure_ascii=False).encode()) <= DINGTALK_MAX_BODY
    assert len(markdown.encode()) <= WECOM_MAX_CONTENT["markdown"]
    assert [p for p in rack.sms() if p["alert"] == "NodeDown"] == [
        {"severity": "严重", "node": "-", "alert": "NodeDown", "gpus": "-"}  # critical, in zh-CN
    ]
    # every NodeDown is named by node-exporter's nodename and rolled into the cluster incident
    node_down = [a for a in rack.alerts if a["alertname"] == "NodeDown"]
    assert sorted(a["node"] for a in node_down) == sorted(DARK_NAMES)
    assert {a["labels"]["nodename"] for a in node_down} == DARK_NAMES
    assert {a["decision"] for a in node_down} == {"rolled_up"}


def test_no_message_about_the_dark_nodes_gpus(rack: Rack) -> None:
    xid79 = [a for a in rack.alerts if a["alertname"] == "GPUFallenOffBus"]
    assert len(xid79) == 8 * len(DARK)
    assert {a["node"] for a in xid79} == DARK_NAMES
    # Prometheus resolved them when the node's series went stale: stale (rules/stale.yml), their node down
    assert {a["status"] for a in xid79} == {"resolved"}
    assert {a["decision"] for a in xid79} == {"stale"}
    assert {a["decision_detail"]["stale_reason"] for a in xid79} == {"source_down"}
    dcgm_down = [a for a in rack.alerts if a["alertname"] == "DCGMExporterDown"]
    assert {a["node"] for a in dcgm_down} == DARK_NAMES
    assert {a["decision"] for a in dcgm_down} == {"inhibited"}
    # nothing sent for them, and no vendor received a word about a dark node except in the NodeDown message
    told = {row["incident_key"] for row in rack.notifications}
    assert not [key for key in told if "GPUFallenOffBus" in key or "DCGMExporterDown" in key]
    texts = [*rack.dingtalk(DINGTALK_CORE), *rack.dingtalk(DINGTALK_OPS), *rack.wecom()]
    texts += [json.dumps(p) for p in rack.sms()] + [str(m) for m in rack.mails()]
    for text in texts:
        assert "GPUFallenOffBus" not in text
        assert "DCGMExporterDown" not in text
        assert "NodeDown" in text or not any(name in text for name in DARK_NAMES), text


def test_xid48_during_the_storm_is_delivered(rack: Rack) -> None:
    node = f"gpu-node-{XID48[0]:02d}"
    incident = rack.incident(kind="node", alertname="GPUXidError", node=node)
    assert rack.delivered(incident["id"]) == {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
    for texts in (rack.dingtalk(DINGTALK_CORE), rack.wecom()):
        xid = [t for t in texts if "GPUXidError" in t]
        assert len(xid) == 1, xid
        assert node in xid[0]
        assert "XID 48" in xid[0]
    assert [p for p in rack.sms() if p["alert"] == "GPUXidError"] == [
        {"severity": "严重", "node": node, "alert": "GPUXidError", "gpus": "1/8"}
    ]
    (alert,) = [a for a in rack.alerts if a["alertname"] == "GPUXidError"]
    for texts in (rack.dingtalk(DINGTALK_CORE), rack.wecom()):  # its own start, in Beijing time
        (told,) = [t for t in texts if "GPUXidError" in t]
        assert clock([alert]) in told, told
    assert alert["labels"]["xid"] == "48"
    assert alert["labels"]["gpu"] == str(XID48[1])
    assert alert["decision"] in ("notify", "throttled")  # told, then "already told" until its repeat


def test_hot_node_is_one_message_per_warning_channel(rack: Rack) -> None:
    node = f"gpu-node-{HOT[0]:02d}"
    incident = rack.incident(kind="node", alertname="GPUHighTemp", node=node)
    assert incident["summary"]["units"] == [str(g) for g in HOT[1]]
    assert rack.delivered(incident["id"]) == {"dingtalk-ops": 1, "email-ops": 1}
    (ops,) = rack.dingtalk(DINGTALK_OPS)
    assert f"{node}：6/8 块 GPU GPUHighTemp" in ops  # zh-CN: "%(where)s：%(count)s %(what)s"
    (mail,) = rack.mails()
    assert mail["Subject"].endswith(f"{node}：6/8 块 GPU GPUHighTemp")
    assert mail["To"] == OPS_EMAIL
    hot = [a for a in rack.alerts if a["alertname"] == "GPUHighTemp"]
    assert clock(hot) in ops, ops  # the earliest of its alerts' own starts, in Beijing time
    assert len(hot) == len(HOT[1])
    assert {a["node"] for a in hot} == {node}


def test_the_vendors_refused_nothing(rack: Rack) -> None:
    assert rack.box.vendors.refused() == []
    assert not [row for row in rack.notifications if row["status"] not in ("sent",)]
