"""/docs and /redoc work on a network that reaches only alertrouter: their pages name no other host, and every
script, stylesheet and icon they load is served by alertrouter from the installed package."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from alertrouter.app import create_app
from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings

REPO = Path(__file__).resolve().parents[2]
URL = re.compile(r"\b(?:https?:)?//[\w.-]+", re.IGNORECASE)  # absolute or scheme-relative: another host
TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}


class Assets(HTMLParser):
    """Every URL a page loads by itself: script src, link href."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        url = named.get("src") if tag == "script" else named.get("href") if tag == "link" else None
        if url:
            self.urls.append(url)


def assets_of(html: str) -> list[str]:
    parser = Assets()
    parser.feed(html)
    return parser.urls


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The real app, not started: the pages need no store (its lifespan, which opens one, is not run)."""
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}", bearer_token="am-token-5f1c-0123456"
    )
    app = create_app(settings, load_ruleset(REPO / "rules", {}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ar") as c:
        yield c


@pytest.mark.parametrize(
    ("page", "loads"),
    [
        ("/docs", {"/static/docs/swagger-ui-bundle.js", "/static/docs/swagger-ui.css", "/static/docs/favicon.png"}),
        ("/redoc", {"/static/docs/redoc.standalone.js", "/static/docs/favicon.png"}),
    ],
)
async def test_the_page_and_what_it_loads_come_from_alertrouter(
    client: httpx.AsyncClient, page: str, loads: set[str]
) -> None:
    r = await client.get(page)
    assert r.status_code == 200
    assert not URL.findall(r.text), f"{page} names another host"
    assert "fonts.googleapis" not in r.text
    policy = r.headers["content-security-policy"]  # what a bundle would fetch from elsewhere, the browser refuses
    assert policy.startswith("default-src 'none'; script-src 'self'"), policy
    assert "img-src 'self' data:;" in policy
    assert not URL.findall(policy), policy
    assert set(assets_of(r.text)) == loads
    for url in sorted(loads):
        asset = await client.get(url)
        assert asset.status_code == 200, url
        assert TYPES[Path(url).suffix] in asset.headers["content-type"], (url, asset.headers["content-type"])
        assert len(asset.content) > 1000, url
    assert (await client.get("/static/docs/favicon.png")).content.startswith(b"\x89PNG\r\n\x1a\n")
    assert re.search(r"""(url: '|spec-url=")/openapi\.json['"]""", r.text), "the schema alertrouter serves"
    assert (await client.get("/openapi.json")).status_code == 200


async def test_swagger_ui_sends_the_schema_nowhere(client: httpx.AsyncClient) -> None:
    """Swagger UI's validator badge sends the schema's URL to validator.swagger.io unless told not to."""
    swagger = (await client.get("/docs")).text
    assert '"validatorUrl": null' in swagger
    redirect = await client.get("/docs/oauth2-redirect")
    assert redirect.status_code == 200
    assert not URL.findall(redirect.text)


async def test_the_scripts_are_the_released_swagger_ui_and_redoc(client: httpx.AsyncClient) -> None:
    """What a browser runs: the bundles as their projects build them, not an empty or an error page."""
    swagger = (await client.get("/static/docs/swagger-ui-bundle.js")).text
    redoc = (await client.get("/static/docs/redoc.standalone.js")).text
    assert "SwaggerUIBundle" in swagger[:1000]
    assert "Redoc" in redoc[:1000]
    assert (await client.get("/static/docs/../app.py")).status_code == 404
