"""The console tells an incident's times as its alerts do, as messages tell them: started at the alerts'
earliest startsAt, lasted to the endsAt that resolved it; over SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from alertrouter.model import utcnow
from support.scenario import node_down_labels
from support.webhooks import webhook

from .conftest import HOOK, App, running

M = timedelta(minutes=1)


async def _tell(app: App, body: bytes) -> None:
    r = await app.client.post("/webhook/alertmanager", content=body, headers=HOOK)
    assert r.status_code == 200, r.text
    await app.runtime.engine.run_once()


def _when(t: datetime, zone: str = "UTC") -> str:
    return t.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S %Z")


async def test_an_incident_is_dated_by_its_alerts_not_by_when_alertrouter_heard(app: App) -> None:
    """A NodeDown that fired 20 minutes before its webhook arrived and ended 11 minutes later, told to
    alertrouter only after it was over: it lasted 11 minutes, not the seconds alertrouter held it open."""
    await app.login()
    started = utcnow().replace(microsecond=0) - 20 * M
    down = [node_down_labels("gpu-node-17", region="north")]
    await _tell(app, webhook(down, starts_at=started))
    firing = (await app.client.get("/incidents")).text
    assert f'<span title="{_when(started)}">for 20m</span>' in firing
    await _tell(app, webhook(down, status="resolved", starts_at=started, ends_at=started + 11 * M))
    listed = (await app.client.get("/incidents?status=resolved")).text
    assert f'<span title="{_when(started)}">lasted 11m</span>' in listed
    incident = int(listed.split('class="headline" href="/incidents/')[1].split('"')[0])
    page = (await app.client.get(f"/incidents/{incident}")).text
    assert f"<dt>Started</dt><dd>{_when(started)} (lasted 11m)</dd>" in page


async def test_in_chinese_and_the_rules_time_zone(database_url: str) -> None:
    async with running(database_url, english=False) as app:  # the shipped rules: zh-CN, Asia/Shanghai
        await app.login()
        started = datetime(2026, 11, 21, 7, 50, tzinfo=UTC)  # long over: 15:50 CST to 16:01 CST
        down = [node_down_labels("gpu-node-17", region="north")]
        await _tell(app, webhook(down, starts_at=started))
        await _tell(app, webhook(down, status="resolved", starts_at=started, ends_at=started + 11 * M))
        listed = (await app.client.get("/incidents?status=resolved")).text
        assert '<span title="2026-11-21 15:50:00 CST">持续 11 分钟</span>' in listed
        incident = int(listed.split('class="headline" href="/incidents/')[1].split('"')[0])
        page = (await app.client.get(f"/incidents/{incident}")).text
        assert "<dt>开始时间</dt><dd>2026-11-21 15:50:00 CST (持续 11 分钟)</dd>" in page
