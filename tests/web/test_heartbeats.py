"""The heartbeat endpoints over a running app with the shipped rules, and the Watchdog at the webhook."""

from __future__ import annotations

import base64

import httpx
from sqlalchemy import select

from alertrouter.app import create_app
from alertrouter.ruleset import load_ruleset
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings
from alertrouter.store.tables import AlertRow, RawEventRow
from support.webhooks import webhook

from .conftest import AUTH, REPO

# The shipped Watchdog as Alertmanager sends it: its labels, annotation and start.
WATCHDOG = {"alertname": "Watchdog", "severity": "none"}
SUMMARY = {"summary": "An alert that should always be firing"}
STARTED = "2026-11-21T07:00:00Z"


async def test_a_post_needs_the_webhook_credentials_and_a_configured_name(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    client, _ = app_client
    r = await client.post("/api/v1/heartbeats/prometheus")
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert (
        await client.post("/api/v1/heartbeats/prometheus", headers={"Authorization": "Bearer wrong"})
    ).status_code == 401
    r = await client.post("/api/v1/heartbeats/prometheus-nowhere", headers=AUTH)
    assert r.status_code == 404
    assert r.json()["error"] == (
        "no heartbeat named 'prometheus-nowhere' in the rules' heartbeats section (configured: prometheus)"
    )
    r = await client.post("/api/v1/heartbeats/prometheus", headers=AUTH)
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "heartbeat": "prometheus"}


async def test_the_list_shows_each_heartbeat_and_how_it_was_last_heard(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    client, _ = app_client
    assert (await client.get("/api/v1/heartbeats")).status_code == 401  # read access, like the other reads
    (before,) = (await client.get("/api/v1/heartbeats", headers=AUTH)).json()["heartbeats"]
    # never heard from: waiting, with no time at which it would be lost
    assert (before["name"], before["state"], before["last_seen"], before["deadline"]) == (
        "prometheus",
        "waiting",
        None,
        None,
    )
    assert before["matchers"] == ['alertname="Watchdog"']
    assert before["timeout_seconds"] == 300
    assert (await client.post("/api/v1/heartbeats/prometheus", headers=AUTH)).status_code == 200
    (after,) = (await client.get("/api/v1/heartbeats", headers=AUTH)).json()["heartbeats"]
    assert after["seen_via"] == "http"
    assert after["last_seen"] is not None
    assert after["state"] == "ok"
    assert after["deadline"] is not None


async def test_the_watchdog_refreshes_its_heartbeat_and_is_not_stored_as_an_alert(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    client, runtime = app_client
    watchdog = webhook([WATCHDOG], starts_at=STARTED, annotations=SUMMARY)
    for _ in range(2):  # the same bytes again, as Alertmanager re-sends it: refreshed each time
        r = await client.post("/webhook/alertmanager", content=watchdog, headers=AUTH)
        assert r.status_code == 200
        assert r.json() == {"status": "ok", "alerts": 0, "heartbeats": ["prometheus"]}
    (beat,) = (await client.get("/api/v1/heartbeats", headers=AUTH)).json()["heartbeats"]
    assert beat["seen_via"] == "alert"
    gpu = {"alertname": "GPUHighTemp", "gpu": "0", "Hostname": "gpu-node-07", "severity": "warning"}
    both = webhook([WATCHDOG, gpu], starts_at=STARTED, annotations=SUMMARY)  # the Watchdog's group
    r = await client.post("/webhook/alertmanager", content=both, headers=AUTH)
    assert r.json() == {"status": "ok", "alerts": 1, "heartbeats": ["prometheus"]}
    async with runtime.db.read() as session:
        stored = (await session.scalars(select(AlertRow.alertname))).all()
        raw = (await session.scalars(select(RawEventRow.body))).all()
    assert stored == ["GPUHighTemp"]  # the Watchdog never becomes an incident
    assert len(raw) == 1  # the payload is logged as received
    assert "Watchdog" in raw[0]


async def test_basic_credentials_work_as_at_the_webhook(database_url: str) -> None:
    settings = Settings(database_url=database_url, basic_username="am", basic_password="s3cret-pass-0123456789")
    app = create_app(settings, load_ruleset(REPO / "rules", {}))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as c:
        good = {"Authorization": "Basic " + base64.b64encode(b"am:s3cret-pass-0123456789").decode()}
        bad = {"Authorization": "Basic " + base64.b64encode(b"am:wrong").decode()}
        assert (await c.post("/api/v1/heartbeats/prometheus", headers=bad)).status_code == 401
        assert (await c.post("/api/v1/heartbeats/prometheus", headers=good)).status_code == 200


async def test_a_resolved_watchdog_refreshes_nothing_and_is_not_stored(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    """Alertmanager resolves the Watchdog once Prometheus stops sending it: that says nothing is alive."""
    client, runtime = app_client
    body = webhook(
        [WATCHDOG], status="resolved", starts_at=STARTED, ends_at="2026-11-21T08:00:00Z", annotations=SUMMARY
    )
    r = await client.post("/webhook/alertmanager", content=body, headers=AUTH)
    assert r.json() == {"status": "ok", "alerts": 0, "heartbeats": []}
    (beat,) = (await client.get("/api/v1/heartbeats", headers=AUTH)).json()["heartbeats"]
    assert beat["last_seen"] is None
    async with runtime.db.read() as session:
        assert (await session.scalars(select(AlertRow.alertname))).all() == []


async def test_readyz_says_a_never_heard_heartbeat_is_waiting_and_stays_ready(
    app_client: tuple[httpx.AsyncClient, Runtime],
) -> None:
    """A fresh install: ready (a replica out of service could not hear the source arrive), the heartbeat
    waiting, and how to make its source send; once heard, ok."""
    client, _ = app_client
    r = await client.get("/readyz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ready"
    assert body["heartbeats"] == {"prometheus": "waiting"}
    assert body["detail"] == [
        "heartbeat prometheus: waiting, never heard from (nothing is raised until it is): point Alertmanager at "
        '/webhook/alertmanager with a firing alert matching alertname="Watchdog" (rules/deploy/alertmanager.yml, '
        "rules/prometheus/watchdog.rules.yml), or POST /api/v1/heartbeats/prometheus with the webhook's credentials"
    ]
    watchdog = webhook([WATCHDOG], starts_at=STARTED, annotations=SUMMARY)
    assert (await client.post("/webhook/alertmanager", content=watchdog, headers=AUTH)).status_code == 200
    body = (await client.get("/readyz")).json()
    assert (body["status"], body["heartbeats"], body["detail"]) == ("ready", {"prometheus": "ok"}, [])
