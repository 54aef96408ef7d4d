"""The console in both languages: every page rendered in zh-CN over sample data shows no English word of the
product (and in en no Chinese), times in the rules' time zone, and the language chosen per person: the
switch (a cookie) over the rules' `global.language`, the browser's Accept-Language not read."""

from __future__ import annotations

import html as htmlmod
import re
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from alertrouter.auth.links import LINK_PURPOSE, Action, action_link
from alertrouter.auth.signing import Signer
from alertrouter.model import utcnow
from alertrouter.pipeline.escalation import Chain
from alertrouter.ruleset import Ruleset, load_ruleset
from alertrouter.store import escalations
from alertrouter.store.alerts import insert_events
from alertrouter.store.tables import AlertRow, IncidentRow
from alertrouter.web.console.language import LANGUAGE_COOKIE, choose_language
from support.scenario import gpu_labels, node_down_labels

from .conftest import HOOK, REPO, SECRET, TOKEN, App, running
from .deliveries import add_delivery

ZONE = "Asia/Shanghai"
NORTH = [gpu_labels("gpu-node-07", g, region="north", instance="10.0.0.7:9400") for g in (0, 3, 5)]
SOUTH = [gpu_labels("gpu-node-21", 5, region="south", severity="critical")]
DOWN = node_down_labels("gpu-node-07", region="north")
COMMENT = "PSU swap OPS-4821"
SILENCED = 'node="gpu-node-21"'
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_WORD = re.compile(r"[A-Za-z]{2,}")
# Names that stay as they are in a Chinese page: products and formats, the zone's abbreviation (added below),
# and the other language's name in the switch ("English").
KEPT = {"GPU", "Prometheus", "Alertmanager", "webhook", "JSON", "API", "UTF", "Pod", "English", "KiB"}
# Machine text shown as written in both languages: config terms, fingerprints, matchers, the rules' YAML.
_MACHINE = re.compile(
    r'<(pre|code|span|div|td|p|dd|a)\b[^>]*class="[^"]*\bmono\b[^"]*"[^>]*>.*?</\1>|<(pre|code)\b[^>]*>.*?</\2>', re.S
)


def _zoned_rules() -> Ruleset:
    rules = load_ruleset(REPO / "rules", {})
    zoned = rules.global_.model_copy(update={"language": "zh-CN", "timezone": ZONE})
    return rules.model_copy(update={"global_": zoned})


@pytest.fixture
async def zh_app(database_url: str) -> AsyncIterator[App]:
    """A console whose rules say zh-CN and Asia/Shanghai, seeded with node incidents, an inhibited alert, a
    silence, a dead letter and a learned address."""
    async with running(database_url, ruleset=_zoned_rules(), english=False) as app:
        await app.seed([*NORTH, *SOUTH, DOWN])
        await app.seed(SOUTH[:0])  # one more engine pass: the source's hold-down decided
        api = await app.client.post(
            "/api/v1/silences", json={"matchers": [SILENCED], "duration": "2h", "comment": COMMENT}, headers=TOKEN
        )
        assert api.status_code in (200, 201), api.text
        await app.runtime.engine.run_once()
        incident = await app.incident_id("gpu-node-07: GPUHighTemp")
        detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
        await add_delivery(
            app.runtime, incident_id=incident, key=detail["incident"]["key"], errors=("timeout", "errcode 130101")
        )
        yield app


def _data(app: App) -> list[str]:
    """What a page shows as data: label names and values, the rules' names of channels, receivers and rules,
    people's names, the silence's comment, errors vendors returned; longest first."""
    values: set[str] = {COMMENT, SILENCED, "alice", "token:ci", "webhook", "alertrouter", "timeout", "errcode 130101"}
    values |= {"dcgm-exporter", "node-exporter", "soon"}  # the exporters a hint names; a duration typed
    for labels in (*NORTH, *SOUTH, DOWN):
        values |= set(labels) | set(labels.values())
    rules = app.runtime.ruleset
    for cfg in rules.channels:
        values |= {cfg.name, str(cfg.type)}
    dumped = rules.model_dump(mode="json", by_alias=True)
    oncall = dumped.get("oncall") or {}
    for person in oncall.get("people") or []:
        values |= {person["name"], person["display_name"]}
    for section in ("schedules", "escalations"):
        values |= {entry["name"] for entry in oncall.get(section) or []}
    for section in ("receivers", "aggregation", "inhibit_rules"):
        for entry in dumped.get(section) or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                values.add(entry["name"])
    return sorted((v for v in values if v), key=len, reverse=True)


