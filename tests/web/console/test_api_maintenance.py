"""`/api/v1/maintenance`: start for several nodes, list, end; who and why kept; bad input names the field."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from .conftest import TOKEN, App


async def test_maintenance_lifecycle(app: App) -> None:
    r = await app.client.post(
        "/api/v1/maintenance",
        json={"nodes": ["gpu-node-07", "10.0.0.8", "gpu-node-07"], "duration": "4h", "reason": "RMA ticket 4711"},
        headers=TOKEN,
    )
    assert r.status_code == 201, r.text
    started = r.json()
    assert [w["node"] for w in started] == ["gpu-node-07", "10.0.0.8"]  # each node once, in the order given
    first = started[0]
    assert (first["reason"], first["created_by"], first["state"], first["source"]) == (
        "RMA ticket 4711",
        "token:ci",
        "active",
        "manual",
    )
    span = datetime.fromisoformat(first["ends_at"]) - datetime.fromisoformat(first["starts_at"])
    assert span == timedelta(hours=4)
    listed = (await app.client.get("/api/v1/maintenance", headers=TOKEN)).json()
    assert sorted(w["node"] for w in listed) == ["10.0.0.8", "gpu-node-07"]

    ended = await app.client.delete("/api/v1/maintenance/gpu-node-07", headers=TOKEN)
    assert ended.status_code == 200, ended.text
    assert ended.json() == {"node": "gpu-node-07", "state": "ended"}
    states = {
        w["node"]: (w["state"], w["ended_by"])
        for w in (await app.client.get("/api/v1/maintenance", headers=TOKEN)).json()
    }
    assert states == {"gpu-node-07": ("ended", "token:ci"), "10.0.0.8": ("active", None)}
    gone = await app.client.delete("/api/v1/maintenance/gpu-node-07", headers=TOKEN)
    assert gone.status_code == 404
    assert "gpu-node-07" in gone.json()["detail"]
    assert (await app.client.get("/api/v1/maintenance?recent=0", headers=TOKEN)).json()[0]["node"] == "10.0.0.8"


async def test_writes_need_a_write_credential(app: App) -> None:
    body = {"nodes": ["gpu-node-07"], "duration": "4h"}
    assert (await app.client.post("/api/v1/maintenance", json=body)).status_code == 401
    assert (await app.client.delete("/api/v1/maintenance/gpu-node-07")).status_code == 401
    assert (await app.client.get("/api/v1/maintenance")).status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"nodes": [], "duration": "4h"}, "nodes"),
        ({"nodes": ["", "  "], "duration": "4h"}, "nodes"),
        ({"nodes": ["n" * 256], "duration": "4h"}, "nodes"),
        ({"nodes": "gpu-node-07", "duration": "4h"}, "nodes"),
        ({"nodes": ["gpu-node-07"], "duration": "soon"}, "duration"),
        ({"nodes": ["gpu-node-07"], "duration": "0"}, "duration"),
        ({"nodes": ["gpu-node-07"], "duration": "1000d"}, "duration"),
        ({"nodes": ["gpu-node-07"]}, "duration"),
        ({"nodes": ["gpu-node-07"], "duration": "4h", "reason": "x" * 501}, "reason"),
        ({"nodes": ["gpu-node-07"], "duration": "4h", "reason": "a\x00b"}, "reason"),
        ({"nodes": ["gpu-node-07"], "duration": "4h", "until": "tomorrow"}, "until"),
    ],
)
async def test_bad_requests_are_refused_naming_the_field(app: App, body: dict[str, object], field: str) -> None:
    r = await app.client.post("/api/v1/maintenance", json=body, headers=TOKEN)
    assert r.status_code == 400, r.text
    assert r.json()["detail"].startswith(field), r.json()
    assert (await app.client.get("/api/v1/maintenance", headers=TOKEN)).json() == []


async def test_a_bad_recent_is_refused(app: App) -> None:
    r = await app.client.get("/api/v1/maintenance?recent=lately", headers=TOKEN)
    assert r.status_code == 400
    assert r.json()["detail"].startswith("recent")
