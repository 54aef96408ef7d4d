"""Prometheus restarted with alerts firing and told, driven through the cluster in a box (box.py); asserted by
test_prometheus_restart.py.

One timeline:
1. a GPU of XID48's node reports XID 48 (critical, no `for`), HOT's GPUs run at 88C (warning, `for`) and DOWN's
   node goes dark (NodeDown, critical, `for`); everything is told and the store is at rest;
2. Prometheus is stopped (SIGTERM) and started again on the same TSDB directory, config and port. It restores
   the `for` state of the firing alerts from ALERTS_FOR_STATE (activeAt as before, in whole seconds; a rule
   without `for` is not restored and fires anew), and sends every firing alert to both Alertmanagers again
   with a new `startsAt`: Prometheus sends its FiredAt, which for all of them is now. Prometheus 2.42 sends
   the restored ones a resend delay (1m) after the restart, hence the longest wait of this timeline.
   Alertmanager merges each into the alert it holds (their activity overlaps) and keeps the earlier start.
   Prometheus restores the `for` state of the alerts it finds active after its second evaluation, which in the
   box comes before its first scrape (targets reach its scrape manager on a 5s tick), so on the data it had
   at the stop. A scrape in flight at the SIGTERM is cancelled, and Prometheus 2.42 records it as failed:
   `up` 0 and that target's series marked stale. Its alerts are then not active (nothing is restored for them;
   they go pending anew at the next scrape and fire again, a `for` later, with a new activeAt) and, for `for:`
   shorter than the wait for that scrape, its DCGMExporterDown fires for a few seconds. A scrape of the fleet
   takes a few dozen milliseconds of every 1s interval, so some runs catch one: `held_at_stop` says which
   alerts Prometheus could restore, `up_at_stop` and `failed_scrapes` show the cut;
3. once Prometheus has sent its firing alerts again, a MARKER alert (XID 48 on another node) is raised. It
   travels the same chain after them, and alertrouter tells it only after its 30s group_wait: once the marker
   is at the vendors, whatever the re-sent alerts were going to cause has happened. That is the bound on
   "nothing more was sent", polled for, never slept on.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

import httpx

from cluster.box import DINGTALK_CORE, DINGTALK_OPS, WECOM_KEY, ClusterBox, is_digest
from cluster.rack import settled
from e2e.harness import Router, wait_for

__all__ = ["DOWN", "HOT", "MARKER", "NODES", "XID48", "Restart", "run_restart"]

NODES = 12
XID48 = (3, 1)  # gpu-node-03, GPU 1: double-bit ECC
HOT = (5, range(6))  # gpu-node-05, GPUs 0-5 at 88C
DOWN = 9  # gpu-node-09 goes dark
MARKER = (7, 0)  # gpu-node-07, GPU 0: XID 48 raised after the restart, the end of the wait
TIMEOUT = 120.0


@dataclass
class Vendored:
    """What the vendors had delivered at one moment."""

    dingtalk_core: list[str]
    dingtalk_ops: list[str]
    wecom: list[str]
    sms: list[dict[str, str]]
    mails: list[str]

    @classmethod
    def of(cls, box: ClusterBox) -> Vendored:
        v = box.vendors
        return cls(
            dingtalk_core=[json.dumps(b, ensure_ascii=False) for b in v.dingtalk.messages(DINGTALK_CORE)],
            dingtalk_ops=[json.dumps(b, ensure_ascii=False) for b in v.dingtalk.messages(DINGTALK_OPS)],
            wecom=[json.dumps(b, ensure_ascii=False) for b in v.wecom.messages(WECOM_KEY)],
            sms=[params for _, params in v.aliyun.sent],
            mails=[str(m["Subject"]) for m in v.smtp.messages if not is_digest(m)],
        )

    def since(self, before: Vendored) -> dict[str, list[Any]]:
        """Per channel, what was delivered after `before` (each list only grows)."""
        out: dict[str, list[Any]] = {}
        for name in ("dingtalk_core", "dingtalk_ops", "wecom", "sms", "mails"):
            old, new = getattr(before, name), getattr(self, name)
            assert new[: len(old)] == old, name
            out[name] = new[len(old) :]
        return out


@dataclass
class Restart:
    box: ClusterBox
    router: Router
    prometheus_before: dict[str, dict[str, Any]]  # label set (JSON) -> Prometheus's alert, before the restart
    prometheus_after: dict[str, dict[str, Any]]  # the same after it, once re-sent
    resent: float  # alerts the new Prometheus sent to the Alertmanagers
    stored_before: dict[str, dict[str, Any]]  # fingerprint -> alertrouter's stored alert, before
    stored_after: dict[str, dict[str, Any]]
    incidents_before: dict[int, dict[str, Any]]
    incidents_after: dict[int, dict[str, Any]]
    told_before: Vendored
    told_after: Vendored
    notifications_before: list[dict[str, Any]]
    notifications: list[dict[str, Any]]
    held_at_stop: set[str]  # keys of prometheus_before whose rule still held on the data at the stop
    up_at_stop: dict[str, str]  # "job/instance" -> the value of its target's last `up` before the stop
    failed_scrapes: dict[str, int]  # "job/instance" -> its failed scrapes between the "before" snapshot and the stop


def _firing(box: ClusterBox) -> dict[str, dict[str, Any]]:
    return {json.dumps(a["labels"], sort_keys=True): a for a in box.prometheus_alerts() if a["state"] == "firing"}


def _resent(box: ClusterBox, before: dict[str, dict[str, Any]]) -> float:
    """Alerts the running Prometheus sent to the Alertmanagers, once every alert firing before fires again and
    it sent at least that many to each of the two; else 0."""
    if not set(before) <= set(_firing(box)):
        return 0.0
    sent = box.prometheus_metric("prometheus_notifications_sent_total")
    return sent if sent >= 2 * len(before) else 0.0


def _held_at(box: ClusterBox, alerts: dict[str, dict[str, Any]], at: float) -> set[str]:
    """The keys of `alerts` whose alerting rule's expression held at Unix time `at` on Prometheus's data: the
    series it gave, with the rule's labels and alertname, is the alert's label set. Those are the alerts a
    Prometheus evaluating that data finds active."""
    r = httpx.get(box.prometheus.url + "/api/v1/rules", params={"type": "alert"}, timeout=10)
    assert r.status_code == 200, r.text
    rules = [rule for group in r.json()["data"]["groups"] for rule in group["rules"]]
    held: set[str] = set()
    for key, alert in alerts.items():
        labels = alert["labels"]
        for rule in rules:
            own = rule.get("labels") or {}
            if rule["name"] != labels["alertname"] or any(labels.get(k) != v for k, v in own.items()):
                continue
            for series in box.query(rule["query"], at=at):
                found = {k: v for k, v in series["metric"].items() if k != "__name__"}
                if {**found, **own, "alertname": rule["name"]} == labels:
                    held.add(key)
    return held


def _target(series: dict[str, Any]) -> str:
    return f"{series['metric']['job']}/{series['metric']['instance']}"


def _incidents(router: Router) -> dict[int, dict[str, Any]]:
    r = router.http.get("/api/v1/incidents", params={"limit": 1000})
    assert r.status_code == 200, r.text
    return {i["id"]: i for i in r.json()["incidents"]}


def _told(box: ClusterBox, *, marker: bool) -> bool:
    """What the timeline must have produced at the vendors (a bounded wait, not the assertion)."""
    told = Vendored.of(box)
    core, wecom, ops = " ".join(told.dingtalk_core), " ".join(told.wecom), " ".join(told.dingtalk_ops)
    marker_node = f"gpu-node-{MARKER[0]:02d}"
    if marker:
        return marker_node in core and marker_node in wecom and any(p["node"] == marker_node for p in told.sms)
    sms = {p["alert"] for p in told.sms}
    return (
        all(name in core and name in wecom for name in ("NodeDown", "GPUXidError"))
        and {"NodeDown", "GPUXidError"} <= sms
        and "GPUHighTemp" in ops
        and any("GPUHighTemp" in s for s in told.mails)
    )


def run_restart(box: ClusterBox) -> Restart:
    fleet, router = box.fleet, box.routers[0]
    wait_for(lambda: sum(s["value"][1] == "1" for s in box.query("up")) == 2 * NODES, what="every target up")
    wait_for(lambda: len(box.query("node_uname_info")) == NODES, what="node_uname_info of every node")

    # 1. alerts firing and told
    fleet.set_gpus(XID48[0], [XID48[1]], xid=48)
    fleet.set_gpus(HOT[0], HOT[1], temp=88)
    fleet.go_dark([DOWN])
    wait_for(lambda: _told(box, marker=False), what="every first message at the fakes", timeout=TIMEOUT)
    notifications_before = wait_for(lambda: settled(router), what="nothing held or pending", timeout=TIMEOUT)
    prometheus_before = _firing(box)
    snapshot = time.time()
    stored_before = router.by_fingerprint()
    incidents_before = _incidents(router)
    told_before = Vendored.of(box)

    # 2. restart Prometheus; wait until it has sent every alert that fired before to the Alertmanagers again
    stopped = box.restart_prometheus()
    sent = wait_for(lambda: _resent(box, prometheus_before), what="the alerts sent again", timeout=TIMEOUT)
    window = f"{math.ceil(stopped - snapshot)}s"
    failed = box.query(f"count_over_time(up[{window}]) - sum_over_time(up[{window}])", at=stopped)
    prometheus_after = _firing(box)

    # 3. the marker: once it is told, the re-sent alerts have been through the chain
    fleet.set_gpus(MARKER[0], [MARKER[1]], xid=48)
    wait_for(lambda: _told(box, marker=True), what="the marker's message at the fakes", timeout=TIMEOUT)
    rows = wait_for(lambda: settled(router), what="no held alert and no pending delivery", timeout=TIMEOUT)
    assert rows is not None
    return Restart(
        box=box,
        router=router,
        prometheus_before=prometheus_before,
        prometheus_after=prometheus_after,
        resent=float(sent),
        stored_before=stored_before,
        stored_after=router.by_fingerprint(),
        incidents_before=incidents_before,
        incidents_after=_incidents(router),
        told_before=told_before,
        told_after=Vendored.of(box),
        notifications_before=notifications_before,
        notifications=rows,
        held_at_stop=_held_at(box, prometheus_before, stopped),
        up_at_stop={_target(s): s["value"][1] for s in box.query("up", at=stopped)},
        failed_scrapes={_target(s): int(float(s["value"][1])) for s in failed},
    )