def _visible(page: str, data: Iterable[str]) -> str:
    """The page's words: no markup, no machine text, no data."""
    body = page.split("<body>", 1)[1]
    body = re.sub(r'<span class="lang".*?</span>\s*</div>', " ", body, flags=re.S)  # the switch names both
    body = _MACHINE.sub(" ", body)
    text = htmlmod.unescape(re.sub(r"<[^>]*>", " ", body))
    text = re.sub(r'title="[^"]*"', " ", text)
    for value in data:
        text = re.sub(rf"(?<![A-Za-z]){re.escape(value)}(?![A-Za-z])", " ", text)
    return text


async def _escalate(app: App, incident: int) -> None:
    """The incident's escalation chain with its first step taken, as the engine records it."""
    async with app.runtime.db.write() as session:
        row = await session.get(IncidentRow, incident)
        assert row is not None
        now = utcnow()
        chain = Chain(row.key, "critical-unacked", now, 0, now)
        await escalations.start_chains(session, [chain], {"critical-unacked": 3}, now)
        after = Chain(row.key, "critical-unacked", now, 1, now + timedelta(minutes=10))
        entry = {"event": "step", "step": 1, "steps": 3, "after": "10m", "receivers": ["oncall-secondary"]}
        assert await escalations.save_step(session, chain, after, entry, now)
        alerts = (await session.scalars(select(AlertRow).where(AlertRow.incident_key == row.key))).all()
        await insert_events(
            session,
            [
                {"fingerprint": a.fingerprint, "kind": "escalation", "at": now, "episode_starts_at": a.starts_at}
                | {"raw_event_id": None, "detail": detail}
                for a in alerts
                for detail in ({"event": "started", "policy": "critical-unacked"}, entry)
            ],
        )
        await session.commit()


async def _pages(app: App) -> dict[str, str]:
    """Every console page over the sample, as the logged-in person (and the link pages as anyone)."""
    pages: dict[str, str] = {}
    client = app.client
    pages["login"] = (await client.get("/login")).text
    pages["login failed"] = (await client.post("/login", data={"user": "alice", "password": "wrong!"})).text
    await app.login()
    incident = await app.incident_id("gpu-node-07: GPUHighTemp")
    for path in (
        "/incidents?status=all",
        f"/incidents/{incident}",
        "/alerts/muted",
        "/silences",
        "/maintenance",
        "/channels",
    ):
        pages[path] = (await client.get(path)).text
    pages["/nodes"] = (await client.get("/nodes")).text
    pages["/oncall"] = (await client.get("/oncall")).text
    down = await app.incident_id("NodeDown")
    await _escalate(app, down)
    pages["escalated incident"] = (await client.get(f"/incidents/{down}")).text
    pages["/oncall escalating"] = (await client.get("/oncall")).text
    pages["/heartbeats"] = (await client.get("/heartbeats")).text
    pages["/rules"] = (await client.get("/rules")).text
    pages["no incidents"] = (await client.get("/incidents?status=resolved")).text
    pages["missing incident"] = (await client.get("/incidents/999999")).text
    csrf = await app.csrf()
    pages["silence error"] = (
        await client.post("/silences", data={"csrf": csrf, "matchers": SILENCED, "duration": "soon"})
    ).text
    pages["empty simulate"] = (await client.post("/rules/simulate", data={"csrf": csrf, "payload": ""})).text
    pages["expired form"] = (await client.post("/silences", data={"csrf": "stale", "matchers": SILENCED})).text
    signer = Signer(SECRET, LINK_PURPOSE)
    for action in (Action.ACK, Action.SILENCE):
        link = action_link(signer, "http://ar", action, incident, now=utcnow(), ttl=timedelta(hours=1))
        path = link.removeprefix("http://ar")
        pages[f"link {action.value}"] = (await client.get(path)).text
        pages[f"link {action.value} done"] = (await client.post(path)).text
        pages[f"link {action.value} used"] = (await client.get(path)).text
    pages["invalid link"] = (await client.get("/a/not-a-token")).text
    return pages


