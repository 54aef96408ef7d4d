"""The console in a real headless Chromium (Debian's, driven by Playwright) against a real `alertrouter
serve`: log in, the incident list, an incident, acknowledging through a signed link, a silence and its
effect, and hostile label values shown as text."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from alertrouter.auth.links import LINK_PURPOSE, Action, action_link
from alertrouter.auth.signing import Signer
from alertrouter.model import utcnow
from support.need import need
from support.procs import Proc, start_alertrouter
from support.scenario import gpu_labels

from .conftest import HOOK, PASSWORD, SECRET, TOKEN, USERS, WEBHOOK_TOKEN

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE_NODE = '"><img src=x onerror=alert(1)>'
HOSTILE_SUMMARY = "<script>alert(1)</script>"

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - reported by the fixture below
    sync_playwright = None  # type: ignore[assignment]


def wait_for(check: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def post_alerts(url: str, alerts: list[dict[str, str]], annotations: dict[str, str] | None = None) -> None:
    body = {
        "version": "4",
        "status": "firing",
        "alerts": [
            {"status": "firing", "labels": a, "annotations": annotations or {}, "startsAt": "2026-01-01T00:00:00Z"}
            for a in alerts
        ],
    }
    r = httpx.post(f"{url}/webhook/alertmanager", content=json.dumps(body), headers=HOOK, timeout=10)
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
        post_alerts(proc.url, [gpu_labels(HOSTILE_NODE, 4, region="east")], {"summary": HOSTILE_SUMMARY})
        for part in ("gpu-node-07", "gpu-node-09", HOSTILE_NODE):
            incident_id(proc.url, part)
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    need(sync_playwright is not None, "the playwright Python package is not installed (pip install -e '.[dev]')")
    need(CHROMIUM.exists(), "Debian's chromium is not installed (bash .ci/setup installs it)")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    pg = context.new_page()
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
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


def test_incident_list_and_incident(server: Proc, page: Page) -> None:
    login(page, server)
    row = page.locator("li", has_text="gpu-node-07: GPUHighTemp on 3/8 GPUs")
    assert row.count() == 1
    assert row.locator(".grid span.on").count() == 3
    assert row.locator(".grid span").count() == 8
    page.select_option("select[name=region]", "south")
    page.click("form.filters button")
    page.wait_for_url("**region=south**")
    assert page.locator("ul.incidents li").count() == 1
    page.click("text=gpu-node-09: GPUHighTemp on 2/8 GPUs")
    page.wait_for_url("**/incidents/*")
    assert page.locator("#alerts tr[data-fingerprint]").count() == 2
    assert page.locator("h1").inner_text().endswith("gpu-node-09: GPUHighTemp on 2/8 GPUs")


def test_acknowledge_through_a_signed_link_without_login(server: Proc, page: Page) -> None:
    incident = incident_id(server.url, "gpu-node-07")
    link = action_link(
        Signer(SECRET, LINK_PURPOSE), server.url, Action.ACK, incident, now=utcnow(), ttl=timedelta(hours=1)
    )
    page.goto(link)
    assert "Acknowledge this incident?" in page.content()
    page.click("#confirm")
    page.wait_for_selector("#result")
    assert page.locator("#result").inner_text() == "Acknowledged"
    page.goto(link)  # the same link again
    assert page.locator("#title").inner_text() == "Link already used"
    login(page, server, f"/incidents/{incident}")
    assert page.locator("dd [data-state]").inner_text() == "acknowledged"


def test_create_a_silence_and_see_its_effect(server: Proc, page: Page) -> None:
    incident = incident_id(server.url, "gpu-node-09")
    login(page, server, "/silences")
    page.fill("textarea[name=matchers]", 'node="gpu-node-09"')
    page.fill("input[name=duration]", "2h")
    page.fill("input[name=comment]", "maintenance")
    page.click("#new-silence button[type=submit]")
    page.wait_for_url("**/silences?created=*")
    assert page.locator('#silences tr[data-state="active"]', has_text='node="gpu-node-09"').count() == 1

    def silenced() -> bool:
        page.goto(f"{server.url}/incidents/{incident}")
        decisions = page.locator("#alerts [data-decision]").all_inner_texts()
        return (
            bool(decisions)
            and set(decisions) == {"silenced"}
            and page.locator("dd [data-state]").inner_text() == "silenced"
        )

    wait_for(silenced, "the engine to apply the silence")
    page.goto(f"{server.url}/silences")
    muting = page.locator('#silences tr[data-state="active"] td').nth(4).inner_text()
    assert muting == "2"


def test_hostile_label_values_render_as_text(server: Proc, page: Page) -> None:
    login(page, server, "/incidents?status=all")
    headline = f"{HOSTILE_NODE}: GPUHighTemp on 1/8 GPUs"
    assert page.get_by_text(headline, exact=True).count() == 1
    assert page.locator("img").count() == 0
    page.get_by_text(headline, exact=True).click()
    page.wait_for_url("**/incidents/*")
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 0
    assert HOSTILE_NODE in page.locator("#alerts").inner_text()
    assert page.locator("#alerts .summary").inner_text() == HOSTILE_SUMMARY
    assert page.dialogs == []  # type: ignore[attr-defined]
