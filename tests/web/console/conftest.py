"""An in-process app with console users, an API token and the webhook credential, seeded with GPU alerts."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from alertrouter.app import create_app
from alertrouter.auth.passwords import hash_password
from alertrouter.ruleset import Ruleset, load_ruleset
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings
from support.webhooks import Status, webhook

REPO = Path(__file__).resolve().parents[3]
WEBHOOK_TOKEN = "hook-token-5d1f-0123"
API_TOKEN = "ci-token-0123456789abcdef"
PASSWORD = "correct horse battery"
USERS = f"alice:{hash_password(PASSWORD, iterations=1000)},bob:{hash_password('bobs password', iterations=1000)}"
HOOK = {"Authorization": f"Bearer {WEBHOOK_TOKEN}"}
TOKEN = {"Authorization": f"Bearer {API_TOKEN}"}
SECRET = "console-tests-secret-key-0123456789"
_CSRF = re.compile(r'name="csrf" value="([^"]*)"')


@dataclass
class App:
    client: httpx.AsyncClient
    runtime: Runtime
    asgi: FastAPI

    async def seed(
        self, alerts: Sequence[Mapping[str, str]], *, status: Status = "firing", starts: str = "2026-01-01T00:00:00Z"
    ) -> None:
        ends = "2026-01-01T01:00:00Z" if status == "resolved" else None
        body = webhook(alerts, status=status, starts_at=starts, ends_at=ends)
        r = await self.client.post("/webhook/alertmanager", content=body, headers=HOOK)
        assert r.status_code == 200, r.text
        await self.runtime.engine.run_once()

    async def login(self, user: str = "alice", password: str = PASSWORD) -> str:
        """Logs in; returns the session's CSRF token."""
        r = await self.client.post("/login", data={"user": user, "password": password, "next": "/incidents"})
        assert r.status_code == 303, r.text
        return await self.csrf()

    async def csrf(self, path: str = "/silences") -> str:
        found = _CSRF.search((await self.client.get(path)).text)
        assert found is not None
        assert found.group(1)
        return found.group(1)

    async def incident_id(self, headline_part: str) -> int:
        listed = (await self.client.get("/api/v1/incidents", headers=TOKEN)).json()["incidents"]
        return int(next(i["id"] for i in listed if headline_part in i["headline"]))


def settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "bearer_token": WEBHOOK_TOKEN,
        "console_users": USERS,
        "api_tokens": f"ci:{API_TOKEN}",
        "secret_key": SECRET,
        "deliver": False,
        "scheduler": False,
    }
    values.update(overrides)
    return Settings(**{k: v for k, v in values.items() if v is not None})


def in_english(rules: Ruleset) -> Ruleset:
    """The rules with `global.language: en` and UTC: most console tests read its English words (the
    shipped rules say zh-CN and Asia/Shanghai; `test_languages.py` reads the console in both)."""
    return rules.model_copy(update={"global_": rules.global_.model_copy(update={"language": "en", "timezone": "UTC"})})


@contextlib.asynccontextmanager
async def running(
    database_url: str, *, ruleset: Ruleset | None = None, english: bool = True, **overrides: Any
) -> AsyncIterator[App]:
    rules = ruleset or load_ruleset(REPO / "rules", {})
    app = create_app(settings(database_url, **overrides), in_english(rules) if english else rules)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as c:
        yield App(c, app.state.runtime, app)


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[App]:
    async with running(database_url) as a:
        yield a
