"""The JSON API tests' app: the shipped rules on the test store, a bearer token, an httpx client on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from alertrouter.app import create_app
from alertrouter.ruleset import load_ruleset
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings

REPO = Path(__file__).resolve().parents[2]
TOKEN = "t0k-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def app_client(database_url: str) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    app = create_app(Settings(database_url=database_url, bearer_token=TOKEN), load_ruleset(REPO / "rules", {}))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as c:
        yield c, app.state.runtime
