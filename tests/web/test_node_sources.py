"""`node_source` in `GET /api/v1/alerts` and `GET /api/v1/nodes` (both stores): what named each alert's node
when dcgm-exporter says `Hostname="localhost"`, a real name, or (older GPU Operator charts) the pod's name."""

from __future__ import annotations

import httpx

from alertrouter.runtime import Runtime
from support.scenario import dcgm_labels, k8s_dcgm_labels, node_exporter_down_labels
from support.webhooks import webhook

from .conftest import AUTH

POD = "nvidia-dcgm-exporter-5xk2p"
LOCALHOST = dcgm_labels("10.0.0.7", "localhost", 0)
NAMED = dcgm_labels("10.0.0.8", "gpu-node-08", 0)
K8S = {
    **{k: v for k, v in k8s_dcgm_labels("gpu-node-09", "10.244.9.23", 0).items() if k != "node"},
    "Hostname": POD,
    "pod": POD,
    "kubernetes_node": "gpu-node-09",
}
EXPECTED = {
    ("GPUXidError", "10.0.0.7:9400"): ("10.0.0.7", "instance"),  # `localhost` passed over
    ("GPUXidError", "10.0.0.8:9400"): ("gpu-node-08", "label:Hostname"),
    ("NodeDown", "10.0.0.8:9100"): ("gpu-node-08", "learned"),  # from the dcgm alert on 10.0.0.8
    ("GPUHighTemp", "10.244.9.23:9400"): ("gpu-node-09", "label:kubernetes_node"),  # the pod's name passed over
}


async def send(client: httpx.AsyncClient, alerts: list[dict[str, str]]) -> None:
    r = await client.post("/webhook/alertmanager", content=webhook(alerts), headers=AUTH)
    assert r.status_code == 200


async def test_each_alert_and_node_says_what_named_it(app_client: tuple[httpx.AsyncClient, Runtime]) -> None:
    client, runtime = app_client
    await send(client, [LOCALHOST, NAMED, K8S])
    await runtime.engine.run_once()
    await send(client, [node_exporter_down_labels("10.0.0.8")])
    await runtime.engine.run_once()
    alerts = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    named = {(a["alertname"], a["labels"]["instance"]): (a["node"], a["node_source"]) for a in alerts}
    assert named == EXPECTED
    body = (await client.get("/api/v1/nodes", headers=AUTH)).json()
    assert body["named"] == [
        {"node": "10.0.0.7", "node_source": "instance", "alerts": 1},
        {"node": "gpu-node-08", "node_source": "label:Hostname", "alerts": 1},
        {"node": "gpu-node-08", "node_source": "learned", "alerts": 1},
        {"node": "gpu-node-09", "node_source": "label:kubernetes_node", "alerts": 1},
    ]
    assert body["named_total"] == 4
    page = (await client.get("/api/v1/nodes", params={"limit": 1, "offset": 3}, headers=AUTH)).json()
    assert [n["node"] for n in page["named"]] == ["gpu-node-09"]
    [one] = [a for a in alerts if a["labels"]["instance"] == "10.0.0.7:9400"]
    detail = (await client.get(f"/api/v1/alerts/{one['fingerprint']}", headers=AUTH)).json()
    assert (detail["alert"]["node"], detail["alert"]["node_source"]) == ("10.0.0.7", "instance")
