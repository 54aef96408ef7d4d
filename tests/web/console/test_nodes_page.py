"""The console's nodes page: learned addresses by node from real exporter labels, the alert each was
learned from, a conflict, expired and configured entries, escaping; over SQLite and PostgreSQL."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta
from pathlib import Path

from alertrouter.model import utcnow
from alertrouter.pipeline.aliases import LearnedAlias
from alertrouter.ruleset import load_ruleset
from alertrouter.store.nodes import save_node_aliases
from support.scenario import dcgm_labels, node_exporter_down_labels

from .conftest import REPO, App, running

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(1)</script>'


def row(html: str, address: str) -> str:
    found = re.search(rf'<tr data-address="{re.escape(address)}"[^>]*>(.*?)</tr>', html, re.S)
    assert found is not None, f"no row for {address}"
    return found.group(0)


async def test_anonymous_is_sent_to_login(app: App) -> None:
    r = await app.client.get("/nodes")
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=%2Fnodes"


async def test_learned_address_with_its_alert_last_seen_and_node_link(app: App) -> None:
    await app.seed([dcgm_labels("10.0.0.7", "gpu-node-07", 0), node_exporter_down_labels("10.0.0.7")])
    await app.login()
    r = await app.client.get("/nodes")
    assert r.status_code == 200
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    assert '<a href="/nodes" aria-current="page">Nodes</a>' in r.text
    seven = row(r.text, "10.0.0.7")
    assert 'data-state="learned"' in seven
    assert '<a href="/incidents?node=gpu-node-07">gpu-node-07</a>' in seven
    # learned from the dcgm-exporter alert, named and linked to its incident, with its fingerprint
    gpu_incident = await app.incident_id("gpu-node-07: GPUXidError")
    assert f'<a href="/incidents/{gpu_incident}">GPUXidError on gpu-node-07</a>' in seven
    assert re.search(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</td>", seven)  # last seen, to the second
    assert "conflict" not in seven
    # the node link finds the NodeDown that was learned to be on the node
    listed = (await app.client.get("/incidents?node=gpu-node-07")).text
    assert "gpu-node-07: NodeDown" in listed


async def test_a_conflict_shows_the_previous_name_and_when_it_changed(app: App) -> None:
    await app.seed([dcgm_labels("10.0.0.7", "gpu-node-07", 0)])
    # the address now belongs to another machine, whose GPU alerts fired later: their claim wins
    later = [dcgm_labels("10.0.0.7", "gpu-node-06", g) for g in (1, 2)] + [node_exporter_down_labels("10.0.0.7")]
    await app.seed(later, starts="2026-01-01T01:00:00Z")
    await app.login()
    seven = row((await app.client.get("/nodes")).text, "10.0.0.7")
    assert '<a href="/incidents?node=gpu-node-06">gpu-node-06</a>' in seven
    assert re.search(r'<span class="conflict">was gpu-node-07 until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</span>', seven)


async def test_expired_and_configured_entries_are_marked(database_url: str, tmp_path: Path) -> None:
    rules = shutil.copytree(REPO / "rules", tmp_path / "rules")
    topology = (rules / "topology.yml").read_text()
    (rules / "topology.yml").write_text(topology.replace("  aliases: {}", '  aliases: {"10.0.0.9": rack12-slot9}'))
    async with running(database_url, ruleset=load_ruleset(rules, {})) as app:
        await app.seed([dcgm_labels("10.0.0.9", "gpu-node-09", 0)])
        old = utcnow() - timedelta(days=8)  # past the shipped 7d TTL, not yet pruned
        async with app.runtime.db.write() as session:
            await save_node_aliases(
                session, [LearnedAlias("10.0.0.5", "gpu-node-05", old, old, "GPUXidError", "f" * 16)]
            )
            await session.commit()
        await app.login()
        html = (await app.client.get("/nodes")).text
        nine = row(html, "10.0.0.9")
        assert 'data-state="configured"' in nine
        assert 'names it <a href="/incidents?node=rack12-slot9">rack12-slot9</a>, which wins' in nine
        five = row(html, "10.0.0.5")
        assert 'data-state="expired"' in five
        assert "GPUXidError <span" in five  # its alert is gone from the store: named from the row
        assert "(2 learned addresses)" in html


async def test_a_hostile_hostname_is_escaped(app: App) -> None:
    await app.seed([dcgm_labels("10.0.0.7", HOSTILE, 0), node_exporter_down_labels("10.0.0.7")])
    await app.login()
    html = (await app.client.get("/nodes")).text
    assert 'data-state="learned"' in html  # it was learned, so the page did show it
    assert "<img" not in html
    assert "<script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "/incidents?node=%22%3E%3Cimg%20src%3Dx" in html


async def test_a_held_move_shows_the_name_claimed_and_the_alert_claiming_it(app: App) -> None:
    await app.seed([dcgm_labels("10.0.0.7", "gpu-node-07", 0)])
    # one node-exporter alert whose target carries another machine's name: not enough to move the address
    attack = {
        "alertname": "NodeFilesystemSpaceFillingUp",
        "instance": "10.0.0.7:9100",
        "job": "node",
        "device": "/dev/nvme0n1p2",
        "fstype": "ext4",
        "mountpoint": "/",
        "severity": "warning",
        "node": "gpu-node-08",
    }
    await app.seed([attack], starts="2026-01-01T01:00:00Z")
    await app.login()
    html = (await app.client.get("/nodes")).text
    assert '<span class="conflict">1 move held</span>' in html
    seven = row(html, "10.0.0.7")
    assert 'data-state="held"' in seven
    assert '<a href="/incidents?node=gpu-node-07">gpu-node-07</a>' in seven
    assert "stays gpu-node-07 until a second alert or Prometheus agrees" in seven
    claimed = await app.incident_id("gpu-node-08: NodeFilesystemSpaceFillingUp")
    assert re.search(
        r'<div class="conflict" data-held="gpu-node-08">claimed to be <a href="/incidents\?node=gpu-node-08">'
        rf'gpu-node-08</a> by <a href="/incidents/{claimed}">NodeFilesystemSpaceFillingUp on gpu-node-08</a> '
        r'<span class="mono muted">[0-9a-f]{16}</span> alone since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: not moved</div>',
        seven,
    ), seven
