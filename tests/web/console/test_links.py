"""Signed action links: GET only shows, POST acts once; forged, tampered, expired and replayed links
are refused and change nothing."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

from alertrouter.auth.links import LINK_PURPOSE, SESSION_PURPOSE, Action, action_link
from alertrouter.auth.signing import Signer
from alertrouter.model import utcnow
from support.scenario import gpu_labels

from .conftest import TOKEN, App, running

GPU = [gpu_labels("gpu-node-07", g, region="north") for g in range(3)]
LINK = Signer("console-tests-secret-key-0123456789", LINK_PURPOSE)


def link(action: Action, incident: int, *, ttl: timedelta = timedelta(hours=1), signer: Signer = LINK) -> str:
    return action_link(signer, "http://ar", action, incident, now=utcnow(), ttl=ttl).removeprefix("http://ar")


async def state(app: App, incident: int) -> tuple[str | None, list[dict[str, Any]]]:
    detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
    silences = (await app.client.get("/api/v1/silences", headers=TOKEN)).json()
    return detail["incident"]["acknowledged_at"], silences


async def test_ack_link_shows_then_acts_once(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    path = link(Action.ACK, incident)
    page = await app.client.get(path)  # what a chat app's preview does
    assert page.status_code == 200
    assert "Acknowledge this incident?" in page.text
    assert "gpu-node-07: GPUHighTemp on 3/8 GPUs" in page.text
    assert page.headers["referrer-policy"] == "no-referrer"
    assert await state(app, incident) == (None, [])

    done = await app.client.post(path)
    assert done.status_code == 200
    assert "Acknowledged" in done.text
    acknowledged, _ = await state(app, incident)
    assert acknowledged is not None
    detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
    assert detail["incident"]["acknowledged_at"] == acknowledged

    again = await app.client.post(path)
    assert again.status_code == 409
    assert "already used at" in again.text
    assert (await app.client.get(path)).status_code == 409
    assert (await state(app, incident))[0] == acknowledged


async def test_silence_link_silences_the_incident_labels_but_severity(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    path = link(Action.SILENCE, incident)
    assert (await app.client.get(path)).status_code == 200
    assert (await state(app, incident))[1] == []
    done = await app.client.post(path)
    assert done.status_code == 200
    assert "Silenced" in done.text
    _, silences = await state(app, incident)
    assert len(silences) == 1
    silence = silences[0]
    assert silence["created_by"] == "link"
    assert 'node="gpu-node-07"' in silence["matchers"]
    assert 'alertname="GPUHighTemp"' in silence["matchers"]
    assert not any(str(m).startswith("severity") for m in silence["matchers"])
    assert (await app.client.post(path)).status_code == 409
    assert len((await state(app, incident))[1]) == 1


async def test_forged_tampered_and_misused_tokens_are_refused(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    genuine = link(Action.ACK, incident).removeprefix("/a/")
    body, _, mac = genuine.partition(".")
    flipped = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["a"] = "silence"
    tampered = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    other_key = link(Action.ACK, incident, signer=Signer("not-the-servers-secret-0123456789", LINK_PURPOSE))
    session_key = link(Action.ACK, incident, signer=Signer("console-tests-secret-key-0123456789", SESSION_PURPOSE))
    for path in (
        f"/a/{body}.{flipped}",
        f"/a/{tampered}.{mac}",
        other_key,
        session_key,
        "/a/garbage",
        "/a/" + "x" * 5000,
    ):
        for method in ("GET", "POST"):
            r = await app.client.request(method, path)
            assert r.status_code == 403, (method, path[:40], r.status_code)
            assert "not valid" in r.text
    assert await state(app, incident) == (None, [])


async def test_expired_links_are_refused(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    expired = link(Action.SILENCE, incident, ttl=timedelta(seconds=-1))
    for method in ("GET", "POST"):
        r = await app.client.request(method, expired)
        assert r.status_code == 410
        assert "expired" in r.text
    assert await state(app, incident) == (None, [])


async def test_link_to_a_missing_incident(app: App) -> None:
    r = await app.client.post(link(Action.ACK, 424242))
    assert r.status_code == 404


async def test_links_work_in_read_only_mode_and_without_login(database_url: str) -> None:
    async with running(database_url, console_read_only=True) as app:
        await app.seed(GPU)
        incident = await app.incident_id("gpu-node-07")
        assert (await app.client.post(link(Action.ACK, incident))).status_code == 200
        assert (await state(app, incident))[0] is not None
