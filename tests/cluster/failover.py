"""A replica killed mid-storm (kill -9), driven through the cluster in a box (box.py); asserted by
test_failover.py.

One timeline:
1. every GPU of STORM's nodes reports XID 79 (GPUFallenOffBus): the GPU alerts reach alertrouter first;
2. the vendors are armed: the next request each critical vendor (DingTalk, WeCom, Aliyun SMS) receives hangs
   unanswered (the fakes' "timeout" fault: never delivered, answered 504 long after any client gave up);
3. STORM's nodes go dark (NodeDown for each, rolled up into one cluster incident) and a GPU of a live node
   reports XID 48;
4. the moment the first of those messages reaches a vendor (the storm's webhooks were 2xx'd and stored, the
   engine decided and wrote its outbox, and a send is in flight, not answered) the replica holding the
   engine lease is SIGKILLed. The replica that sends is, in practice, the engine's: the engine nudges its own
   delivery loop the moment its outbox commits, and the channel lease stays with whoever sends first.
5. the survivor must take the engine lease (at its expiry: a killed replica releases nothing), recover the
   killed replica's claims when they expire, and tell everything exactly once;
6. the killed replica is started again and must join without sending anything.
`run_failover` returns once all of that happened: polled with deadlines, never slept on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from cluster.box import DINGTALK_CORE, WECOM_KEY, ClusterBox
from cluster.rack import settled
from e2e.harness import Router, wait_for

__all__ = ["NODES", "STORM", "STORM_NAMES", "XID48", "Failover", "run_failover"]

NODES = 12
STORM = range(1, 7)  # gpu-node-01 .. 06: more than the shipped roll-up threshold of 5 nodes
XID48 = (10, 3)  # gpu-node-10, GPU 3: double-bit ECC during the storm
STORM_NAMES = {f"gpu-node-{n:02d}" for n in STORM}
TIMEOUT = 180.0  # each wait: lease expiry (15s), claim expiry and the channel leases (60s) of the dead replica


@dataclass
class Failover:
    box: ClusterBox
    killed: Router  # the replica SIGKILLed, as it was (its process is gone)
    survivor: Router
    restarted: Router  # the killed replica started again on its port
    holder_killed: str  # engine lease holders, as the store named them
    holder_survivor: str
    in_flight: dict[str, int]  # vendor -> requests received, unanswered, when the replica was killed
    accepted_at_rest: dict[str, int]  # vendor -> messages delivered when the storm was told and at rest
    alerts: list[dict[str, Any]]
    notifications: list[dict[str, Any]]
    incidents: list[dict[str, Any]]

    def accepted(self) -> dict[str, int]:
        v = self.box.vendors
        return {"dingtalk": len(v.dingtalk.accepted), "wecom": len(v.wecom.accepted), "aliyun": len(v.aliyun.accepted)}

    def delivered(self, incident_id: int) -> dict[str, int]:
        """Channel -> sent deliveries of one incident."""
        counts: dict[str, int] = {}
        for row in self.notifications:
            if row["incident_id"] == incident_id and row["status"] == "sent":
                counts[row["channel"]] = counts.get(row["channel"], 0) + 1
        return counts

    def incident(self, *, kind: str, alertname: str) -> dict[str, Any]:
        found = [i for i in self.incidents if i["kind"] == kind and i["labels"].get("alertname") == alertname]
        assert len(found) == 1, f"{len(found)} {kind} incidents of {alertname}: {found}"
        return found[0]

    def attempts(self, delivery_id: int) -> list[dict[str, Any]]:
        r = self.survivor.http.get(f"/api/v1/notifications/{delivery_id}")
        assert r.status_code == 200, r.text
        attempts: list[dict[str, Any]] = r.json()["attempts"]
        return attempts


def _in_flight(box: ClusterBox) -> dict[str, int]:
    v = box.vendors
    return {
        name: len(fake.received) - len(fake.accepted)
        for name, fake in (("dingtalk", v.dingtalk), ("wecom", v.wecom), ("aliyun", v.aliyun))
    }


def _told(box: ClusterBox) -> bool:
    """The storm and the XID 48 reached every critical vendor (a bounded wait, not the assertion)."""
    v = box.vendors
    core = " ".join(json.dumps(b, ensure_ascii=False) for b in v.dingtalk.messages(DINGTALK_CORE))
    wecom = " ".join(json.dumps(b, ensure_ascii=False) for b in v.wecom.messages(WECOM_KEY))
    sms = {params.get("alert") for _, params in v.aliyun.sent}
    names = ("NodeDown", "GPUXidError")
    return all(name in core and name in wecom for name in names) and set(names) <= sms


def _loops_passed_since(router: Router, since: float) -> bool:
    """Both the engine and the delivery loop of `router` completed a pass that ended after `since`."""
    return all(
        router.metric("alertrouter_loop_last_pass_timestamp_seconds", loop=name) > since
        for name in ("engine", "delivery")
    )


def run_failover(box: ClusterBox) -> Failover:
    fleet, v = box.fleet, box.vendors
    wait_for(lambda: sum(s["value"][1] == "1" for s in box.query("up")) == 2 * NODES, what="every target up")
    wait_for(lambda: len(box.query("node_uname_info")) == NODES, what="node_uname_info of every node")

    # 1. the storm's GPUs fall off the bus: stored (by whichever replica leads)
    for n in STORM:
        fleet.set_gpus(n, range(8), xid=79)
    xid79 = '{alertname="GPUFallenOffBus"}'
    router = box.routers[0]
    wait_for(lambda: len(router.alerts(filter=xid79)) == 8 * len(STORM), what="the storm's XID 79 alerts stored")

    # 2. the next message to each critical vendor will hang, unanswered; 3. the storm
    for fake in (v.dingtalk, v.wecom, v.aliyun):
        fake.fail_next("timeout")
    fleet.go_dark(STORM)
    fleet.set_gpus(XID48[0], [XID48[1]], xid=48)

    # 4. a message of the storm is in flight: kill the engine's replica there and then
    wait_for(lambda: any(_in_flight(box).values()), what="a storm message in flight at a vendor", timeout=TIMEOUT)
    leader = wait_for(box.leader, what="the replica holding the engine lease")
    holder_killed = box.engine_holder()
    assert holder_killed is not None
    in_flight = _in_flight(box)
    box.kill_router(leader)
    survivor = next(r for r in box.routers if r is not leader)

    # 5. the survivor takes over and tells everything, once
    wait_for(lambda: box.leader() is survivor, what="the survivor holding the engine lease", timeout=TIMEOUT)
    holder_survivor = box.engine_holder()
    assert holder_survivor is not None
    wait_for(lambda: _told(box), what="the storm and the XID 48 told on every critical vendor", timeout=TIMEOUT)
    wait_for(lambda: settled(survivor), what="no held alert and no pending delivery", timeout=TIMEOUT)
    at_rest = {"dingtalk": len(v.dingtalk.accepted), "wecom": len(v.wecom.accepted), "aliyun": len(v.aliyun.accepted)}

    # 6. the killed replica comes back and joins: one full pass of its loops, nothing sent
    restarted = box.restart_router(leader)
    ready = time.time()
    wait_for(lambda: _loops_passed_since(restarted, ready), what="the restarted replica's engine and delivery passes")
    rows = settled(survivor)
    assert rows is not None, "a delivery pending after the restart"
    r = survivor.http.get("/api/v1/incidents", params={"limit": 1000})
    assert r.status_code == 200, r.text
    return Failover(
        box=box,
        killed=leader,
        survivor=survivor,
        restarted=restarted,
        holder_killed=holder_killed,
        holder_survivor=holder_survivor,
        in_flight=in_flight,
        accepted_at_rest=at_rest,
        alerts=survivor.alerts(),
        notifications=rows,
        incidents=r.json()["incidents"],
    )
