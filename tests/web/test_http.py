"""The HTTP edges in-process (real app, real database): status codes, auth, limits, filters, ops."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from alertrouter.app import create_app
from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings

REPO = Path(__file__).resolve().parents[2]
FIXTURE = (REPO / "tests" / "fixtures" / "webhook_gpu_temp_firing.json").read_bytes()
TOKEN = "am-token-5f1c-0123456"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        database_url=database_url,
        bearer_token=TOKEN,
        basic_username="am",
        basic_password="pw:with:colons-0123",
        max_body_bytes=64 * 1024,
    )
    app = create_app(settings, load_ruleset(REPO / "rules", {}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ar") as c:
            yield c


async def total(client: httpx.AsyncClient) -> int:
    r = await client.get("/api/v1/alerts", headers=BEARER)
    assert r.status_code == 200
    n: int = r.json()["total"]
    return n


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def test_webhook_stored_and_listed(client: httpx.AsyncClient) -> None:
    r = await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ok", "alerts": 3}
    listed = (await client.get("/api/v1/alerts", headers=BEARER)).json()
    assert listed["total"] == 3
    detail = (await client.get("/api/v1/alerts/1a2b3c4d5e6f7081", headers=BEARER)).json()
    assert detail["alert"]["labels"]["gpu"] == "0"
    assert [e["kind"] for e in detail["events"]] == ["firing"]
    assert len(detail["episodes"]) == 1


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="none"),
        pytest.param({"Authorization": "Bearer wrong"}, id="wrong-bearer"),
        pytest.param({"Authorization": f"Bearer {TOKEN}x"}, id="bearer-prefix"),
        pytest.param(basic("am", "wrong"), id="wrong-password"),
        pytest.param(basic("mallory", "pw:with:colons-0123"), id="wrong-user"),
        pytest.param({"Authorization": "Basic !!!"}, id="garbage-basic"),
        pytest.param({"Authorization": f"Token {TOKEN}"}, id="unknown-scheme"),
    ],
)
async def test_wrong_credentials_are_401_and_store_nothing(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    for path in ("/webhook/alertmanager", "/api/v2/alerts"):
        r = await client.post(path, content=FIXTURE, headers=headers)
        assert r.status_code == 401
        assert "Bearer" in r.headers["www-authenticate"]
    assert (await client.get("/api/v1/alerts", headers=headers)).status_code == 401
    assert await total(client) == 0


async def test_basic_auth_accepted(client: httpx.AsyncClient) -> None:
    r = await client.post("/webhook/alertmanager", content=FIXTURE, headers=basic("am", "pw:with:colons-0123"))
    assert r.status_code == 200


async def test_oversized_body_is_413_with_or_without_length(client: httpx.AsyncClient) -> None:
    big = json.dumps({"version": "4", "alerts": [], "pad": "x" * 70_000}).encode()
    r = await client.post("/webhook/alertmanager", content=big, headers=BEARER)
    assert r.status_code == 413

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    r = await client.post("/webhook/alertmanager", content=chunks(), headers=BEARER)
    assert r.status_code == 413
    assert await total(client) == 0


async def test_bad_payload_is_400_naming_the_field(client: httpx.AsyncClient) -> None:
    data: dict[str, Any] = json.loads(FIXTURE)
    data["alerts"][0]["labels"]["gpu"] = 0
    r = await client.post("/webhook/alertmanager", content=json.dumps(data), headers=BEARER)
    assert r.status_code == 400
    assert r.json()["problems"] == ["alerts[0].labels.gpu: Input should be a valid string"]
    # the two valid alerts of the batch were kept: a 4xx is never retried by Alertmanager
    assert await total(client) == 2
    r = await client.post("/api/v2/alerts", content=b"{", headers=BEARER)
    assert r.status_code == 400
    assert "invalid JSON" in r.json()["problems"][0]


async def test_filters_status_and_paging(client: httpx.AsyncClient) -> None:
    await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)
    push = [{"labels": {"alertname": "NodeDown", "instance": f"10.0.0.{i}:9100", "region": "south"}} for i in range(5)]
    assert (await client.post("/api/v2/alerts", json=push, headers=BEARER)).status_code == 200

    async def fetch(**params: Any) -> dict[str, Any]:
        r = await client.get("/api/v1/alerts", params=params, headers=BEARER)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    assert (await fetch())["total"] == 8
    assert (await fetch(status="resolved"))["total"] == 1
    assert (await fetch(filter='alertname="NodeDown"'))["total"] == 5
    assert (await fetch(filter='{alertname="GPUHighTemp", gpu=~"0|1"}'))["total"] == 2
    assert (await fetch(filter=['region=~"north|south"', 'gpu!=""']))["total"] == 3
    page = await fetch(filter='alertname="NodeDown"', limit=2, offset=4)
    assert (page["total"], len(page["alerts"])) == (5, 1)
    r = await client.get("/api/v1/alerts", params={"filter": 'gpu=~"("'}, headers=BEARER)
    assert r.status_code == 400
    assert 'gpu=~"("' in r.json()["detail"]
    assert (await client.get("/api/v1/alerts/0000000000000000", headers=BEARER)).status_code == 404


async def test_ops_endpoints(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)
    await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)
    await client.post("/webhook/alertmanager", content=FIXTURE)
    text = (await client.get("/metrics")).text
    assert 'alertrouter_webhooks_received_total{endpoint="webhook",result="stored"} 1.0' in text
    assert 'alertrouter_webhooks_received_total{endpoint="webhook",result="repeat"} 1.0' in text
    assert 'alertrouter_webhooks_received_total{endpoint="webhook",result="unauthorized"} 1.0' in text
    assert 'alertrouter_alerts{state="firing"} 2.0' in text
    assert 'alertrouter_alert_transitions_total{kind="new_firing"} 2.0' in text
    assert "alertrouter_ingest_duration_seconds_bucket" in text
    assert "alertrouter_config_hash{hash=" in text
    assert TOKEN not in text


async def test_openapi_documents_the_endpoints(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    for path in ("/webhook/alertmanager", "/api/v2/alerts", "/api/v1/alerts", "/api/v1/alerts/{fingerprint}"):
        assert path in paths


async def test_raw_events_keep_the_original_body(client: httpx.AsyncClient) -> None:
    await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)
    await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)  # a repeat is not logged twice
    listed = (await client.get("/api/v1/raw-events", headers=BEARER)).json()
    assert len(listed) == 1
    assert (listed[0]["source"], listed[0]["alert_count"], listed[0]["body"]) == ("webhook", 3, None)
    one = (await client.get(f"/api/v1/raw-events/{listed[0]['id']}", headers=BEARER)).json()
    assert one["body"].encode() == FIXTURE
    assert (await client.get("/api/v1/raw-events")).status_code == 401
    assert (await client.get("/api/v1/raw-events/999", headers=BEARER)).status_code == 404


async def test_a_byte_identical_webhook_resend_is_answered_without_parsing(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)).status_code == 200

    def unparsable(body: bytes) -> Any:
        raise AssertionError("a committed webhook re-sent byte for byte was parsed again")

    monkeypatch.setattr("alertrouter.web.receive.parse_webhook", unparsable)
    again = await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)
    assert (again.status_code, again.json()) == (200, {"status": "ok", "alerts": 3})
    assert (await client.post("/webhook/alertmanager", content=FIXTURE)).status_code == 401  # still authenticated
    text = (await client.get("/metrics")).text
    assert 'alertrouter_webhooks_received_total{endpoint="webhook",result="repeat"} 1.0' in text
    assert 'alertrouter_alerts_received_total{endpoint="webhook"} 6.0' in text


@pytest.mark.parametrize("path", ["/webhook/alertmanager", "/api/v2/alerts"])
async def test_ingest_requests_stay_on_the_event_loop(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """No worker-thread hop per request (FastAPI runs a plain `def` dependency in its thread pool)."""

    async def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"an ingest request went through the thread pool: {args[:1]}")

    monkeypatch.setattr("fastapi.dependencies.utils.run_in_threadpool", no_thread)
    monkeypatch.setattr("fastapi.routing.run_in_threadpool", no_thread)
    body = FIXTURE if path == "/webhook/alertmanager" else json.dumps(json.loads(FIXTURE)["alerts"]).encode()
    response = await client.post(path, content=body, headers=BEARER)
    assert response.status_code == 200, response.text


async def test_reads_by_id_stay_on_the_event_loop(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The id dependencies (path and query) run on the event loop too."""
    assert (await client.post("/webhook/alertmanager", content=FIXTURE, headers=BEARER)).status_code == 200

    async def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a read went through the thread pool: {args[:1]}")

    monkeypatch.setattr("fastapi.dependencies.utils.run_in_threadpool", no_thread)
    monkeypatch.setattr("fastapi.routing.run_in_threadpool", no_thread)
    event_id = (await client.get("/api/v1/raw-events", headers=BEARER)).json()[0]["id"]
    assert (await client.get(f"/api/v1/raw-events/{event_id}", headers=BEARER)).status_code == 200
    assert (await client.get("/api/v1/raw-events", params={"before_id": event_id + 1}, headers=BEARER)).json()
    assert (await client.get("/api/v1/incidents/999999", headers=BEARER)).status_code == 404
