"""The rack power-loss scenario, driven through the cluster in a box (box.py); asserted by test_rack.py and
run by hand with `python -m cluster` (see __main__.py).

One timeline:
1. every GPU of the rack's nodes reports XID 79 (GPUFallenOffBus): the alerts reach alertrouter first;
2. the rack goes dark (both exporters of DARK nodes stop answering): NodeDown fires for each;
3. during the storm a GPU of a live node reports XID 48 (double-bit ECC), and 6 of 8 GPUs of another live
   node run hot (88C, warning) all along.
`run_rack` returns once every message the scenario must cause has reached the fakes and the store is at rest
(no alert in a hold-down, no delivery pending): polled with deadlines, never slept on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from cluster.box import DINGTALK_CORE, DINGTALK_OPS, ONCALL_PHONE, WECOM_KEY, ClusterBox, is_digest
from e2e.harness import Router, wait_for

__all__ = ["DARK", "DARK_NAMES", "HOT", "NODES", "XID48", "Rack", "run_rack", "settled"]

NODES = 48  # gpu-node-01 .. gpu-node-48, 8 GPUs each
DARK = range(1, 41)  # the rack: gpu-node-01 .. 40 (far more than the shipped roll-up threshold of 5 nodes)
XID48 = (42, 3)  # gpu-node-42, GPU 3: double-bit ECC during the storm
HOT = (43, range(6))  # gpu-node-43, GPUs 0-5 at 88C (GPUHighTemp warning: > 85)
DARK_NAMES = {f"gpu-node-{n:02d}" for n in DARK}
TIMEOUT = 120.0  # each wait; the shipped rules' group_wait (30s) and hold_down (30s) dominate


@dataclass
class Rack:
    box: ClusterBox
    router: Router  # either replica reads the one database
    alerts: list[dict[str, Any]]
    notifications: list[dict[str, Any]]
    incidents: list[dict[str, Any]]

    def dingtalk(self, token: str) -> list[str]:
        return [json.dumps(body, ensure_ascii=False) for body in self.box.vendors.dingtalk.messages(token)]

    def wecom(self) -> list[str]:
        return [json.dumps(body, ensure_ascii=False) for body in self.box.vendors.wecom.messages(WECOM_KEY)]

    def sms(self) -> list[dict[str, str]]:
        assert all(number == ONCALL_PHONE for number, _ in self.box.vendors.aliyun.sent)
        return [params for _, params in self.box.vendors.aliyun.sent]

    def mails(self) -> list[EmailMessage]:
        """Alert mails to ops (a weekly digest, should the box run across its send time, is left out)."""
        return [m for m in self.box.vendors.smtp.messages if not is_digest(m)]

    def delivered(self, incident_id: int) -> dict[str, int]:
        """Channel -> sent deliveries of one incident."""
        counts: dict[str, int] = {}
        for row in self.notifications:
            if row["incident_id"] == incident_id and row["status"] == "sent":
                counts[row["channel"]] = counts.get(row["channel"], 0) + 1
        return counts

    def incident(self, *, kind: str, alertname: str, node: str | None = None) -> dict[str, Any]:
        found = [
            i
            for i in self.incidents
            if i["kind"] == kind and i["labels"].get("alertname") == alertname and i["labels"].get("node") == node
        ]
        assert len(found) == 1, f"{len(found)} {kind} incidents of {alertname} {node or ''}: {found}"
        return found[0]


def _everything_told(box: ClusterBox) -> bool:
    """What the scenario must produce has reached the fakes (a bounded wait, not the assertion)."""
    v = box.vendors
    core = " ".join(json.dumps(b, ensure_ascii=False) for b in v.dingtalk.messages(DINGTALK_CORE))
    ops = " ".join(json.dumps(b, ensure_ascii=False) for b in v.dingtalk.messages(DINGTALK_OPS))
    wecom = " ".join(json.dumps(b, ensure_ascii=False) for b in v.wecom.messages(WECOM_KEY))
    sms = {params.get("alert") for _, params in v.aliyun.sent}
    mail = " ".join(str(m["Subject"]) for m in v.smtp.messages)
    return (
        all(name in core and name in wecom for name in ("NodeDown", "GPUXidError"))
        and {"NodeDown", "GPUXidError"} <= sms
        and "GPUHighTemp" in ops
        and "GPUHighTemp" in mail
    )


def settled(router: Router) -> list[dict[str, Any]] | None:
    """The store at rest: no alert waiting out a hold-down, no delivery pending; else None."""
    if any(a["decision"] == "held" for a in router.alerts()):
        return None
    r = router.http.get("/api/v1/notifications", params={"limit": 1000})
    assert r.status_code == 200, r.text
    rows: list[dict[str, Any]] = r.json()["notifications"]
    return None if any(row["status"] in ("pending", "sending") for row in rows) else rows


def run_rack(box: ClusterBox) -> Rack:
    fleet, router = box.fleet, box.routers[0]
    # Prometheus scrapes every exporter and has seen every node's name (NodeDown joins node_uname_info)
    wait_for(lambda: sum(s["value"][1] == "1" for s in box.query("up")) == 2 * NODES, what="every target up")
    wait_for(lambda: len(box.query("node_uname_info")) == NODES, what="node_uname_info of every node")

    # 1. the rack's GPUs fall off the bus; the hot node heats up
    for n in DARK:
        fleet.set_gpus(n, range(8), xid=79)
    fleet.set_gpus(HOT[0], HOT[1], temp=88)
    xid79 = '{alertname="GPUFallenOffBus"}'
    wait_for(lambda: len(router.alerts(filter=xid79)) == 8 * len(DARK), what="the rack's XID 79 alerts stored")

    # 2. the rack goes dark; 3. XID 48 on a live node during the storm
    fleet.go_dark(DARK)
    fleet.set_gpus(XID48[0], [XID48[1]], xid=48)
    wait_for(lambda: _everything_told(box), what="every expected message at the fakes", timeout=TIMEOUT)
    rows = wait_for(lambda: settled(router), what="no held alert and no pending delivery", timeout=TIMEOUT)
    assert rows is not None
    r = router.http.get("/api/v1/incidents", params={"limit": 1000})
    assert r.status_code == 200, r.text
    return Rack(box, router, router.alerts(), rows, r.json()["incidents"])
