"""The console shows a stale incident (pipeline/stale.py) as "no data", with the node and since when."""

from __future__ import annotations

import re
from datetime import timedelta

from alertrouter.model import utcnow
from support.scenario import gpu_labels, node_down_labels
from support.webhooks import webhook

from .conftest import HOOK, App

HOT = [gpu_labels("gpu-node-07", g) for g in (0, 3)]


async def post(app: App, alerts: list[dict[str, str]], starts: str, ends: str | None = None) -> None:
    body = webhook(alerts, status="firing" if ends is None else "resolved", starts_at=starts, ends_at=ends)
    r = await app.client.post("/webhook/alertmanager", content=body, headers=HOOK)
    assert r.status_code == 200, r.text
    await app.runtime.engine.run_once()


async def test_a_dead_nodes_gpu_incident_reads_no_data_since(app: App) -> None:
    now = utcnow()
    hot_since = (now - timedelta(minutes=10)).isoformat()
    await post(app, HOT, hot_since)
    dark = now - timedelta(seconds=20)
    await post(app, HOT, hot_since, dark.isoformat())
    await post(app, [node_down_labels("gpu-node-07")], (now - timedelta(seconds=5)).isoformat())
    await app.login()
    page = (await app.client.get("/incidents")).text
    assert 'data-state="no_data"' in page
    incident = re.search(r'href="/incidents/(\d+)">gpu-node-07: GPUHighTemp', page)
    assert incident is not None
    html = (await app.client.get(f"/incidents/{incident.group(1)}")).text
    assert "no data from gpu-node-07 since" in html
    assert 'data-stale="2"' in html
    assert "a node-down alert of its node fires" in html  # why, in the decision trail
