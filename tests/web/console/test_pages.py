"""Each console page's content and filters, over SQLite and PostgreSQL; label values always escaped."""

from __future__ import annotations

import re

from alertrouter.model import utcnow
from alertrouter.ruleset import load_ruleset
from alertrouter.store.incidents import quarantine_alerts
from alertrouter.store.tables import OutboxRow
from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.scenario import gpu_labels, node_down_labels
from support.webhooks import webhook

from .conftest import REPO, TOKEN, App, running
from .deliveries import add_delivery

NORTH = [gpu_labels("gpu-node-07", g, region="north") for g in (0, 3)]
SOUTH = [gpu_labels("gpu-node-21", 5, region="south", severity="critical")]
HOSTILE = '"><img src=x onerror=alert(1)><script>alert(1)</script>'


def items(html: str) -> list[str]:
    return re.findall(r'class="headline" href="/incidents/\d+">([^<]*)</a>', html)


async def test_incident_list_filters(app: App) -> None:
    await app.seed([*NORTH, *SOUTH, node_down_labels("gpu-node-30", region="north")])
    await app.login()
    everything = items((await app.client.get("/incidents")).text)
    assert sorted(everything) == [
        "gpu-node-07: GPUHighTemp on 2/8 GPUs",
        "gpu-node-21: GPUHighTemp on 1/8 GPUs",
        "gpu-node-30: NodeDown",
    ]
    assert items((await app.client.get("/incidents?region=south")).text) == ["gpu-node-21: GPUHighTemp on 1/8 GPUs"]
    assert sorted(items((await app.client.get("/incidents?severity=critical")).text)) == [
        "gpu-node-21: GPUHighTemp on 1/8 GPUs",
        "gpu-node-30: NodeDown",
    ]
    assert items((await app.client.get("/incidents?node=gpu-node-07")).text) == ["gpu-node-07: GPUHighTemp on 2/8 GPUs"]
    assert len(items((await app.client.get("/incidents?node=gpu-node-*")).text)) == 3
    assert items((await app.client.get("/incidents?node=gpu-node-2*")).text) == ["gpu-node-21: GPUHighTemp on 1/8 GPUs"]
    assert items((await app.client.get("/incidents?node=gpu_node*")).text) == []  # _ is not a wildcard
    assert items((await app.client.get("/incidents?status=resolved")).text) == []
    page = (await app.client.get("/incidents")).text
    assert '<option value="north">north</option>' in page
    assert '<option value="south">south</option>' in page
    node07 = page.split("gpu-node-07: GPUHighTemp")[1].split("</li>")[0]
    cells = re.findall(r'<span class="(on|)" title="([^"]*)"', node07)
    assert [c for c, _ in cells] == ["on", "", "", "on", "", "", "", ""]
    assert [t for _, t in cells][:4] == ["GPU 0 alerting", "GPU 1", "GPU 2", "GPU 3 alerting"]
    app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")  # each cell worded in the page's language, not the first page's
    rows = re.findall(r"<li class=.*?</li>", (await app.client.get("/incidents")).text, re.S)
    (chinese,) = [r for r in rows if ">gpu-node-07：" in r or ">gpu-node-07:" in r]
    assert re.findall(r'<span class="(?:on|)" title="([^"]*)"', chinese)[:2] == ["GPU 0 告警中", "GPU 1"]
    app.client.cookies.delete(LANGUAGE_COOKIE)
    assert (await app.client.get("/incidents?status=bogus")).status_code == 400

    await app.seed(NORTH, status="resolved")
    assert items((await app.client.get("/incidents?status=resolved")).text) == ["gpu-node-07: GPUHighTemp on 2/8 GPUs"]
    assert 'data-state="resolved"' in (await app.client.get("/incidents?status=resolved")).text


