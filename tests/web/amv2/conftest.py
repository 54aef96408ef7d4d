"""Alertmanager API v2 tests: the console tests' in-process app (API token, webhook credential), on each store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from web.console.conftest import App, running


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    async with running(database_url) as a:
        yield a
