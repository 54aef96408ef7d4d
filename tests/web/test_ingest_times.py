"""Ingest times are RFC 3339 text, as Alertmanager's `strfmt.DateTime` reads them: a JSON number or unix
seconds as text is a 400 naming the field (on both ingest paths, both stores), and nothing is stored;
the RFC 3339 spellings taken before are still taken."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from alertrouter.runtime import Runtime
from support.webhooks import Status, webhook

from .conftest import AUTH

NOT_RFC3339 = "expected an RFC 3339 date-time string, e.g. 2026-01-01T00:00:00Z"
LABELS = {"alertname": "GPUHighTemp", "node": "gpu-node-07", "gpu": "3", "severity": "warning"}
UNIX = [1764316800, 1764316800.5, "1764316800", "1764316800.5", "1.7643168e9", "-1", "0"]
RFC3339 = [
    "2026-11-21T07:59:00Z",
    "2026-11-21T15:59:00+08:00",
    "2026-11-21T07:59:00.123456789Z",  # Go's nanoseconds
    "2026-11-21t07:59:00z",
    "2026-11-21 07:59:00Z",
]


async def _alerts(client: httpx.AsyncClient) -> int:
    n: int = (await client.get("/api/v1/alerts", headers=AUTH)).json()["total"]
    return n


def _push(**times: Any) -> bytes:
    return json.dumps([{"labels": LABELS, **times}]).encode()


def _webhook(starts_at: Any, ends_at: Any = None) -> bytes:
    status: Status = "firing" if ends_at is None else "resolved"
    body = json.loads(webhook([LABELS], status=status, ends_at=None if ends_at is None else "set below"))
    body["alerts"][0]["startsAt"] = starts_at
    if ends_at is not None:
        body["alerts"][0]["endsAt"] = ends_at
    return json.dumps(body).encode()


@pytest.mark.parametrize("value", UNIX, ids=[repr(v) for v in UNIX])
async def test_unix_times_are_refused_naming_the_field(
    app_client: tuple[httpx.AsyncClient, Runtime], value: Any
) -> None:
    client, _ = app_client
    sent = [
        ("/api/v2/alerts", _push(startsAt=value), "[0].startsAt"),
        ("/api/v2/alerts", _push(startsAt="2026-11-21T07:59:00Z", endsAt=value), "[0].endsAt"),
        ("/webhook/alertmanager", _webhook(value), "alerts[0].startsAt"),
        ("/webhook/alertmanager", _webhook("2026-11-21T07:59:00Z", value), "alerts[0].endsAt"),
    ]
    for path, body, field in sent:
        r = await client.post(path, content=body, headers=AUTH)
        assert r.status_code == 400, (path, field, r.text)
        assert r.json() == {"error": "invalid payload", "problems": [f"{field}: {NOT_RFC3339}"]}, (path, field)
    assert await _alerts(client) == 0


@pytest.mark.parametrize("value", RFC3339)
async def test_rfc3339_times_are_still_taken(app_client: tuple[httpx.AsyncClient, Runtime], value: str) -> None:
    client, _ = app_client
    r = await client.post("/webhook/alertmanager", content=_webhook(value), headers=AUTH)
    assert r.status_code == 200, r.text
    r = await client.post("/api/v2/alerts", content=_push(startsAt=value, endsAt="2026-11-21T08:30:00Z"), headers=AUTH)
    assert r.status_code == 200, r.text
    listed = (await client.get("/api/v1/alerts", headers=AUTH)).json()["alerts"]
    assert [a["starts_at"][:19] for a in listed] == ["2026-11-21T07:59:00"]