async def test_every_page_in_chinese_has_no_english_word_of_the_product(zh_app: App) -> None:
    pages = await _pages(zh_app)
    data = _data(zh_app)
    kept = KEPT | {datetime(2026, 1, 1, tzinfo=UTC).astimezone(ZoneInfo(ZONE)).strftime("%Z")}
    for name, page in pages.items():
        assert '<html lang="zh-CN">' in page, name
        leaked = [w for w in _WORD.findall(_visible(page, data)) if w not in kept]
        assert leaked == [], f"{name}: {leaked}"
        assert _CJK.search(_visible(page, data)), name
    listed = pages["/incidents?status=all"]
    assert "gpu-node-07：3/8 块 GPU GPUHighTemp" in listed  # the headline worded from its facts, as in messages
    assert "严重" in listed  # severity and state words
    assert "已静默" in listed
    incident = await zh_app.incident_id("gpu-node-07: GPUHighTemp")
    assert "UTC" not in _visible(pages[f"/incidents/{incident}"], data)
    assert 'data-address="10.0.0.7"' in pages["/nodes"]  # the nodes page with a learned address, not only empty
    # the on-call page lists the shipped schedules; the escalated incident shows its chain, and the page its run
    assert 'data-schedule="gpu-primary"' in pages["/oncall"]
    assert 'id="escalation" data-stopped="" data-next-step="1"' in pages["escalated incident"]
    assert "第 1/3 级（10m 后）：oncall-secondary" in pages["escalated incident"]
    assert 'id="escalations"' in pages["/oncall escalating"]
    assert 'data-escalation="started"' in pages["escalated incident"]  # the trail's escalation events
    assert 'data-escalation="step"' in pages["escalated incident"]


async def test_states_and_delivery_errors_read_in_chinese(zh_app: App) -> None:
    """A silence that has not begun, an unconfigured channel's delivery, the product's own delivery errors:
    Chinese words on a zh-CN page; what a vendor answered kept as written, labelled as the vendor's."""
    ahead = {"matchers": ['node="gpu-node-30"'], "starts_at": "2030-01-01T08:00:00+08:00", "duration": "2h"}
    assert (await zh_app.client.post("/api/v1/silences", json=ahead, headers=TOKEN)).status_code == 201
    incident = await zh_app.incident_id("gpu-node-07: GPUHighTemp")
    await add_delivery(zh_app.runtime, incident_id=incident, status="unconfigured", errors=())
    cap = "daily cap reached, not sent to 2 number(s)"
    await add_delivery(zh_app.runtime, incident_id=incident, status="capped", errors=(cap,))
    vendor = "errcode 310000: keywords not in content"
    wrapped = f"dead letter after 3 unexpected failures: {vendor}"
    await add_delivery(zh_app.runtime, incident_id=incident, errors=("timeout", wrapped))
    await zh_app.login()
    silences = (await zh_app.client.get("/silences")).text
    ahead_row = silences.split('data-state="pending"')[1].split("</tr>")[0]
    assert "未开始" in ahead_row
    assert "待处理" not in ahead_row
    page = (await zh_app.client.get(f"/incidents/{incident}")).text
    assert 'data-status="unconfigured">未配置' in page
    assert "已达每日上限，2 个号码未发送" in page
    assert f"意外失败 3 次后转为死信：对方原文：{vendor}" in page
    channels = (await zh_app.client.get("/channels")).text
    assert f"对方原文：{vendor}" in channels  # the dead letter's last error
    data = [vendor, 'node="gpu-node-30"', "gpu-node-30", *_data(zh_app)]  # longest first, as `_data`
    kept = KEPT | {datetime(2026, 1, 1, tzinfo=UTC).astimezone(ZoneInfo(ZONE)).strftime("%Z")}
    for name, text in (("/silences", silences), ("incident", page), ("/channels", channels)):
        leaked = [w for w in _WORD.findall(_visible(text, data)) if w not in kept]
        assert leaked == [], f"{name}: {leaked}"
    zh_app.client.cookies.set(LANGUAGE_COOKIE, "en")
    english = (await zh_app.client.get(f"/incidents/{incident}")).text
    assert f"dead: {wrapped}" in english  # English shows the stored text as it is
    assert "not started" in (await zh_app.client.get("/silences")).text