async def test_incident_page_shows_decisions_trail_and_deliveries(app: App) -> None:
    await app.seed([*NORTH, node_down_labels("gpu-node-07", region="north")])
    await app.login()
    incident = await app.incident_id("GPUHighTemp")
    detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
    await add_delivery(
        app.runtime,
        incident_id=incident,
        key=detail["incident"]["key"],
        errors=("timeout", "errcode 130101: send too fast"),
    )
    html = (await app.client.get(f"/incidents/{incident}")).text
    assert html.count('data-decision="inhibited"') == 2
    assert "under rule <b>node-down-mutes-node</b>" in html
    assert "NodeDown on gpu-node-07" in html  # the inhibiting alert, by name, linked to its incident
    trail = html.split('id="trail"')[1].split("</table>")[0]
    assert trail.count("<tr>") == 3
    assert "inhibited" in trail
    deliveries = html.split('id="deliveries"')[1].split("</table>")[0]
    assert "dingtalk-core" in deliveries
    assert "errcode 130101: send too fast" in deliveries
    assert "timeout" in deliveries
    assert 'name="matchers"' in html
    assert "node=&#34;gpu-node-07&#34;" in html
    assert "severity=" not in html.split('name="matchers"')[1].split("</textarea>")[0]
    assert (await app.client.get("/incidents/99999")).status_code == 404


async def test_muted_page_names_the_source_and_rule(app: App) -> None:
    await app.seed([*NORTH, node_down_labels("gpu-node-07", region="north")])
    await app.login()
    html = (await app.client.get("/alerts/muted")).text
    table = html.split('id="muted"')[1]
    assert table.count("data-fingerprint") == 2
    assert "node-down-mutes-node" in table
    assert "NodeDown on gpu-node-07" in table


async def test_muted_page_shows_a_quarantined_alert_and_why(app: App) -> None:
    await app.seed(NORTH)
    fingerprint = (await app.client.get("/api/v1/alerts", headers=TOKEN)).json()["alerts"][0]["fingerprint"]
    async with app.runtime.db.write() as session:
        await quarantine_alerts(session, {fingerprint: "ValueError: <b>no grid</b> for '²'"}, utcnow())
        await session.commit()
    await app.login()
    table = (await app.client.get("/alerts/muted")).text.split('id="muted"')[1]
    row = table.split(f'data-fingerprint="{fingerprint}"')[1].split("</tr>")[0]
    assert "quarantined" in row
    assert "ValueError: &lt;b&gt;no grid&lt;/b&gt; for &#39;²&#39;" in row


async def test_silences_page_creates_shows_effect_and_expires(app: App) -> None:
    await app.seed(NORTH)
    csrf = await app.login()
    bad = await app.client.post("/silences", data={"csrf": csrf, "matchers": 'node=~".*"', "duration": "1h"})
    assert bad.status_code == 400
    assert "must not match an empty value" in bad.text
    assert "node=~&#34;.*&#34;" in bad.text  # what was typed is kept in the form
    r = await app.client.post(
        "/silences", data={"csrf": csrf, "matchers": 'node="gpu-node-07"\r\n', "duration": "2h", "comment": "swap PSU"}
    )
    assert r.status_code == 303
    silence_id = r.headers["location"].split("created=")[1]
    await app.runtime.engine.run_once()
    html = (await app.client.get("/silences")).text
    row = html.split(f'id="s-{silence_id}"')[1].split("</tr>")[0]
    assert 'data-state="active"' in html
    assert "swap PSU" in row
    assert "<td>2</td>" in row  # the two GPU alerts it mutes
    incident = await app.incident_id("gpu-node-07")
    page = (await app.client.get(f"/incidents/{incident}")).text
    assert page.count('data-decision="silenced"') == 2
    assert 'data-state="silenced"' in page
    assert f'silenced by <a href="/silences#s-{silence_id}"' in page
    expire = await app.client.post(f"/silences/{silence_id}/expire", data={"csrf": csrf})
    assert expire.status_code == 303
    assert 'data-state="expired"' in (await app.client.get("/silences")).text
    assert (await app.client.post(f"/silences/{silence_id}/expire", data={"csrf": csrf})).status_code == 404


async def test_channels_page_shows_budget_and_dead_letters(app: App) -> None:
    dead = await add_delivery(
        app.runtime, incident_id=None, errors=("timeout", "errcode 310000: keywords not in content")
    )
    csrf = await app.login()
    html = (await app.client.get("/channels")).text
    row = html.split('data-channel="dingtalk-core"')[1].split("</tr>")[0]
    assert "2 / 20" in row
    assert "per 1m" in row
    assert "unconfigured" in row
    assert f'action="/deliveries/{dead}/retry"' in html
    r = await app.client.post(f"/deliveries/{dead}/discard", data={"csrf": csrf})
    assert r.status_code == 303
    assert f'data-delivery="{dead}"' not in (await app.client.get("/channels")).text
    assert (await app.client.post(f"/deliveries/{dead}/retry", data={"csrf": csrf})).status_code == 409


