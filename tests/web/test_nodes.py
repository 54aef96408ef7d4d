"""`GET /api/v1/nodes` over a running app: what was learned from real exporter labels, and conflicts."""

from __future__ import annotations

from datetime import timedelta

import httpx

from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.ruleset.topology import PrometheusLookupConfig
from alertrouter.runtime import Runtime
from support.promql import answer_bytes
from support.scenario import dcgm_labels, node_exporter_down_labels
from support.webhooks import webhook

from .conftest import AUTH


async def test_learned_addresses_and_a_conflict_are_listed(app_client: tuple[httpx.AsyncClient, Runtime]) -> None:
    client, runtime = app_client
    assert (await client.get("/api/v1/nodes")).status_code == 401  # read access, like the other reads
    first = [dcgm_labels("10.0.0.7", "gpu-node-07", 0), dcgm_labels("10.0.0.8", "gpu-node-08", 0)]
    payload = webhook(first, starts_at="2026-01-01T00:00:00Z")
    r = await client.post("/webhook/alertmanager", content=payload, headers=AUTH)
    assert r.status_code == 200
    await runtime.engine.run_once()
    # 10.0.0.7 is re-used by another machine; its alerts (two GPUs) started later, so their claim wins
    later = [*(dcgm_labels("10.0.0.7", "gpu-node-70", g) for g in (1, 2)), node_exporter_down_labels("10.0.0.7")]
    payload = webhook(later, starts_at="2026-01-01T01:00:00Z")
    r = await client.post("/webhook/alertmanager", content=payload, headers=AUTH)
    assert r.status_code == 200
    await runtime.engine.run_once()
    body = (await client.get("/api/v1/nodes", headers=AUTH)).json()
    assert body["total"] == 2
    assert body["learned_alias_ttl_seconds"] == 7 * 86400
    listed = {a["address"]: a for a in body["addresses"]}
    assert [a["node"] for a in body["addresses"]] == ["gpu-node-08", "gpu-node-70"]  # by node
    seven = listed["10.0.0.7"]
    assert (seven["node"], seven["previous_node"], seven["state"]) == ("gpu-node-70", "gpu-node-07", "learned")
    assert seven["changed_at"] is not None
    assert seven["learned_from"] == "GPUXidError"
    assert listed["10.0.0.8"]["previous_node"] is None
    alerts = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    assert {a["node"] for a in alerts if a["alertname"] == "NodeDown"} == {"gpu-node-70"}


async def test_discovered_addresses_are_listed_next_to_learned_and_configured_ones(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    """A learned address that the Prometheus lookup also maps is shown as overridden by it."""
    client, runtime = app_client
    taught = [dcgm_labels("10.0.0.7", "gpu-node-07-old", 0)]
    payload = webhook(taught, starts_at="2026-01-01T00:00:00Z")
    r = await client.post("/webhook/alertmanager", content=payload, headers=AUTH)
    assert r.status_code == 200
    await runtime.engine.run_once()

    def prometheus(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=answer_bytes(request.url.params["query"]))

    config = PrometheusLookupConfig(url="http://prometheus:9090")
    async with httpx.AsyncClient(transport=httpx.MockTransport(prometheus)) as http:
        runtime.lookup = PrometheusLookup(config, keep_for=timedelta(days=7), client=http)
        await runtime.lookup.refresh()
        body = (await client.get("/api/v1/nodes", params={"limit": 3}, headers=AUTH)).json()
    [learned] = body["addresses"]
    assert (learned["address"], learned["source"], learned["state"]) == ("10.0.0.7", "learned", "prometheus")
    assert learned["discovered_node"] == "gpu-node-07"
    assert body["discovered_total"] == 9
    assert [(d["node"], d["key"]) for d in body["discovered"]] == [
        ("gpu-node-07", "10.0.0.7"),
        ("gpu-node-07", "10.244.7.23"),
        ("gpu-node-07", "nvidia-dcgm-exporter-5xk2p"),
    ]  # a page, by node then key
    first = body["discovered"][0]
    assert (first["source"], first["series"], first["kind"]) == ("prometheus", "kube_node_info", "address")
    assert first["labels"] == {"region": "north", "zone": "north-a", "rack": "r12"}
    assert body["prometheus"]["url"] == "http://prometheus:9090"
    assert {s["series"] for s in body["prometheus"]["series"] if s["last_success"]} == {
        "node_uname_info",
        "kube_node_info",
        "kube_pod_info",
        "kube_node_labels",
    }
    assert body["configured"] == []  # the shipped rules configure no alias


async def test_a_held_move_is_listed_and_counted(app_client: tuple[httpx.AsyncClient, Runtime]) -> None:
    """One warning alert says 10.0.0.7 is gpu-node-08 while it is learned as gpu-node-07: the address
    stays gpu-node-07, shown `held` with the name and the alert claiming it, and counted."""
    client, runtime = app_client
    taught = [dcgm_labels("10.0.0.7", "gpu-node-07", 0), dcgm_labels("10.0.0.8", "gpu-node-08", 0)]
    r = await client.post(
        "/webhook/alertmanager", content=webhook(taught, starts_at="2026-01-01T00:00:00Z"), headers=AUTH
    )
    assert r.status_code == 200
    await runtime.engine.run_once()
    attack = {
        "alertname": "NodeFilesystemSpaceFillingUp",
        "instance": "10.0.0.7:9100",
        "job": "node",
        "device": "/dev/nvme0n1p2",
        "fstype": "ext4",
        "mountpoint": "/",
        "severity": "warning",
        "node": "gpu-node-08",
    }
    later = [attack, node_exporter_down_labels("10.0.0.7")]
    r = await client.post(
        "/webhook/alertmanager", content=webhook(later, starts_at="2026-01-01T01:00:00Z"), headers=AUTH
    )
    assert r.status_code == 200
    await runtime.engine.run_once()
    body = (await client.get("/api/v1/nodes", headers=AUTH)).json()
    assert (body["total"], body["held_total"]) == (2, 1)
    seven = {a["address"]: a for a in body["addresses"]}["10.0.0.7"]
    assert (seven["node"], seven["state"], seven["previous_node"]) == ("gpu-node-07", "held", None)
    alerts = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    (claiming,) = [a for a in alerts if a["alertname"] == "NodeFilesystemSpaceFillingUp"]
    assert (seven["held_node"], seven["held_from"], seven["held_fingerprint"]) == (
        "gpu-node-08",
        "NodeFilesystemSpaceFillingUp",
        claiming["fingerprint"],
    )
    assert seven["held_since"] is not None
    assert {a["node"] for a in alerts if a["alertname"] == "NodeDown"} == {"gpu-node-07"}
    metrics = (await client.get("/metrics")).text
    assert "alertrouter_node_alias_conflicts_total 1.0" in metrics
    assert "alertrouter_node_alias_held 1.0" in metrics
