"""The engine end to end: a real Alertmanager's webhooks in, decisions, incidents and outbox rows out."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.harness import TOKEN, Router, Store, gpu_labels, postable_alert, wait_for
from e2e.test_alertmanager_e2e import alertmanager_config, push
from support.procs import Proc

pytestmark = [pytest.mark.e2e, pytest.mark.alertmanager]

# The shipped rules' shape with short timers, so the test waits seconds, not minutes. The alerts start
# in the past, so Alertmanager flushes a group as soon as its first alert arrives and sends the rest one
# group_interval (1s) later: the aggregation's group_wait must outlast that, or the first message
# counts 1/8 GPUs.
RULES = """\
inhibit_rules:
  - name: node-down-mutes-node
    source_matchers: ['alertname="NodeDown"']
    target_matchers: ['alertname=~"GPU.*"']
    equal: [node]
    hold_down: 2s
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {label: gpu, per_group: 8}
    group_wait: 4s
route:
  receiver: digest
  group_wait: 1s
  group_interval: 5s
  routes:
    - {matchers: ['severity="critical"'], receiver: oncall}
    - {matchers: ['severity="warning"'], receiver: ops}
receivers: [{name: digest}, {name: oncall}, {name: ops}]
"""


def get(router: Router, path: str, **params: Any) -> Any:
    r = httpx.get(router.url + path, params=params, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def test_alertmanager_to_outbox(
    store: Store, start_router: Callable[..., Router], start_am: Callable[[str], Proc], tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "rules.yml").write_text(RULES)
    router = start_router(store, env={"ALERTROUTER_CONFIG": str(rules)})
    am = start_am(alertmanager_config(router.url, TOKEN))
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)

    hot = [gpu_labels(7, g) for g in range(8)]  # gpu-node-07: all 8 GPUs hot
    dead = [gpu_labels(8, g, alertname="GPUFallenOffBus", severity="critical") for g in range(8)]
    node_down = {
        "alertname": "NodeDown",
        "node": "gpu-node-08",
        "instance": "10.0.0.8:9100",
        "job": "node",
        "severity": "critical",
    }
    push(am, [postable_alert(lbl, starts_at=start) for lbl in [*hot, *dead]])
    push(am, [postable_alert(node_down, starts_at=start, annotations={"summary": "node-exporter is down"})])

    def outbox_ready() -> list[dict[str, Any]] | None:
        incidents = get(router, "/api/v1/incidents", status="firing")["incidents"]
        notified = [i for i in incidents if get(router, f"/api/v1/incidents/{i['id']}")["notifications"]]
        return incidents if len(notified) == 2 else None

    incidents = wait_for(outbox_ready, what="two incidents notified", timeout=60)
    by_headline = {i["headline"]: i for i in incidents}
    assert set(by_headline) == {
        "gpu-node-07: GPUHighTemp on 8/8 GPUs",
        "gpu-node-08: NodeDown",
        "gpu-node-08: GPUFallenOffBus on 8/8 GPUs",  # described, but muted: never notified
    }
    hot_path = f"/api/v1/incidents/{by_headline['gpu-node-07: GPUHighTemp on 8/8 GPUs']['id']}"

    def worked() -> dict[str, Any] | None:
        """The outbox row, once the delivery loop took it (these receivers have no channels)."""
        detail: dict[str, Any] = get(router, hot_path)
        return detail if detail["notifications"][0]["status"] != "pending" else None

    hot_detail = wait_for(worked, what="the outbox row worked by the delivery loop")
    (note,) = hot_detail["notifications"]
    assert (note["receiver"], note["reason"], note["status"]) == ("ops", "first", "no_channels")
    assert {a["decision"] for a in hot_detail["alerts"]} == {"aggregated"}
    down_detail = get(router, f"/api/v1/incidents/{by_headline['gpu-node-08: NodeDown']['id']}")
    assert [n["receiver"] for n in down_detail["notifications"]] == ["oncall"]
    dead_detail = get(router, f"/api/v1/incidents/{by_headline['gpu-node-08: GPUFallenOffBus on 8/8 GPUs']['id']}")
    assert dead_detail["notifications"] == []
    assert {a["decision"] for a in dead_detail["alerts"]} == {"inhibited"}
    assert {a["decision_detail"]["inhibit_rule"] for a in dead_detail["alerts"]} == {"node-down-mutes-node"}
