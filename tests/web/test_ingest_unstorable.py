"""A payload the store refuses for its own values (a data error, not an outage) is answered 500 for that
payload alone: not 503, which would have Alertmanager retry it forever, and the next payload is stored."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import exc
from web.conftest import AUTH

from alertrouter.ingest.batch import IngestBatch, IngestResult
from alertrouter.runtime import Runtime
from support.webhooks import webhook

XID = {"alertname": "GPUXidError", "Hostname": "gpu-node-07", "gpu": "3", "xid": "79", "severity": "critical"}


async def test_a_payload_the_store_refuses_is_500_and_the_next_is_stored(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    client, runtime = app_client
    ingest = runtime.ingestor.ingest
    refused: list[int] = []

    async def refuse_gpu_node_07(batch: IngestBatch) -> IngestResult:
        if any(a.labels.get("Hostname") == "gpu-node-07" for a in batch.alerts):
            refused.append(len(batch.alerts))
            raise exc.DataError("INSERT INTO alerts ...", {}, ValueError("value out of range"))
        return await ingest(batch)

    runtime.ingestor.ingest = refuse_gpu_node_07  # type: ignore[method-assign]
    bad = await client.post("/webhook/alertmanager", content=webhook([XID]), headers=AUTH)
    assert (bad.status_code, bad.json()) == (
        500,
        {"error": "this payload could not be stored; the server logged why"},
    )
    assert "Retry-After" not in bad.headers
    good = await client.post(
        "/webhook/alertmanager", content=webhook([XID | {"Hostname": "gpu-node-08"}]), headers=AUTH
    )
    assert good.status_code == 200, good.text
    assert refused == [1]
    listed: list[dict[str, Any]] = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    assert [a["labels"]["Hostname"] for a in listed] == ["gpu-node-08"]
    text = (await client.get("/metrics")).text
    assert 'alertrouter_webhooks_received_total{endpoint="webhook",result="error"} 1.0' in text
    assert 'alertrouter_db_errors_total{operation="ingest"} 1.0' in text
