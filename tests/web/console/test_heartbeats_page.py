"""The console's heartbeats page: the shipped Watchdog heartbeat, never heard, heard, and lost."""

from __future__ import annotations

import re
from datetime import timedelta

from alertrouter.model import utcnow
from alertrouter.store import heartbeats as store
from alertrouter.web.console.language import LANGUAGE_COOKIE

from .conftest import App


def row(html: str, name: str) -> str:
    found = re.search(rf'<tr data-heartbeat="{re.escape(name)}"[^>]*>(.*?)</tr>', html, re.S)
    assert found is not None, f"no row for {name}"
    return found.group(0)


async def test_anonymous_is_sent_to_login(app: App) -> None:
    r = await app.client.get("/heartbeats")
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=%2Fheartbeats"


async def test_the_shipped_heartbeat_never_heard_heard_and_lost(app: App) -> None:
    await app.login()
    r = await app.client.get("/heartbeats")
    assert r.status_code == 200
    assert '<a href="/heartbeats" aria-current="page">Heartbeats</a>' in r.text
    never = row(r.text, "prometheus")
    assert 'data-state="waiting"' in never  # a fresh install: waiting for its first sighting, nothing raised
    assert "waiting: never heard from" in never
    assert "nothing is raised until it is first heard" in never
    assert "lost at" not in never
    assert "never (watched since" in never
    assert "1 source never heard from yet" in r.text
    assert "Point Alertmanager at alertrouter's <code>/webhook/alertmanager</code>" in r.text
    assert "source silent" not in r.text
    app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")  # the switch: these rules say en
    zh = await app.client.get("/heartbeats")
    app.client.cookies.delete(LANGUAGE_COOKIE)
    assert 'data-state="waiting"' in row(zh.text, "prometheus")
    assert "等待中：从未收到心跳" in row(zh.text, "prometheus")
    assert "首次收到心跳前不会告警" in row(zh.text, "prometheus")
    assert "1 个来源尚未收到过心跳" in zh.text
    assert "<code>alertname=&#34;Watchdog&#34;</code>" in never or '<code>alertname="Watchdog"</code>' in never
    assert "5m" in never

    heard = utcnow() - timedelta(minutes=9)
    async with app.runtime.db.write() as session:
        await store.record_seen(session, ["prometheus"], heard, via="alert")
        await store.mark_missing(session, "prometheus", heard, {"alertname": "AlertrouterHeartbeatMissing"})
        await session.commit()
    lost = row((await app.client.get("/heartbeats")).text, "prometheus")
    assert 'data-state="missing"' in lost
    assert "waiting" not in lost
    assert "silent since" in lost
    assert "by a matching alert" in lost
    assert "1 source silent: monitoring is blind" in (await app.client.get("/heartbeats")).text
