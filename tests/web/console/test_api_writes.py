"""JSON API writes: acknowledge, silences, dead letters; validation errors name the field."""

from __future__ import annotations

import pytest

from support.scenario import gpu_labels

from .conftest import HOOK, TOKEN, App
from .deliveries import add_delivery

GPU = [gpu_labels("gpu-node-07", g, region="north") for g in range(2)]


async def test_acknowledge(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers=TOKEN)
    assert r.status_code == 200
    body = r.json()
    assert body["acknowledged_at"] is not None
    first = body["acknowledged_at"]
    again = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers=TOKEN)
    assert again.json()["acknowledged_at"] == first  # already acknowledged: unchanged
    assert (await app.client.post("/api/v1/incidents/999999/ack", headers=TOKEN)).status_code == 404


async def test_acknowledging_a_resolved_incident_is_a_conflict(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    await app.seed(GPU, status="resolved")
    r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers=TOKEN)
    assert r.status_code == 409
    detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
    assert detail["incident"]["acknowledged_at"] is None


async def test_silence_lifecycle(app: App) -> None:
    r = await app.client.post(
        "/api/v1/silences",
        json={"matchers": ['node="gpu-node-07"', 'alertname=~"GPU.*"'], "duration": "2h", "comment": "maintenance"},
        headers=TOKEN,
    )
    assert r.status_code == 201, r.text
    silence = r.json()
    assert silence["matchers"] == ['node="gpu-node-07"', 'alertname=~"GPU.*"']
    assert silence["created_by"] == "token:ci"
    assert silence["state"] == "active"
    listed = (await app.client.get("/api/v1/silences", headers=HOOK)).json()
    assert [s["id"] for s in listed] == [silence["id"]]
    assert (await app.client.delete(f"/api/v1/silences/{silence['id']}", headers=TOKEN)).status_code == 200
    assert (await app.client.get("/api/v1/silences", headers=TOKEN)).json() == []
    expired = (await app.client.get("/api/v1/silences?expired=true", headers=TOKEN)).json()
    assert [s["state"] for s in expired] == ["expired"]
    assert (await app.client.delete(f"/api/v1/silences/{silence['id']}", headers=TOKEN)).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"matchers": ['node="unclosed'], "duration": "1h"}, "matchers"),
        ({"matchers": ['node=~""'], "duration": "1h"}, "matchers"),
        ({"matchers": [], "duration": "1h"}, "matchers"),
        ({"matchers": ['node="a"']}, "duration"),
        ({"matchers": ['node="a"'], "duration": "soon"}, "duration"),
        ({"matchers": ['node="a"'], "duration": "1000d"}, "duration"),
        ({"matchers": ['node="a"'], "ends_at": "2001-01-01T00:00:00Z"}, "ends_at"),
        ({"matchers": 'node="a"', "duration": "1h"}, "matchers"),
        ({"matchers": ['node="a"'], "duration": "1h", "extra": 1}, "extra"),
    ],
)
async def test_bad_silences_are_refused_naming_the_field(app: App, body: dict[str, object], field: str) -> None:
    r = await app.client.post("/api/v1/silences", json=body, headers=TOKEN)
    assert r.status_code == 400, r.text
    assert r.json()["detail"].startswith(field), r.json()
    assert (await app.client.get("/api/v1/silences", headers=TOKEN)).json() == []


async def test_invalid_json_is_a_400(app: App) -> None:
    r = await app.client.post("/api/v1/silences", content=b"{nope", headers=TOKEN)
    assert r.status_code == 400


async def test_dead_letters_retry_and_discard(app: App) -> None:
    dead = await add_delivery(app.runtime, incident_id=None, unexpected_failures=5)
    other = await add_delivery(app.runtime, incident_id=None)
    pending = await add_delivery(app.runtime, incident_id=None, status="pending", errors=())
    assert (await app.client.post(f"/api/v1/deliveries/{dead}/retry", headers=HOOK)).status_code == 403
    r = await app.client.post(f"/api/v1/deliveries/{dead}/retry", headers=TOKEN)
    assert r.status_code == 200
    note = (await app.client.get(f"/api/v1/notifications/{dead}", headers=TOKEN)).json()["notification"]
    assert (note["status"], note["attempts"]) == ("pending", 0)
    assert note["unexpected_failures"] == 0  # a fresh budget: not dead again at the next unexpected failure
    assert (await app.client.post(f"/api/v1/deliveries/{other}/discard", headers=TOKEN)).status_code == 200
    note = (await app.client.get(f"/api/v1/notifications/{other}", headers=TOKEN)).json()["notification"]
    assert note["status"] == "discarded"
    r = await app.client.post(f"/api/v1/deliveries/{pending}/discard", headers=TOKEN)
    assert r.status_code == 409
    assert "pending" in r.json()["detail"]
    assert (await app.client.post("/api/v1/deliveries/987654/retry", headers=TOKEN)).status_code == 404
    assert (await app.client.post(f"/api/v1/deliveries/{dead}/explode", headers=TOKEN)).status_code == 404


OTEL = {
    "alertname": "HighLatency",
    "service.name": "checkout",
    "k8s.namespace.name": "shop",
    "k8s.pod.name": "checkout-7d9f8b6c5-x2x4q",
    "severity": "warning",
}


async def test_silences_take_alertmanagers_utf8_matchers(app: App) -> None:
    """Written as an Alertmanager 0.28+ user writes them; stored in the form both grammars read back."""
    await app.seed([OTEL])
    r = await app.client.post(
        "/api/v1/silences",
        json={"matchers": ['{"service.name"="checkout", k8s.pod.name=~"checkout-.*"}'], "duration": "1h"},
        headers=TOKEN,
    )
    assert r.status_code == 201, r.text
    assert r.json()["matchers"] == ['service.name="checkout"', 'k8s.pod.name=~"checkout-.*"']
    await app.runtime.engine.run_once()
    (listed,) = (await app.client.get("/api/v1/silences", headers=TOKEN)).json()
    assert listed["muting"] == 1
    (alert,) = (await app.client.get("/api/v1/alerts", headers=TOKEN)).json()["alerts"]
    assert alert["decision"] == "silenced"
    filtered = await app.client.get("/api/v1/alerts", params={"filter": '"k8s.namespace.name"="shop"'}, headers=TOKEN)
    assert filtered.json()["total"] == 1
