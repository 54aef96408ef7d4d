"""Nodes living and dying through the cluster in a box: a node coming back, a node refusing connections, a
dcgm-exporter dying on a live node, memory and disk pressure, a flapping GPU (tests/cluster/node_life.py
runs the five at once, on different nodes, once for the module: about two minutes of wall clock).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import httpx
import pytest

from cluster.node_life import (
    BACK,
    BLIND,
    BLIND_HOT,
    DARK_HOT,
    DARK_KUBE,
    DARK_METAL,
    DARK_POD_IP,
    FLAPPING,
    FLAPS,
    PRESSED,
    REFUSED,
    UNSEEN,
    WARNINGS_IN,
    NodeLife,
    name,
    node_life_box,
    run_node_life,
)
from cluster.scenarios import MARKS, Boxes, Scenario
from cluster.told import about, at, clock, lasted

pytestmark = MARKS
# The on-call team (critical: DingTalk core, WeCom, SMS) reads the shipped zh-CN in Beijing time: titles
# "[%s] %s" with the catalogue's severity words (严重, 已恢复) and headlines "%(where)s：%(what)s". The warning
# team (DingTalk ops, email) reads English in Berlin time (WARNINGS_IN): "[WARNING] gpu-node-03: DCGMExporterDown",
# "gpu-node-03: GPUHighTemp on 2/8 GPUs", the rules' English `summary` instead of `summary_zh_CN`.
LANGUAGE, ZONE = WARNINGS_IN
BERLIN = ZoneInfo(ZONE)

CRITICAL = {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}
WARNING = {"dingtalk-ops": 1, "email-ops": 1}


SCENARIO = Scenario(box=node_life_box, run=run_node_life)


@pytest.fixture(scope="module")
def life(boxes: Boxes) -> Iterator[NodeLife]:
    with boxes.outcome(SCENARIO) as outcome:
        yield outcome


# The SMS template's `severity` is the receiver's word too (zh-CN as shipped), as the chat titles are.
SEVERITY_WORDS = {"critical": "严重", "warning": "警告", "info": "提示", "resolved": "已恢复"}


def sms(node: str, alert: str, severity: str, gpus: str = "-") -> str:
    return json.dumps(
        {"severity": SEVERITY_WORDS[severity], "node": node, "alert": alert, "gpus": gpus}, ensure_ascii=False
    )


def test_a_node_coming_back_is_told_resolved_once_per_channel(life: NodeLife) -> None:
    node, store, told = name(BACK), life.store, life.told
    incident = store.incident(alertname="NodeDown", node=node)
    assert incident["status"] == "resolved"
    assert incident["resolved_at"] is not None
    assert store.delivered(incident["id"]) == {"dingtalk-core": 2, "wecom-core": 2, "sms-oncall": 2}
    kinds = [r["kind"] for r in store.notifications if r["incident_id"] == incident["id"]]
    assert sorted(kinds) == ["firing"] * 3 + ["resolved"] * 3
    for channel, down, up in (
        ("dingtalk-core", f"[严重] {node}：NodeDown", f"[已恢复] {node}：NodeDown"),
        ("wecom-core", f"严重</font> {node}：NodeDown", f"已恢复</font> {node}：NodeDown"),
    ):
        texts = about(told[channel], node)
        assert len(texts) == 2, texts
        assert down in texts[0]
        assert up in texts[1]
    # since Prometheus' startsAt, and for as long as it lasted (to the endsAt that resolved it), in Beijing time
    (alert,) = store.of("NodeDown", node)
    since, how_long = clock([alert]), lasted([alert], "zh-CN")
    assert f"- **开始于：** {since}（" in about(told["dingtalk-core"], node)[0]
    assert f"- **持续：** {how_long}（{since} 开始）" in about(told["dingtalk-core"], node)[1]
    wecom = about(told["wecom-core"], node)[1]
    assert f'> 持续： **{how_long}** <font color=\\"comment\\">{since} 开始</font>' in wecom
    # the resolved SMS says so (the shipped template has no status variable)
    assert about(told["sms-oncall"], node) == [sms(node, "NodeDown", "critical"), sms(node, "NodeDown", "resolved")]
    assert (alert["status"], alert["decision"]) == ("resolved", "resolved")
    # its DCGMExporterDown was muted by the NodeDown all along, and resolved with it
    (dcgm,) = store.of("DCGMExporterDown", node)
    assert dcgm["status"] == "resolved"
    assert not [
        r
        for r in store.notifications
        if r["incident_key"] and "DCGMExporterDown" in r["incident_key"] and node in r["incident_key"]
    ]


def test_a_node_refusing_connections_is_down_and_named(life: NodeLife) -> None:
    node, store, told = name(REFUSED), life.store, life.told
    (down,) = store.of("NodeDown", node)
    assert down["status"] == "firing"
    assert down["labels"]["instance"] == "10.0.0.2:9100"
    assert down["labels"]["nodename"] == node
    incident = store.incident(alertname="NodeDown", node=node)
    assert store.delivered(incident["id"]) == CRITICAL
    (core,) = about(told["dingtalk-core"], node)
    assert f"[严重] {node}：NodeDown" in core
    assert about(told["sms-oncall"], node) == [sms(node, "NodeDown", "critical")]
    (dcgm,) = store.of("DCGMExporterDown", node)
    assert (dcgm["status"], dcgm["decision"]) == ("firing", "inhibited")
    # Prometheus saw the refusal itself, not an HTTP error
    (up,) = life.box.query('up{job="node",instance="10.0.0.2:9100"}')
    assert up["value"][1] == "0"
    r = httpx.get(life.box.prometheus.url + "/api/v1/targets", params={"state": "active"}, timeout=10)
    assert r.status_code == 200, r.text
    errors = {t["labels"]["instance"]: t["lastError"] for t in r.json()["data"]["activeTargets"]}
    assert "connection refused" in errors["10.0.0.2:9100"]
    assert "connection refused" in errors["10.0.0.2:9400"]


def test_dcgm_exporter_down_on_a_live_node_mutes_its_gpu_metric_alerts(life: NodeLife) -> None:
    """The exporter stops right after the hot GPUs' first message: their alerts resolve as their series vanish,
    together, so rules/stale.yml holds their resolve (an inhibit rule cannot hold back a resolve that comes
    before its source), and DCGMExporterDown, a source-down alert, keeps them stale: never "resolved"."""
    node, store, told = name(BLIND), life.store, life.told
    (dcgm,) = store.of("DCGMExporterDown", node)
    assert dcgm["status"] == "firing"
    assert dcgm["decision"] in ("notify", "throttled")  # told, then "already told" until its repeat
    assert dcgm["labels"]["instance"] == "10.0.0.3:9400"  # named by the address its GPU alerts taught
    incident = store.incident(alertname="DCGMExporterDown", node=node)
    assert store.delivered(incident["id"]) == WARNING
    (ops,) = about(told["dingtalk-ops"], f"[WARNING] {node}: DCGMExporterDown")
    assert f"- **Since:** {clock([dcgm], BERLIN)} (" in ops
    assert len(about(told["email-ops"], f"[WARNING] {node}: DCGMExporterDown")) == 1
    # the node itself is up: no NodeDown
    assert not store.of("NodeDown", node)
    # its hot GPUs were told once; their series went stale with the exporter: stale, never "resolved"
    hot = store.of("GPUHighTemp", node)
    assert sorted(a["labels"]["gpu"] for a in hot) == [str(g) for g in BLIND_HOT]
    assert {a["status"] for a in hot} == {"resolved"}
    assert {a["decision"] for a in hot} == {"stale"}
    assert {a["decision_detail"]["stale_reason"] for a in hot} == {"source_down"}
    assert {a["decision_detail"]["stale_source"] for a in hot} == {dcgm["fingerprint"]}
    temp = store.incident(alertname="GPUHighTemp", node=node)
    assert temp["status"] == "firing"  # open: no data from the node, not over
    assert store.delivered(temp["id"]) == WARNING
    assert [r["kind"] for r in store.notifications if r["incident_id"] == temp["id"]] == ["firing", "firing"]
    texts = about(told["dingtalk-ops"], node, "GPUHighTemp")
    assert len(texts) == 1
    assert f"[WARNING] {node}: GPUHighTemp on 2/8 GPUs" in texts[0]
    assert f"- **Since:** {clock(hot, BERLIN)} (" in texts[0]


def test_dcgm_exporter_down_names_a_node_whose_gpus_never_alerted(life: NodeLife) -> None:
    """No GPU alert taught alertrouter that 10.0.0.7 is gpu-node-07: the shipped DCGMExporterDown carries the
    nodename of the node-exporter scraped at the same address."""
    node, store, told = name(UNSEEN), life.store, life.told
    (dcgm,) = store.of("DCGMExporterDown", node)
    assert dcgm["labels"]["instance"] == "10.0.0.7:9400"
    assert dcgm["labels"]["nodename"] == node
    assert "address" not in dcgm["labels"]  # the join's helper label is dropped
    incident = store.incident(alertname="DCGMExporterDown", node=node)
    assert store.delivered(incident["id"]) == WARNING
    (ops,) = about(told["dingtalk-ops"], "10.0.0.7")
    assert f"[WARNING] {node}: DCGMExporterDown" in ops
    assert f"{node}: dcgm-exporter on 10.0.0.7:9400 is down" in ops  # the rule's English summary
    assert not [a for a in store.alerts if a["node"] == "10.0.0.7"]


def test_memory_and_disk_pressure_are_told_by_node_name(life: NodeLife) -> None:
    node, store, told = name(PRESSED), life.store, life.told
    memory = store.of("NodeMemoryPressure", node)
    assert sorted(a["labels"]["severity"] for a in memory) == ["critical", "warning"]
    assert {a["labels"]["nodename"] for a in memory} == {node}
    # the warning is muted by the critical of the same alert and node (critical-mutes-warning)
    assert {a["labels"]["severity"]: a["decision"] for a in memory}["warning"] == "inhibited"
    (disk,) = store.of("NodeDiskPressure", node)
    assert (disk["labels"]["severity"], disk["labels"]["mountpoint"], disk["labels"]["nodename"]) == (
        "warning",
        "/",
        node,
    )
    assert not [a for a in store.alerts if a["node"] == "10.0.0.4"]
    # critical: the on-call channels; warning: ops and email. Named by the node, never by its IP.
    assert store.delivered(store.incident(alertname="NodeMemoryPressure", node=node)["id"]) == CRITICAL
    assert store.delivered(store.incident(alertname="NodeDiskPressure", node=node)["id"]) == WARNING
    (core,) = about(told["dingtalk-core"], "NodeMemoryPressure")
    assert f"[严重] {node}：NodeMemoryPressure" in core
    assert "节点 10.0.0.4:9100 可用内存 3%" in core  # the rule's summary_zh_CN: the receiver reads zh-CN
    (wecom,) = about(told["wecom-core"], "NodeMemoryPressure")
    assert f"{node}：NodeMemoryPressure" in wecom
    assert about(told["sms-oncall"], "NodeMemoryPressure") == [sms(node, "NodeMemoryPressure", "critical")]
    assert f"- **开始于：** {clock(memory)}（" in core
    (ops,) = about(told["dingtalk-ops"], "NodeDiskPressure")
    assert f"[WARNING] {node}: NodeDiskPressure" in ops
    assert f"{node}: Node 10.0.0.4:9100: / has 7% free" in ops  # `summary`; the device /dev/nvme0n1p2 is no GPU
    assert "GPU /dev/nvme0n1p2" not in ops
    assert "剩余" not in ops  # the warning team reads English: not the rule's summary_zh_CN
    assert f"- **Since:** {clock([disk], BERLIN)} (" in ops
    (mail,) = about(told["email-ops"], "NodeDiskPressure")
    assert mail.startswith(f"[WARNING] {node}: NodeDiskPressure")
    assert f"\nSince: {clock([disk], BERLIN)} (" in mail


def test_a_flapping_gpu_costs_one_message_and_one_resolve_per_channel(life: NodeLife) -> None:
    """The shipped throttle: the first message after group_wait (30s), then no two messages to a receiver
    closer than the group interval, and a re-fire after a resolve waits out the group wait again, which a
    GPU hot for HALF_PERIOD seconds never does. So FLAPS flaps cost one firing message and one resolved
    message per warning channel."""
    node, store, told = name(FLAPPING), life.store, life.told
    assert life.flaps == FLAPS
    episodes = life.flap_episodes
    assert len(episodes) >= FLAPS  # Prometheus fired and resolved it again and again
    (alert,) = store.of("GPUHighTemp", node)
    assert alert["labels"]["gpu"] == "0"
    incident = store.incident(alertname="GPUHighTemp", node=node)
    assert incident["status"] == "resolved"
    assert store.delivered(incident["id"]) == {"dingtalk-ops": 2, "email-ops": 2}
    kinds = sorted(r["kind"] for r in store.notifications if r["incident_id"] == incident["id"])
    assert kinds == ["firing", "firing", "resolved", "resolved"]
    headline = f"{node}: GPUHighTemp on 1/8 GPUs"
    texts = about(told["dingtalk-ops"], headline)
    assert len(texts) == 2
    assert f"[WARNING] {headline}" in texts[0]
    assert f"[RESOLVED] {headline}" in texts[1]
    assert [m.split("\n", 1)[0] for m in about(told["email-ops"], headline)] == [
        f"[WARNING] {headline}",
        f"[RESOLVED] {headline}",
    ]
    # one story from the first start told to the last end: the episodes between were never a message of their own
    since = clock(episodes, BERLIN)  # the first episode's (the API lists them newest first)
    assert f"- **Since:** {since} (" in texts[0]
    # The story the resolve tells had ended when it was written: an episode Prometheus started again after that
    # (a flap the throttle keeps quiet) is not in it.
    (resolved,) = [
        r["created_at"]
        for r in store.notifications
        if r["incident_id"] == incident["id"] and r["kind"] == "resolved" and r["channel"] == "dingtalk-ops"
    ]
    ended = [e for e in episodes if e["ends_at"] and at(e["ends_at"]) <= at(resolved)]
    assert f"- **Lasted:** {lasted(ended, LANGUAGE)} (since {since})" in texts[1], (episodes, resolved, texts[1])


def test_nothing_else_was_told(life: NodeLife) -> None:
    """Every message the fakes accepted is one of those the tests above expect, and none was refused."""
    told = life.told
    counts = {channel: len(texts) for channel, texts in told.items() if texts}
    assert counts == {
        # NodeDown x2 + its resolve, NodeMemoryPressure; NodeDown of DARK_METAL (+ its resolve) and DARK_KUBE
        "dingtalk-core": 7,
        "wecom-core": 7,
        "sms-oncall": 7,
        # GPUHighTemp of BLIND, DCGMExporterDown of BLIND and UNSEEN, NodeDiskPressure, the flapping GPU + its
        # resolve; GPUHighTemp of DARK_METAL (+ its resolve once back) and DARK_KUBE
        "dingtalk-ops": 9,
        "email-ops": 9,
    }
    assert life.box.vendors.refused() == []
    assert {row["status"] for row in life.store.notifications} == {"sent"}


@pytest.mark.parametrize("dark", [DARK_METAL, DARK_KUBE], ids=["bare-metal", "kubernetes"])
def test_a_node_gone_dark_tells_no_resolve_for_its_gpus_and_one_node_down(life: NodeLife, dark: int) -> None:
    """Stale is not resolved (rules/stale.yml): the GPU alerts of a node that died resolved as their series
    vanished; they are stale, not told resolved, and the one incident told is the node's NodeDown."""
    node, store, told = name(dark), life.store, life.told
    hot = store.of("GPUHighTemp", node)
    assert sorted(a["labels"]["gpu"] for a in hot) == [str(g) for g in DARK_HOT]
    if dark == DARK_KUBE:  # the shape is Kubernetes': dcgm-exporter by pod IP, relabelled with `node`
        assert {a["labels"]["instance"] for a in hot} == {f"{DARK_POD_IP}:9400"}
        assert {a["labels"]["node"] for a in hot} == {node}
    else:
        assert {a["labels"]["instance"] for a in hot} == {f"10.0.0.{dark}:9400"}
    temp = store.incident(alertname="GPUHighTemp", node=node)
    down = store.incident(alertname="NodeDown", node=node)
    temp_kinds = [r["kind"] for r in store.notifications if r["incident_id"] == temp["id"]]
    down_kinds = [r["kind"] for r in store.notifications if r["incident_id"] == down["id"]]
    # every incident of the node told anything: its GPUs (before it died) and NodeDown; no DCGMExporterDown
    told_about = {r["incident_id"] for r in store.notifications}
    of_node = {i["id"] for i in store.incidents if i["labels"].get("node") == node}
    assert of_node & told_about == {temp["id"], down["id"]}
    if dark == DARK_KUBE:  # still dark: the GPUs are stale, their incident open with "no data since"
        assert {a["status"] for a in hot} == {"resolved"}
        assert {a["decision"] for a in hot} == {"stale"}
        assert {a["decision_detail"]["stale_reason"] for a in hot} == {"source_down"}
        assert temp["status"] == "firing"
        assert temp["summary"]["stale"] == 2
        assert temp["summary"]["no_data_since"]
        assert temp_kinds == ["firing", "firing"]
        assert sorted(down_kinds) == ["firing"] * 3
        assert about(told["dingtalk-ops"], node, "GPUHighTemp")
        assert not about(told["dingtalk-ops"], "RESOLVED", node)
    else:  # back with cool GPUs: NodeDown resolved, then the GPUs' resolve, once per channel
        assert {a["decision"] for a in hot} == {"resolved"}
        assert temp["status"] == "resolved"
        assert sorted(temp_kinds) == ["firing", "firing", "resolved", "resolved"]
        assert sorted(down_kinds) == ["firing"] * 3 + ["resolved"] * 3
        (gpu_resolve,) = about(told["dingtalk-ops"], "[RESOLVED]", node, "GPUHighTemp")
        # from the GPUs' start to when their data stopped, and linked to why it stopped
        assert f"- **Lasted:** {lasted(hot, LANGUAGE)} (since {clock(hot, BERLIN)})" in gpu_resolve, hot
        assert f"- **No data while {node} was down (" in gpu_resolve  # NodeDown or DCGMExporterDown: a race
        # told after NodeDown's resolve: the data returned first
        resolves = sorted(
            (
                r
                for r in store.notifications
                if r["kind"] == "resolved" and r["incident_id"] in (temp["id"], down["id"])
            ),
            key=lambda r: r["id"],
        )
        assert resolves[0]["incident_id"] == down["id"]
        assert resolves[-1]["incident_id"] == temp["id"]
