"""The console in a real headless Chromium (Debian's, driven by Playwright) against a real `alertrouter
serve`, in English and in Chinese (the language switch's cookie): log in, the incident list, an incident,
acknowledging through a signed link, a silence and its effect, hostile label values shown as text, and the
language switch."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from alertrouter.auth.links import LINK_PURPOSE, Action, action_link
from alertrouter.auth.signing import Signer
from alertrouter.model import utcnow
from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.browser import chromium
from support.procs import Proc, start_alertrouter
from support.scenario import gpu_labels
from support.webhooks import webhook

from .conftest import HOOK, PASSWORD, SECRET, TOKEN, USERS, WEBHOOK_TOKEN

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page

pytestmark = pytest.mark.e2e

HOSTILE_NODE = '"><img src=x onerror=alert(1)>'
HOSTILE_SUMMARY = "<script>alert(1)</script>"
LANGUAGES = ["en", "zh-CN"]
# What each language's pages say, written out (not read from the catalogue the pages use).
SAYS: dict[str, dict[str, str]] = {
    "en": {
        "gpu-node-07": "gpu-node-07: GPUHighTemp on 3/8 GPUs",
        "gpu-node-09": "gpu-node-09: GPUHighTemp on 2/8 GPUs",
        "hostile": f"{HOSTILE_NODE}: GPUHighTemp on 1/8 GPUs",
        "confirm": "Acknowledge this incident?",
        "acknowledged": "Acknowledged",
        "used": "Link already used",
        "silences": "Silences",
    },
    "zh-CN": {
        "gpu-node-07": "gpu-node-07：3/8 块 GPU GPUHighTemp",
        "gpu-node-09": "gpu-node-09：2/8 块 GPU GPUHighTemp",
        "hostile": f"{HOSTILE_NODE}：1/8 块 GPU GPUHighTemp",
        "confirm": "确认此事件？",
        "acknowledged": "已确认",
        "used": "链接已使用",
        "silences": "静默",
    },
}
SILENCED_NODE = {"en": "gpu-node-09", "zh-CN": "gpu-node-11"}  # one node per language: each run its own silence


def wait_for(check: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def post_alerts(url: str, alerts: list[dict[str, str]], annotations: dict[str, str] | None = None) -> None:
    body = webhook(alerts, starts_at="2026-01-01T00:00:00Z", annotations=annotations)
    r = httpx.post(f"{url}/webhook/alertmanager", content=body, headers=HOOK, timeout=10)
    assert r.status_code == 200, r.text


def incidents(url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.get(f"{url}/api/v1/incidents", headers=TOKEN, timeout=10).json()["incidents"]
    return found


def incident_id(url: str, part: str) -> int:
    return int(wait_for(lambda: next((i["id"] for i in incidents(url) if part in i["headline"]), None), part))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    workdir = tmp_path_factory.mktemp("console-browser")
    proc = start_alertrouter(
        workdir,
        database_url=f"sqlite+aiosqlite:///{workdir / 'console.db'}",
        env={
            "ALERTROUTER_BEARER_TOKEN": WEBHOOK_TOKEN,
            "ALERTROUTER_CONSOLE_USERS": USERS,
            "ALERTROUTER_API_TOKENS": f"ci:{TOKEN['Authorization'].removeprefix('Bearer ')}",
            "ALERTROUTER_SECRET_KEY": SECRET,
            "ALERTROUTER_ENGINE_INTERVAL": "200ms",
            "ALERTROUTER_DELIVER": "false",
            "ALERTROUTER_SCHEDULER": "false",
        },
    )
    try:
        post_alerts(proc.url, [gpu_labels("gpu-node-07", g, region="north") for g in (0, 2, 5)])
        post_alerts(proc.url, [gpu_labels("gpu-node-09", g, region="south") for g in (1, 3)])
        post_alerts(proc.url, [gpu_labels("gpu-node-11", g, region="west") for g in (2, 6)])
        post_alerts(proc.url, [gpu_labels(HOSTILE_NODE, 4, region="east")], {"summary": HOSTILE_SUMMARY})
        for part in ("gpu-node-07", "gpu-node-09", "gpu-node-11", HOSTILE_NODE):
            incident_id(proc.url, part)
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as started:
        yield started


@pytest.fixture(params=LANGUAGES)
def language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def page(browser: Browser, server: Proc, language: str) -> Iterator[Page]:
    """A tab whose person chose `language` with the switch (its cookie); the browser itself asks for the
    other one, which the console does not read."""
    other = next(lang for lang in LANGUAGES if lang != language)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale=other)
    context.add_cookies([{"name": LANGUAGE_COOKIE, "value": language, "url": server.url}])
    dialogs: list[str] = []
    pg = context.new_page()

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    pg.on("dialog", dismiss)
    pg.dialogs = dialogs  # type: ignore[attr-defined]
    try:
        yield pg
    finally:
        context.close()


def login(page: Page, server: Proc, path: str = "/incidents") -> None:
    page.goto(server.url + path)
    assert "/login" in page.url
    page.fill("input[name=user]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")


def test_incident_list_and_incident(server: Proc, page: Page, language: str) -> None:
    says = SAYS[language]
    login(page, server)
    assert page.locator("html").get_attribute("lang") == language
    row = page.locator("li", has_text=says["gpu-node-07"])
    assert row.count() == 1
    assert row.locator(".grid span.on").count() == 3
    assert row.locator(".grid span").count() == 8
    page.select_option("select[name=region]", "south")
    page.click("form.filters button")
    page.wait_for_url("**region=south**")
    assert page.locator("ul.incidents li").count() == 1
    page.click(f"text={says['gpu-node-09']}")
    page.wait_for_url("**/incidents/*")
    assert page.locator("#alerts tr[data-fingerprint]").count() == 2
    assert page.locator("h1").inner_text().endswith(says["gpu-node-09"])


def test_acknowledge_through_a_signed_link_without_login(server: Proc, page: Page, language: str) -> None:
    says = SAYS[language]
    incident = incident_id(server.url, "gpu-node-07")
    link = action_link(
        Signer(SECRET, LINK_PURPOSE), server.url, Action.ACK, incident, now=utcnow(), ttl=timedelta(hours=1)
    )
    page.goto(link)
    assert says["confirm"] in page.content()
    page.click("#confirm")
    page.wait_for_selector("#result")
    assert page.locator("#result").inner_text() == says["acknowledged"]
    page.goto(link)  # the same link again
    assert page.locator("#title").inner_text() == says["used"]
    login(page, server, f"/incidents/{incident}")
    assert page.locator("dd [data-state]").get_attribute("data-state") == "acknowledged"


def test_create_a_silence_and_see_its_effect(server: Proc, page: Page, language: str) -> None:
    node = SILENCED_NODE[language]
    incident = incident_id(server.url, node)
    login(page, server, "/silences")
    page.fill("textarea[name=matchers]", f'node="{node}"')
    page.fill("input[name=duration]", "2h")
    page.fill("input[name=comment]", "maintenance")
    page.click("#new-silence button[type=submit]")
    page.wait_for_url("**/silences?created=*")
    assert page.locator('#silences tr[data-state="active"]', has_text=f'node="{node}"').count() == 1

    def silenced() -> bool:
        page.goto(f"{server.url}/incidents/{incident}")
        badges = page.locator("#alerts [data-decision]")
        decisions = {badges.nth(i).get_attribute("data-decision") for i in range(badges.count())}
        return decisions == {"silenced"} and page.locator("dd [data-state]").get_attribute("data-state") == "silenced"

    wait_for(silenced, "the engine to apply the silence")
    page.goto(f"{server.url}/silences")
    row = page.locator('#silences tr[data-state="active"]', has_text=f'node="{node}"')
    muting = row.locator("td").nth(4).inner_text()
    assert muting == "2"


def test_hostile_label_values_render_as_text(server: Proc, page: Page, language: str) -> None:
    login(page, server, "/incidents?status=all")
    headline = SAYS[language]["hostile"]
    assert page.get_by_text(headline, exact=True).count() == 1
    assert page.locator("img").count() == 0
    page.get_by_text(headline, exact=True).click()
    page.wait_for_url("**/incidents/*")
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 0
    assert HOSTILE_NODE in page.locator("#alerts").inner_text()
    assert page.locator("#alerts .summary").inner_text() == HOSTILE_SUMMARY
    assert page.dialogs == []  # type: ignore[attr-defined]


def test_the_language_switch_is_remembered(server: Proc, page: Page, language: str) -> None:
    other = next(code for code in LANGUAGES if code != language)
    login(page, server, "/silences")
    assert page.locator("html").get_attribute("lang") == language
    page.click(f'#language a[hreflang="{other}"]')
    page.wait_for_url("**/silences")  # back on the page it was clicked on
    assert page.locator("html").get_attribute("lang") == other
    assert page.locator("h1").inner_text() == SAYS[other]["silences"]
    page.goto(f"{server.url}/incidents")  # remembered on every page
    assert page.locator("html").get_attribute("lang") == other


def test_an_english_browser_reads_the_shipped_rules_language(server: Proc, browser: Browser) -> None:
    """The shipped rules say zh-CN: Chromium asking for en-US (no switch used) still gets Chinese pages."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        login(page, server)
        assert page.locator("html").get_attribute("lang") == "zh-CN"
        assert page.locator("li", has_text=SAYS["zh-CN"]["gpu-node-07"]).count() == 1
    finally:
        context.close()


# The lines a table cell's own text takes: one client rect per line of each text node.
_LINES = """cell => { const r = document.createRange(); let n = 0;
  for (const t of cell.childNodes) { if (t.nodeType === 3 && t.textContent.trim()) { r.selectNodeContents(t);
    n = Math.max(n, r.getClientRects().length); } } return n; }"""


def test_state_words_stay_on_one_line_on_a_phone(server: Proc, browser: Browser, language: str) -> None:
    """A phone-wide incident page: every status and decision cell reads on one line (a CJK word would
    otherwise break between its characters in a narrow column)."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.add_cookies([{"name": LANGUAGE_COOKIE, "value": language, "url": server.url}])
    try:
        page = context.new_page()
        login(page, server, f"/incidents/{incident_id(server.url, 'gpu-node-07')}")
        cells = page.locator("td[data-status], td[data-decision]")
        assert cells.count() >= 3
        lines = [cells.nth(i).evaluate(_LINES) for i in range(cells.count())]
        assert set(lines) == {1}, lines
    finally:
        context.close()
