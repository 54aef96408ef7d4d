"""The incident API over a running app: decisions on alerts, incidents with their trail."""

from __future__ import annotations

import httpx

from alertrouter.runtime import Runtime
from support.scenario import gpu_labels, node_down_labels
from support.webhooks import webhook

from .conftest import AUTH


async def test_alert_decisions_and_incidents_are_exposed(app_client: tuple[httpx.AsyncClient, Runtime]) -> None:
    client, runtime = app_client
    gpus = [gpu_labels("gpu-node-07", g, region="north") for g in range(3)]
    payload = webhook([*gpus, node_down_labels("gpu-node-07")], starts_at="2026-01-01T00:00:00Z")
    r = await client.post("/webhook/alertmanager", content=payload, headers=AUTH)
    assert r.status_code == 200
    await runtime.engine.run_once()
    alerts = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    by_name = {(a["labels"]["alertname"], a["labels"].get("gpu")): a for a in alerts}
    node_down = by_name[("NodeDown", None)]
    gpu0 = by_name[("GPUHighTemp", "0")]
    assert gpu0["decision"] == "inhibited"
    assert gpu0["decision_detail"] == {"inhibited_by": node_down["fingerprint"], "inhibit_rule": "node-down-mutes-node"}
    assert gpu0["node"] == "gpu-node-07"
    assert node_down["decision"] == "notify"  # its first message waits for the group wait
    assert node_down["decision_detail"]["routed_to"] == ["oncall-core"]

    listed = (await client.get("/api/v1/incidents", params={"status": "firing"}, headers=AUTH)).json()
    headlines = {i["headline"] for i in listed["incidents"]}
    assert headlines == {"gpu-node-07: NodeDown", "gpu-node-07: GPUHighTemp on 3/8 GPUs"}
    gpu_incident = next(i for i in listed["incidents"] if "GPUHighTemp" in i["headline"])
    detail = (await client.get(f"/api/v1/incidents/{gpu_incident['id']}", headers=AUTH)).json()
    assert {a["decision"] for a in detail["alerts"]} == {"inhibited"}
    assert detail["notifications"] == []
    assert detail["incident"]["summary"]["muted"] == 3

    assert (await client.get("/api/v1/incidents/99999", headers=AUTH)).status_code == 404
    assert (await client.get("/api/v1/incidents")).status_code == 401
    metrics = (await client.get("/metrics")).text
    assert 'alertrouter_alerts_inhibited_total{rule="node-down-mutes-node"} 3.0' in metrics
    assert 'alertrouter_alert_decisions{decision="inhibited"} 3.0' in metrics
