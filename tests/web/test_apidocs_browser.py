"""/docs and /redoc in a real headless Chromium (Debian's, driven by Playwright) against a real `alertrouter
serve`, with every request to another host refused as a closed network would: both pages draw the API's
operations, and neither page nor any script it runs asked another host for anything."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from support.browser import chromium
from support.procs import Proc, start_alertrouter

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Route

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    workdir = tmp_path_factory.mktemp("apidocs-browser")
    proc = start_alertrouter(
        workdir,
        database_url=f"sqlite+aiosqlite:///{workdir / 'docs.db'}",
        env={
            "ALERTROUTER_BEARER_TOKEN": "am-token-5f1c-0123456",
            "ALERTROUTER_DELIVER": "false",
            "ALERTROUTER_SCHEDULER": "false",
        },
    )
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as started:
        yield started


@pytest.fixture
def offline(browser: Browser, server: Proc) -> Iterator[tuple[Page, list[str]]]:
    """A tab that reaches alertrouter only, and the URLs of the requests it refused: those a page's
    Content-Security-Policy stopped in the browser (as the console says) and those that reached the network."""
    own = urlsplit(server.url).netloc
    refused: list[str] = []

    def policy(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            refused.append(message.text)

    def gate(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).netloc == own:
            route.continue_()
        else:
            refused.append(url)
            route.abort("internetdisconnected")

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", gate)
    page = context.new_page()
    page.on("console", policy)
    try:
        yield page, refused
    finally:
        context.close()


def test_swagger_ui_draws_the_api_offline(server: Proc, offline: tuple[Page, list[str]]) -> None:
    page, refused = offline
    page.goto(server.url + "/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/webhook/alertmanager" in p for p in paths), paths
    assert page.locator(".swagger-ui .info .title").inner_text().startswith("alertrouter")
    page.locator(".opblock-summary-path", has_text="/api/v1/alerts").first.click()  # an operation opens
    page.wait_for_selector(".opblock.is-open .parameters, .opblock.is-open .opblock-description-wrapper")
    page.wait_for_load_state("networkidle")
    assert refused == []


def test_redoc_draws_the_api_offline(server: Proc, offline: tuple[Page, list[str]]) -> None:
    page, refused = offline
    page.goto(server.url + "/redoc")
    page.wait_for_selector("h1", timeout=20_000)
    assert page.locator("h1").first.inner_text().startswith("alertrouter")
    heading = page.get_by_role("heading", name="Alertmanager webhook receiver (version 4)")  # an operation's own
    heading.wait_for(timeout=20_000)
    heading.scroll_into_view_if_needed()
    page.wait_for_load_state("networkidle")
    # ReDoc draws its maker's logo from their CDN whatever it is told: the page's policy stops that request
    # before it leaves the browser, and nothing else is refused.
    assert len(refused) == 1, refused
    assert "https://cdn.redoc.ly/redoc/logo-mini.svg" in refused[0], refused
    assert "img-src" in refused[0], refused
