"""The console says what named each node: on the nodes page (the nodes of the firing alerts, by source)
and on an incident's alerts, for dcgm-exporter's `Hostname="localhost"` and a real name; both stores."""

from __future__ import annotations

import re

from support.scenario import dcgm_labels, node_exporter_down_labels

from .conftest import App


async def test_the_nodes_page_and_the_incident_page_name_the_deciding_source(app: App) -> None:
    await app.seed([dcgm_labels("10.0.0.7", "localhost", 0), dcgm_labels("10.0.0.8", "gpu-node-08", 0)])
    await app.seed([node_exporter_down_labels("10.0.0.8")])
    await app.login()
    html = (await app.client.get("/nodes")).text
    named = re.findall(
        r'<tr data-node="([^"]+)" data-source="([^"]+)"><td>.*?</td><td class="mono">[^<]*</td><td>(\d+)</td>', html
    )
    assert named == [
        ("10.0.0.7", "instance", "1"),
        ("gpu-node-08", "label:Hostname", "1"),
        ("gpu-node-08", "learned", "1"),
    ]
    assert "localhost" not in re.search(r'<table id="named-nodes">.*?</table>', html, re.S).group(0)  # type: ignore[union-attr]
    page = (await app.client.get(f"/incidents/{await app.incident_id('10.0.0.7: GPUXidError')}")).text
    assert 'data-node-source="instance">node 10.0.0.7, named by <span class="mono">instance</span>' in page
    page = (await app.client.get(f"/incidents/{await app.incident_id('gpu-node-08: NodeDown')}")).text
    assert 'data-node-source="learned">node gpu-node-08, named by <span class="mono">learned</span>' in page
