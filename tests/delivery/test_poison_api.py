"""Where poisoned deliveries show: quarantined outbox rows in `GET /api/v1/outbox/quarantined` and in
`alertrouter_quarantined{kind="delivery"}`, a dead letter's reason and count of unexpected failures in
`GET /api/v1/notifications`, and the channel's health in `/api/v1/channels` and its metric."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from alertrouter.app import create_app
from alertrouter.model import utcnow
from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings
from alertrouter.store.tables import ChannelStateRow, DeliveryRow, OutboxRow

REPO = Path(__file__).resolve().parents[2]
TOKEN = "api-token-poison-7d2f9a"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
WHY = "expansion failed: AttributeError: 'int' object has no attribute 'get'"
DEAD = "dead letter after 5 unexpected failures: ValueError: invalid literal for int() with base 10: '²'"


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[FastAPI]:
    app = create_app(Settings(database_url=database_url, bearer_token=TOKEN), load_ruleset(REPO / "rules", {}))
    async with app.router.lifespan_context(app):
        yield app


async def test_quarantine_dead_letter_and_health_are_shown(app: FastAPI) -> None:
    now = utcnow() - timedelta(minutes=5)
    async with app.state.runtime.db.write() as s:
        s.add(
            OutboxRow(
                incident_key="rule/GPUHighTemp/gpu-node-07", receiver="oncall-core", reason="first", created_at=now,
                message={"alerts": [7]}, status="quarantined", attempts=0, next_attempt_at=now, last_error=WHY,
            )
        )  # fmt: skip
        s.add(
            DeliveryRow(
                incident_key=None, incident_id=None, receiver="oncall-core", channel="dingtalk-core", kind="firing",
                severity="critical", severity_rank=0, message={"items": []}, status="dead", attempts=5,
                created_at=now, next_attempt_at=now, last_error=DEAD, unexpected_failures=5,
            )
        )  # fmt: skip
        s.add(ChannelStateRow(name="dingtalk-core", healthy=False, last_error=DEAD, consecutive_failures=0))
        await s.commit()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ar", headers=BEARER) as client:
        quarantined = (await client.get("/api/v1/outbox/quarantined")).json()
        assert quarantined["total"] == 1
        assert quarantined["outbox"][0]["last_error"] == WHY
        (dead,) = (await client.get("/api/v1/notifications", params={"status": "dead"})).json()["notifications"]
        assert (dead["last_error"], dead["unexpected_failures"]) == (DEAD, 5)
        channels = {c["name"]: c for c in (await client.get("/api/v1/channels")).json()}
        assert channels["dingtalk-core"]["healthy"] is False
        assert channels["dingtalk-core"]["last_error"] == DEAD
        metrics = (await client.get("/metrics")).text
    assert 'alertrouter_quarantined{kind="delivery"} 1.0' in metrics
    assert 'alertrouter_channel_healthy{channel="dingtalk-core"} 0.0' in metrics
    assert 'alertrouter_dead_letters{channel="dingtalk-core"} 1.0' in metrics
