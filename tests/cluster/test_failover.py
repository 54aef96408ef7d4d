"""A replica killed (SIGKILL) mid-storm while a message is in flight, through the whole real chain
(tests/cluster/box.py, timeline in failover.py). Nothing lost, nothing twice, the survivor takes over, and the
killed replica, started again, joins without sending anything.

The timeline runs once for the module (one to two minutes: the dead replica's engine lease, claims and channel
leases have to expire), then each test checks one promise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from cluster.box import DINGTALK_CORE, WECOM_KEY, ClusterBox
from cluster.failover import NODES, STORM, STORM_NAMES, XID48, Failover, run_failover
from cluster.scenarios import MARKS, Boxes, Scenario
from cluster.told import clock

pytestmark = MARKS

CRITICAL = {"dingtalk-core": 1, "wecom-core": 1, "sms-oncall": 1}  # routes.yml's oncall-core receiver


SCENARIO = Scenario(box=lambda: ClusterBox(nodes=NODES), run=run_failover)


@pytest.fixture(scope="module")
def failover(boxes: Boxes) -> Iterator[Failover]:
    with boxes.outcome(SCENARIO) as outcome:
        yield outcome


WATCHDOG = "Watchdog"  # rules/prometheus/watchdog.rules.yml, matched by rules/heartbeats.yml


def test_the_survivor_took_the_engine_lease_and_keeps_it(failover: Failover) -> None:
    assert failover.killed.proc.popen.returncode == -9  # SIGKILL: nothing released, nothing finished
    assert failover.holder_survivor != failover.holder_killed
    assert failover.box.leader() is failover.survivor  # the restarted replica did not take it back
    assert f"lease taken by {failover.holder_survivor}" in failover.survivor.proc.logs()


def test_nothing_lost(failover: Failover) -> None:
    stored = {json.dumps(a["labels"], sort_keys=True): a for a in failover.alerts}
    # every alert Prometheus fires now is stored, firing
    # (the Watchdog is heard as a heartbeat and never stored, by design: tests/cluster/test_heartbeat.py)
    firing = [
        a
        for a in failover.box.prometheus_alerts()
        if a["state"] == "firing" and a["labels"].get("alertname") != WATCHDOG
    ]
    assert firing
    for alert in firing:
        found = stored.get(json.dumps(alert["labels"], sort_keys=True))
        assert found is not None, f"not stored: {alert['labels']}"
        assert found["status"] == "firing", found
    # every alert either Alertmanager holds is stored, by Alertmanager's own fingerprint
    fingerprints = {a["fingerprint"] for a in failover.alerts}
    for am in failover.box.alertmanagers:
        held = [
            a
            for a in httpx.get(am.url + "/api/v2/alerts", timeout=10).json()
            if a["labels"].get("alertname") != WATCHDOG
        ]
        assert held
        assert {a["fingerprint"] for a in held} <= fingerprints
    # and what fired before or during the kill: the XID 79s (resolved as the nodes' series went stale)
    xid79 = [a for a in failover.alerts if a["alertname"] == "GPUFallenOffBus"]
    assert len(xid79) == 8 * len(STORM)
    node_down = [a for a in failover.alerts if a["alertname"] == "NodeDown"]
    assert {a["node"] for a in node_down} == STORM_NAMES
    assert {a["decision"] for a in node_down} == {"rolled_up"}


def test_every_incident_is_told_on_every_channel_of_its_receiver(failover: Failover) -> None:
    cluster = failover.incident(kind="cluster", alertname="NodeDown")
    assert cluster["summary"]["nodes"] == len(STORM)
    assert failover.delivered(cluster["id"]) == CRITICAL
    xid = failover.incident(kind="node", alertname="GPUXidError")
    assert xid["labels"].get("node") == f"gpu-node-{XID48[0]:02d}"
    assert failover.delivered(xid["id"]) == CRITICAL
    # nothing else was to be told: the dark nodes' GPU alerts are muted by their NodeDown
    assert {row["incident_id"] for row in failover.notifications} <= {cluster["id"], xid["id"]} | {None}
    assert not [row for row in failover.notifications if row["status"] != "sent"]


def test_nothing_twice_at_any_vendor(failover: Failover) -> None:
    v = failover.box.vendors
    for vendor, texts in (
        ("dingtalk", [json.dumps(b, ensure_ascii=False) for b in v.dingtalk.messages(DINGTALK_CORE)]),
        ("wecom", [json.dumps(b, ensure_ascii=False) for b in v.wecom.messages(WECOM_KEY)]),
    ):
        (storm,) = [t for t in texts if f"{len(STORM)} 个节点 NodeDown" in t]  # zh-CN
        (xid,) = [t for t in texts if "GPUXidError" in t]
        assert len(texts) == 2, (vendor, texts)
        # what was sent again after the kill still says when each began, by Prometheus, in Beijing time
        assert clock([a for a in failover.alerts if a["alertname"] == "NodeDown"]) in storm, storm
        assert clock([a for a in failover.alerts if a["alertname"] == "GPUXidError"]) in xid, xid
        assert f"gpu-node-{XID48[0]:02d}" in xid
    assert sorted(p["alert"] for _, p in v.aliyun.sent) == ["GPUXidError", "NodeDown"]


def test_the_send_in_flight_was_never_delivered_and_was_sent_again(failover: Failover) -> None:
    assert any(failover.in_flight.values()), failover.in_flight
    v = failover.box.vendors
    # each critical vendor: exactly one request not delivered (the one that hung), everything else accepted
    for fake in (v.dingtalk, v.wecom, v.aliyun):
        assert len(fake.received) - len(fake.accepted) == 1, fake.name
    # so one delivery per critical channel took two attempts: the hung one (never answered, or cut by the
    # kill), then the one that was delivered
    for channel in CRITICAL:
        tries = [failover.attempts(row["id"]) for row in failover.notifications if row["channel"] == channel]
        assert sorted(len(t) for t in tries) == [1, 2], (channel, tries)
        (twice,) = [t for t in tries if len(t) == 2]
        assert twice[-1]["outcome"] == "sent"
        assert twice[0]["outcome"] != "sent"


def test_the_restarted_replica_joined_without_sending_anything(failover: Failover) -> None:
    restarted = failover.restarted
    assert restarted.proc.popen.poll() is None
    assert restarted.url == failover.killed.url  # the port both Alertmanagers send to
    assert httpx.get(restarted.url + "/readyz", timeout=10).status_code == 200
    assert failover.accepted() == failover.accepted_at_rest
    # it reads the same store: the same incidents and deliveries, all sent
    r = restarted.http.get("/api/v1/notifications", params={"limit": 1000})
    assert r.status_code == 200, r.text
    assert {n["id"]: n["status"] for n in r.json()["notifications"]} == {
        n["id"]: n["status"] for n in failover.notifications
    }