async def test_every_page_in_english_has_no_chinese(zh_app: App) -> None:
    zh_app.client.cookies.set(LANGUAGE_COOKIE, "en")
    pages = await _pages(zh_app)
    data = _data(zh_app)
    for name, page in pages.items():
        assert '<html lang="en">' in page, name
        assert not _CJK.search(_visible(page, data)), name
    assert "gpu-node-07: GPUHighTemp on 3/8 GPUs" in pages["/incidents?status=all"]


async def test_times_are_in_the_rules_time_zone(zh_app: App) -> None:
    await zh_app.login()
    incident = await zh_app.incident_id("gpu-node-07: GPUHighTemp")
    detail = (await zh_app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()["incident"]
    opened = datetime.fromisoformat(detail["opened_at"].replace("Z", "+00:00"))
    page = (await zh_app.client.get(f"/incidents/{incident}")).text
    shanghai = opened.astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S")
    assert f"{shanghai} CST" in page  # Shanghai is UTC+8 all year: no daylight time to make this flaky
    assert opened.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") not in page


@pytest.mark.parametrize(
    ("cookie", "rules", "chosen"),
    [
        (None, "zh-CN", "zh-CN"),  # nothing said: the rules
        (None, "en", "en"),
        ("en", "zh-CN", "en"),  # the switch over the rules
        ("zh-CN", "en", "zh-CN"),
        ("klingon", "zh-CN", "zh-CN"),  # a cookie naming no language is ignored
        ("", "en", "en"),
    ],
)
def test_language_precedence(cookie: str | None, rules: str, chosen: str) -> None:
    assert choose_language(cookie, rules) == chosen


async def test_an_english_browser_reads_the_rules_language_until_it_switches(zh_app: App) -> None:
    """The shipped rules say zh-CN: a browser asking for English still gets Chinese pages, and English only
    after its person uses the switch."""
    client = zh_app.client
    english_browser = {"Accept-Language": "en-US,en;q=0.9"}
    await zh_app.login()
    page = (await client.get("/incidents", headers=english_browser)).text
    assert '<html lang="zh-CN">' in page
    assert "gpu-node-07：3/8 块 GPU GPUHighTemp" in page
    assert "gpu-node-07: GPUHighTemp on 3/8 GPUs" not in page
    r = await client.get("/language/en?next=/incidents", headers=english_browser)
    assert r.status_code == 303
    page = (await client.get("/incidents", headers=english_browser)).text
    assert '<html lang="en">' in page
    assert "gpu-node-07: GPUHighTemp on 3/8 GPUs" in page
    chinese_browser = {"Accept-Language": "zh-CN,zh;q=0.9"}
    assert '<html lang="en">' in (await client.get("/incidents", headers=chinese_browser)).text  # the switch wins


async def test_the_switch_remembers_the_choice_and_goes_back(zh_app: App) -> None:
    client = zh_app.client
    assert '<html lang="zh-CN">' in (await client.get("/login", headers={"Accept-Language": "zh-CN"})).text
    r = await client.get("/language/en?next=/login%3Fnext%3D%2Fsilences")
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=/silences"
    assert f"{LANGUAGE_COOKIE}=en" in r.headers["set-cookie"]
    assert "HttpOnly" in r.headers["set-cookie"]
    page = (await client.get("/login", headers={"Accept-Language": "zh-CN"})).text
    assert '<html lang="en">' in page  # the switch wins over the rules
    assert 'href="/language/zh-CN?next=%2Flogin"' in page  # and offers the other language back
    r = await client.get("/language/auto?next=https://evil.example/")
    assert r.headers["location"] == "/incidents"  # only a path on this server
    assert '<html lang="zh-CN">' in (await client.get("/login")).text  # forgotten: the rules again


async def test_the_webhook_credential_reads_pages_in_the_rules_language(zh_app: App) -> None:
    page = (await zh_app.client.get("/incidents", headers=HOOK)).text
    assert '<html lang="zh-CN">' in page
    assert "事件" in page
