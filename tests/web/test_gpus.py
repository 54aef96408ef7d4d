"""`GET /api/v1/gpus` and `/api/v1/gpus/{uuid}` over a running app: GPU events recorded as webhooks are
stored, keyed by each GPU's UUID, and the RMA verdict of the shipped `rma:` rules (rules/rma.yml)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from alertrouter.model import NAME_MAX, bounded, utcnow
from alertrouter.runtime import Runtime
from support.scenario import dcgm_labels
from support.webhooks import webhook

from .conftest import AUTH

Client = tuple[httpx.AsyncClient, Runtime]


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _post(client: httpx.AsyncClient, body: bytes) -> None:
    r = await client.post("/webhook/alertmanager", content=body, headers=AUTH)
    assert r.status_code == 200, r.text


async def test_a_second_xid_48_eleven_days_later_makes_an_rma_candidate(app_client: Client) -> None:
    client, _ = app_client
    now = utcnow().replace(microsecond=0)
    first, second = now - timedelta(days=11, hours=2), now - timedelta(hours=2)
    dbe = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="48")
    uuid = dbe["UUID"]
    await _post(client, webhook([dbe], starts_at=first))  # arrives now, started 11 days ago
    await _post(client, webhook([dbe], status="resolved", starts_at=first, ends_at=first + timedelta(minutes=20)))
    one = (await client.get(f"/api/v1/gpus/{uuid}", headers=AUTH)).json()
    assert (one["rma_candidate"], one["reason"], len(one["events"])) == (False, "", 1)
    await _post(client, webhook([dbe], starts_at=second))  # the same alert fires again: a new episode
    await _post(client, webhook([dbe], starts_at=second))  # re-sent: the same event
    body = (await client.get("/api/v1/gpus", headers=AUTH)).json()
    assert (body["total"], body["limit"], body["offset"]) == (1, 100, 0)
    gpu = body["gpus"][0]
    assert gpu["uuid"] == uuid == "GPU-gpu-node-07-3"
    assert (gpu["node"], gpu["gpu"], gpu["model"], gpu["serial"]) == ("gpu-node-07", "3", "NVIDIA H100 80GB HBM3", None)
    assert gpu["pci_bus_id"] == "00000000:1B:00.0"
    events = [(e["xid"], e["alertname"], e["at"]) for e in gpu["events"]]
    assert events == [(48, "GPUXidError", _iso(first)), (48, "GPUXidError", _iso(second))]
    assert gpu["rma_candidate"] is True
    assert gpu["reason"] == "Xid 48 twice in 11 days (rule dbe-repeated)"
    assert (gpu["rma_rule"], gpu["rma_rules"]) == ("dbe-repeated", ["dbe-repeated"])
    assert [e["at"] for e in gpu["evidence"]] == [_iso(first), _iso(second)]
    assert gpu["conflict"] is False
    assert (await client.get(f"/api/v1/gpus/{uuid}", headers=AUTH)).json() == gpu


async def test_only_gpu_alerts_with_an_xid_or_an_rma_alertname_and_a_uuid_are_recorded(app_client: Client) -> None:
    client, runtime = app_client
    start = utcnow().replace(microsecond=0) - timedelta(hours=1)
    no_uuid = {k: v for k, v in dcgm_labels("10.0.0.8", "gpu-node-08", 1, xid="79").items() if k != "UUID"}
    alerts = [
        dcgm_labels("10.0.0.7", "gpu-node-07", 0, xid="13"),  # an application fault: recorded, no candidate
        dcgm_labels("10.0.0.7", "gpu-node-07", 1, alertname="GPUHighTemp"),  # no Xid, not an RMA alert
        dcgm_labels("10.0.0.7", "gpu-node-07", 2, alertname="GPURowRemapFailure"),  # no Xid, an RMA alert
        no_uuid,  # no history key
        dcgm_labels("10.0.0.7", "gpu-node-07", 4, xid="0"),  # dcgm's "no Xid since the reset"
        dcgm_labels("10.0.0.7", "gpu-node-07", 5, xid="48", UUID="GPU-" + "f" * 4000),  # no real UUID is this long
        dcgm_labels("10.0.0.7", "gpu-node-07", 6, xid="48", modelName="H" * 4000, Hostname="n" * 4000),
    ]
    await _post(client, webhook(alerts, starts_at=start))
    body = (await client.get("/api/v1/gpus", headers=AUTH)).json()
    assert [(g["uuid"], g["rma_candidate"]) for g in body["gpus"]] == [  # by node, then index
        ("GPU-gpu-node-07-0", False),
        ("GPU-gpu-node-07-2", True),
        ("GPU-gpu-node-07-6", False),
    ]
    # values longer than a column are left out, never cut; the node is cut as the engine cuts it
    assert (body["gpus"][2]["model"], body["gpus"][2]["node"]) == (None, bounded("n" * 4000, NAME_MAX))
    await runtime.engine.run_once()
    alerts = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    assert body["gpus"][2]["node"] in {a["node"] for a in alerts}
    remap = body["gpus"][1]
    assert remap["events"] == [{"xid": None, "alertname": "GPURowRemapFailure", "at": _iso(start)}]
    assert remap["reason"] == "GPURowRemapFailure once (rule row-remap-failure)"
    rma = (await client.get("/api/v1/gpus", params={"rma": "true"}, headers=AUTH)).json()
    assert (rma["total"], [g["uuid"] for g in rma["gpus"]]) == (1, ["GPU-gpu-node-07-2"])
    page = (await client.get("/api/v1/gpus", params={"limit": 1, "offset": 1}, headers=AUTH)).json()
    assert (page["total"], [g["uuid"] for g in page["gpus"]]) == (3, ["GPU-gpu-node-07-2"])


async def test_two_gpus_claiming_one_uuid_are_flagged_not_merged(app_client: Client) -> None:
    client, _ = app_client
    now = utcnow().replace(microsecond=0)
    a = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="79", UUID="GPU-cloned")
    b = dcgm_labels("10.0.0.9", "gpu-node-09", 5, xid="79", UUID="GPU-cloned")
    a2 = {**a, "xid": "48"}
    for labels, hours in ((a, 5), (b, 4), (a2, 3)):
        await _post(client, webhook([labels], starts_at=now - timedelta(hours=hours)))
    gpu = (await client.get("/api/v1/gpus/GPU-cloned", headers=AUTH)).json()
    assert [(e["xid"], e["at"]) for e in gpu["events"]] == [
        (79, _iso(now - timedelta(hours=5))),
        (79, _iso(now - timedelta(hours=4))),
        (48, _iso(now - timedelta(hours=3))),
    ]
    assert (gpu["node"], gpu["gpu"]) == ("gpu-node-07", "3")  # the latest sighting
    assert [(p["node"], p["gpu"], p["events"]) for p in gpu["places"]] == [
        ("gpu-node-07", "3", 2),
        ("gpu-node-09", "5", 1),
    ]
    assert gpu["conflict"] is True
    assert gpu["reason"] == (
        "Xid 79 twice in 1 hour (rule fallen-off-bus-repeated); "
        "UUID seen at 2 places at once (gpu-node-07 GPU 3, gpu-node-09 GPU 5): two GPUs may claim it"
    )


async def test_reads_need_the_read_credential_and_an_unknown_uuid_is_404(app_client: Client) -> None:
    client, _ = app_client
    assert (await client.get("/api/v1/gpus")).status_code == 401
    assert (await client.get("/api/v1/gpus/GPU-x")).status_code == 401
    r = await client.get("/api/v1/gpus/GPU-never-seen", headers=AUTH)
    assert (r.status_code, r.json()["detail"]) == (404, "no GPU with UUID 'GPU-never-seen'")
    assert (await client.get(f"/api/v1/gpus/GPU-{'x' * 300}", headers=AUTH)).status_code == 404
    bad = await client.get("/api/v1/gpus", params={"rma": "maybe"}, headers=AUTH)
    assert bad.status_code == 400
    assert "rma" in bad.json()["detail"]
