"""The console's maintenance page on both stores: start for nodes (who and why kept), the node's alerts
shown as in maintenance, end early; bad input kept in the form with the field named; cluster state shown."""

from __future__ import annotations

from datetime import UTC, datetime

from alertrouter.pipeline.nodes import Discovered
from support.scenario import gpu_labels

from .conftest import App

NORTH = [gpu_labels("gpu-node-07", g, region="north") for g in range(2)]


async def test_start_show_and_end(app: App) -> None:
    await app.seed(NORTH)
    csrf = await app.login()
    bad = await app.client.post("/maintenance", data={"csrf": csrf, "nodes": "gpu-node-07", "duration": "soon"})
    assert bad.status_code == 400
    assert "duration: invalid duration &#39;soon&#39;" in bad.text
    assert ">gpu-node-07</textarea>" in bad.text  # what was typed is kept
    r = await app.client.post(
        "/maintenance",
        data={"csrf": csrf, "nodes": "gpu-node-07\r\ngpu-node-08", "duration": "4h", "reason": "swap PSU"},
    )
    assert r.status_code == 303
    await app.runtime.engine.run_once()
    html = (await app.client.get("/maintenance")).text
    row = html.split('data-node="gpu-node-07"')[1].split("</tr>")[0]
    assert 'data-state="active"' in row
    assert "swap PSU" in row
    assert "alice" in row
    assert "by hand" in row
    muted = (await app.client.get("/alerts/muted")).text
    assert "maintenance" in muted

    ended = await app.client.post("/maintenance/gpu-node-07/end", data={"csrf": csrf})
    assert ended.status_code == 303
    html = (await app.client.get("/maintenance")).text
    row = html.split('data-node="gpu-node-07"')[1].split("</tr>")[0]
    assert 'data-state="ended"' in row
    assert "ended by alice" in row
    assert (await app.client.post("/maintenance/gpu-node-07/end", data={"csrf": csrf})).status_code == 404
    assert (await app.client.post("/maintenance/gpu-node-08/end", data={"csrf": "forged"})).status_code == 403


async def test_cluster_state_is_listed(app: App) -> None:
    since = datetime(2026, 1, 1, 6, 0, tzinfo=UTC)
    held = Discovered(maintenance={"gpu-node-09": ("taint nvidia.com/gpu-xid-error", since)})

    class Lookup:
        def snapshot(self) -> Discovered:
            return held

    await app.login()
    app.runtime.lookup = Lookup()  # type: ignore[assignment]
    try:
        html = (await app.client.get("/maintenance")).text
    finally:
        app.runtime.lookup = None
    row = html.split('data-node="gpu-node-09"')[1].split("</tr>")[0]
    assert 'data-source="cluster"' in html
    assert "taint nvidia.com/gpu-xid-error" in row
    assert "while the cluster says so" in row
    assert "<form" not in row  # ended by the cluster, not here
