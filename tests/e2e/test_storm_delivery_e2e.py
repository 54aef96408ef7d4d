"""The 1,000-node storm through the real Alertmanager to fake robots: no robot over 20 messages a
minute, no message over its byte limit, every critical notification the engine decided on delivered."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import TOKEN, Router, Store, gpu_labels, postable_alert, wait_for
from e2e.test_alertmanager_e2e import alertmanager_config, push
from support.fakes.dingtalk import MAX_BODY_BYTES, FakeDingTalk
from support.fakes.server import Received
from support.fakes.wecom import FakeWeCom
from support.procs import Proc

pytestmark = [pytest.mark.e2e, pytest.mark.alertmanager]

CORE, OPS, KEY = "dt-core-7d1f", "dt-ops-2c8e", "wecom-core-91aa"  # literal test credentials
NODES, RACK = 1000, 40


def storm_rules(dingtalk: str, wecom: str) -> str:
    robot = "type: dingtalk, url: " + dingtalk + "/robot/send, timeout: 5s, retry: {initial: 1s, max: 5s}"
    return f"""\
inhibit_rules:
  - name: node-down-mutes-node
    source_matchers: ['alertname="NodeDown"']
    target_matchers: ['alertname=~"GPU.*"']
    equal: [node]
    hold_down: 3s
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {{label: gpu, per_group: 8}}
    group_wait: 4s
    group_interval: 10s
    rollup: {{threshold: 5, window: 2m, by: [alertname, region], scope_labels: [region, rack]}}
  - name: node
    matchers: ['alertname="NodeDown"']
    group_by: [alertname, node]
    group_wait: 4s
    rollup: {{threshold: 5, window: 2m, by: [alertname, region], scope_labels: [region, rack]}}
route:
  receiver: ops
  group_wait: 4s
  group_interval: 10s
  repeat_interval: 1h
  routes:
    - {{matchers: ['severity="critical"'], receiver: oncall}}
receivers:
  - {{name: oncall, channels: [core, wecom]}}
  - {{name: ops, channels: [ops]}}
channels:
  - {{name: core, {robot}, access_token: "${{CORE_TOKEN}}"}}
  - {{name: ops, {robot}, access_token: "${{OPS_TOKEN}}"}}
  - {{name: wecom, type: wecom, url: {wecom}/cgi-bin/webhook/send, key: "${{WECOM_KEY}}"}}
"""


def most_in_a_minute(requests: list[Received]) -> int:
    times = sorted(r.at for r in requests)
    return max((sum(1 for t in times[i:] if t - start < 60.0) for i, start in enumerate(times)), default=0)


def test_storm_stays_within_robot_limits_and_loses_no_critical(
    sqlite_store: Store,
    start_router: Callable[..., Router],
    start_am: Callable[[str], Proc],
    tmp_path: Path,
) -> None:
    with FakeDingTalk({CORE: None, OPS: None}) as dingtalk, FakeWeCom([KEY]) as wecom:
        rules = tmp_path / "rules"
        rules.mkdir()
        (rules / "rules.yml").write_text(storm_rules(dingtalk.url, wecom.url))
        env = {"ALERTROUTER_CONFIG": str(rules), "CORE_TOKEN": CORE, "OPS_TOKEN": OPS, "WECOM_KEY": KEY}
        router = start_router(sqlite_store, env=env)
        am = start_am(alertmanager_config(router.url, TOKEN))

        rack = [
            {**gpu_labels(n, g, alertname="GPUFallenOffBus", severity="critical"), "region": "north", "rack": "r12"}
            for n in range(RACK)
            for g in range(8)
        ]
        down = [
            {
                "alertname": "NodeDown",
                "node": f"gpu-node-{n:02d}",
                "instance": f"10.0.0.{n}:9100",
                "severity": "critical",
                "region": "north",
                "rack": "r12",
            }
            for n in range(RACK)
        ]
        heat = [
            {**gpu_labels(n, g), "region": "north" if n % 2 else "south"}
            for n in range(RACK, RACK + NODES)
            for g in range(8)
        ]
        alerts = [postable_alert(labels) for labels in [*rack, *heat]]
        alerts += [postable_alert(labels, annotations={"summary": "node-exporter is down"}) for labels in down]
        for i in range(0, len(alerts), 1000):
            push(am, alerts[i : i + 1000])

        def stored() -> bool:
            r = router.http.get("/api/v1/alerts", params={"limit": 1})
            return bool(r.status_code == 200 and r.json()["total"] == len(alerts))

        wait_for(stored, what=f"all {len(alerts)} alerts stored", timeout=180)

        def settled() -> list[dict[str, Any]] | None:
            """Every notification delivered, the critical ones (after their hold-down) included."""
            rows = router.http.get("/api/v1/notifications", params={"limit": 1000}).json()["notifications"]
            busy = [r for r in rows if r["status"] in ("pending", "sending")]
            critical = [r for r in rows if r["channel"] == "core"]
            return rows if critical and not busy else None

        wait_for(settled, what="every notification delivered", timeout=180)
        time.sleep(12)  # one more group_interval: updates the storm still causes are delivered too
        rows = wait_for(settled, what="every notification delivered", timeout=180)

        # nothing over a robot's limits, and the robots never refused anything
        assert dingtalk.rate.violations == []
        assert wecom.rate.violations == []
        for token in (CORE, OPS):
            assert most_in_a_minute([r for r in dingtalk.received if r.query.get("access_token") == token]) <= 20
        assert len(dingtalk.received) == len(dingtalk.accepted)
        assert len(wecom.received) == len(wecom.accepted)
        assert all(len(r.body) <= MAX_BODY_BYTES for r in dingtalk.received)
        for body in wecom.messages(KEY):
            assert len(body[body["msgtype"]]["content"].encode()) <= 4096

        # every critical notification the engine decided on reached the on-call robot, as itself or merged
        delivered = "\n".join(b[b["msgtype"]].get("text", "") for b in dingtalk.messages(CORE))
        critical = [r for r in rows if r["channel"] == "core" and r["kind"] != "coalesced"]
        assert critical, "the storm produced no critical notification"
        for row in critical:
            detail = router.http.get(f"/api/v1/notifications/{row['id']}").json()
            for item in detail["message"]["items"]:
                assert item["headline"] in delivered
        assert {r["status"] for r in rows} <= {"sent", "coalesced"}
        # and the storm is a handful of messages, not thousands
        assert len(dingtalk.accepted) + len(wecom.accepted) < 60
