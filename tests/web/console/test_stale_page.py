"""The console shows a stale incident (pipeline/stale.py) as "no data", with the node and since when."""

from __future__ import annotations

import re
from datetime import timedelta

from alertrouter.model import utcnow
from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.scenario import dcgm_labels, gpu_labels, node_down_labels, node_exporter_down_labels
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


async def test_a_dead_nodes_gpu_incident_names_its_node_down_incident_in_both_languages(app: App) -> None:
    """Labels as the exporters send them: dcgm-exporter by IP with `Hostname`, node-exporter's `up == 0` by IP
    only. The GPU alerts read "no data (gpu-node-07 down)", not resolved, and the incident links NodeDown's."""
    now = utcnow()
    hot = [dcgm_labels("10.0.0.7", "gpu-node-07", g, alertname="GPUHighTemp", severity="warning") for g in (2, 5)]
    hot_since = (now - timedelta(minutes=10)).isoformat()
    await post(app, hot, hot_since)
    await post(app, hot, hot_since, (now - timedelta(seconds=20)).isoformat())
    down = node_exporter_down_labels("10.0.0.7", job="node-exporter")
    await post(app, [down], (now - timedelta(seconds=5)).isoformat())
    await app.login()
    node_down = await app.incident_id("gpu-node-07: NodeDown")
    gpu = await app.incident_id("gpu-node-07: GPUHighTemp")
    words = {
        "en": ("no data (gpu-node-07 down)", "Why no data", "gpu-node-07 is down: "),
        "zh-CN": ("无数据（gpu-node-07 宕机）", "无数据原因", "gpu-node-07 宕机："),
    }
    for language, (status, title, why) in words.items():
        app.client.cookies.set(LANGUAGE_COOKIE, language)
        html = (await app.client.get(f"/incidents/{gpu}")).text
        cells = re.findall(r'<td data-status="resolved">([^<]*)</td>', html)
        assert cells == [status, status], language
        assert f"<dt>{title}</dt>" in html
        explained = re.search(r'<dd id="no-data-source" data-down="true">(.*?)</dd>', html)
        assert explained is not None, language
        assert explained.group(1).startswith(why)
        assert f'<a href="/incidents/{node_down}">NodeDown' in explained.group(1)
        # the decision trail names the NodeDown alert that keeps them stale, linked to its incident
        assert html.count(f'<a href="/incidents/{node_down}">') >= 3