async def test_channels_page_shows_quarantined_messages_and_dead_letters_by_headline(app: App) -> None:
    await app.seed(NORTH)
    incident = await app.incident_id("gpu-node-07")
    dead = await add_delivery(app.runtime, incident_id=incident)
    now = utcnow()
    why = "expansion failed: MessageError: alerts[0]: expected an object, got int"
    async with app.runtime.db.write() as session:
        row = OutboxRow(
            incident_key="gpu-by-node/GPUHighTemp/gpu-node-09", receiver="oncall-core", reason="first",
            created_at=now, message={"alerts": [7]}, status="quarantined", attempts=0, next_attempt_at=now,
            last_error=why,
        )  # fmt: skip
        session.add(row)
        await session.commit()
    await app.login()
    html = (await app.client.get("/channels")).text
    dead_row = html.split(f'data-delivery="{dead}"')[1].split("</tr>")[0]
    assert "gpu-node-07: GPUHighTemp on 3/8 GPUs" in dead_row  # the message's headline, not its incident key
    quarantined = html.split('id="quarantined"')[1].split(f'data-outbox="{row.id}"')[1].split("</tr>")[0]
    assert "gpu-by-node/GPUHighTemp/gpu-node-09" in quarantined
    assert why in quarantined
    assert "Quarantined messages (1)" in html


async def test_rules_page_masks_secrets_and_simulates(database_url: str) -> None:
    secret = "SEC0123456789abcdefsecret"
    env = {"DINGTALK_CORE_TOKEN": "dt-token-never-shown-42", "DINGTALK_CORE_SECRET": secret}
    async with running(database_url, ruleset=load_ruleset(REPO / "rules", env)) as app:
        csrf = await app.login()
        html = (await app.client.get("/rules")).text
        assert app.runtime.ruleset.config_hash in html
        assert "dt-token-never-shown-42" not in html
        assert secret not in html
        assert "dingtalk-core" in html
        assert "********" in html
        payload = webhook([gpu_labels("gpu-node-07", g) for g in (0, 1)], starts_at="2026-01-01T00:00:00Z").decode()
        r = await app.client.post("/rules/simulate", data={"csrf": csrf, "payload": payload})
        assert r.status_code == 200, r.text
        outcome = r.text.split('id="outcome"')[1]
        assert "Alerts (2)" in outcome
        assert "gpu-node-07: GPUHighTemp on 2/8 GPUs" in outcome
        bad = await app.client.post("/rules/simulate", data={"csrf": csrf, "payload": "{not json"})
        assert bad.status_code == 400
        assert "Invalid JSON" in bad.text
        assert (await app.client.post("/rules/simulate", data={"payload": "[]"})).status_code == 403


async def test_hostile_label_values_are_escaped_everywhere(app: App) -> None:
    hostile = gpu_labels(HOSTILE, 2, region=HOSTILE)
    await app.seed([hostile, node_down_labels(HOSTILE)])
    await app.login()
    incident = await app.incident_id("GPUHighTemp")
    pages = ["/incidents", f"/incidents?region={HOSTILE}", f"/incidents/{incident}", "/alerts/muted"]
    for path in pages:
        html = (await app.client.get(path)).text
        assert "<img" not in html, path
        assert "<script>" not in html, path
        assert "&lt;img src=x onerror=alert(1)&gt;" in html, path


async def test_an_alert_without_alertname_is_named_by_its_labels(app: App) -> None:
    """Alertmanager forwards alerts without `alertname`; the console names them by their label set,
    and "silence this" offers matchers for their (UTF-8) labels."""
    labels = {"job": "nightly-backup", "instance": "db-1:9100", "service.name": "backup", "severity": "warning"}
    await app.seed([labels])
    await app.login()
    incident = await app.incident_id("nightly-backup")
    html = (await app.client.get(f"/incidents/{incident}")).text
    shown = "{instance=&#34;db-1:9100&#34;, job=&#34;nightly-backup&#34;"
    assert shown in html.split('id="alerts"')[1].split("</table>")[0]
    form = html.split('name="matchers"')[1].split("</textarea>")[0]
    assert "service.name=&#34;backup&#34;" in form
    assert "severity=" not in form
