"""Who may read and write: anonymous, open reads, the webhook credential, API tokens, sessions, CSRF."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from alertrouter.auth.links import SESSION_PURPOSE
from alertrouter.auth.signing import Signer
from alertrouter.model import utcnow
from alertrouter.web.access import SESSION_COOKIE
from alertrouter.web.console.login import safe_next
from support.scenario import gpu_labels

from .conftest import API_TOKEN, HOOK, PASSWORD, SECRET, TOKEN, App, running

GPU = [gpu_labels("gpu-node-07", g, region="north") for g in range(2)]


async def test_anonymous_is_sent_to_login_and_the_api_answers_401(app: App) -> None:
    r = await app.client.get("/incidents?region=north")
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=%2Fincidents%3Fregion%3Dnorth"
    assert (await app.client.get("/api/v1/incidents")).status_code == 401
    assert (await app.client.post("/api/v1/silences", json={})).status_code == 401
    assert (await app.client.post("/api/v1/incidents/1/ack")).status_code == 401


async def test_login_sets_a_hardened_cookie_and_reads_work(app: App, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    bad = await app.client.post("/login", data={"user": "alice", "password": "wrong", "next": "/silences"})
    assert bad.status_code == 401
    assert "Wrong user name or password" in bad.text
    assert SESSION_COOKIE not in bad.headers.get("set-cookie", "")
    assert "console login failed for user 'alice'" in caplog.text
    assert "wrong" not in caplog.text.replace("Wrong", "")  # the password is never logged

    r = await app.client.post("/login", data={"user": "alice", "password": PASSWORD, "next": "/silences"})
    assert r.status_code == 303
    assert r.headers["location"] == "/silences"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # no https external URL in the shipped rules
    page = await app.client.get("/incidents")
    assert page.status_code == 200
    assert "alice" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert (await app.client.get("/api/v1/incidents")).status_code == 200  # the session reads the API too


async def test_unknown_user_fails_like_a_wrong_password(app: App) -> None:
    r = await app.client.post("/login", data={"user": "mallory", "password": PASSWORD})
    assert r.status_code == 401
    assert SESSION_COOKIE not in app.client.cookies


async def test_console_writes_need_the_session_csrf_token(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    csrf = await app.login()
    r = await app.client.post(f"/incidents/{incident}/ack", data={"csrf": "forged"})
    assert r.status_code == 403
    r = await app.client.post(f"/incidents/{incident}/ack", data={})
    assert r.status_code == 403
    detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
    assert detail["incident"]["acknowledged_at"] is None
    r = await app.client.post(f"/incidents/{incident}/ack", data={"csrf": csrf})
    assert r.status_code == 303
    detail = (await app.client.get(f"/api/v1/incidents/{incident}", headers=TOKEN)).json()
    assert detail["incident"]["acknowledged_at"] is not None


async def test_api_writes_by_session_need_the_csrf_header(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    csrf = await app.login()
    assert (await app.client.post(f"/api/v1/incidents/{incident}/ack")).status_code == 403
    r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200
    assert r.json()["acknowledged_at"] is not None


async def test_forged_and_expired_session_cookies_are_ignored(app: App) -> None:
    other = Signer("another-secret-0123456789abcdef", SESSION_PURPOSE)
    app.client.cookies.set(SESSION_COOKIE, other.sign({"u": "alice", "c": "x"}, expires=utcnow() + timedelta(hours=1)))
    assert (await app.client.get("/incidents")).status_code == 303
    ours = Signer(SECRET, SESSION_PURPOSE)
    app.client.cookies.set(SESSION_COOKIE, ours.sign({"u": "alice", "c": "x"}, expires=utcnow() - timedelta(seconds=1)))
    assert (await app.client.get("/incidents")).status_code == 303
    app.client.cookies.set(SESSION_COOKIE, ours.sign({"u": "eve", "c": "x"}, expires=utcnow() + timedelta(hours=1)))
    assert (await app.client.get("/incidents")).status_code == 303  # not a configured user
    app.client.cookies.set(SESSION_COOKIE, ours.sign({"u": "alice", "c": "x"}, expires=utcnow() + timedelta(hours=1)))
    assert (await app.client.get("/incidents")).status_code == 200


async def test_webhook_credential_reads_but_never_writes(app: App) -> None:
    await app.seed(GPU)
    incident = await app.incident_id("gpu-node-07")
    assert (await app.client.get("/api/v1/incidents", headers=HOOK)).status_code == 200
    r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers=HOOK)
    assert r.status_code == 403
    r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers={"Authorization": "Bearer nope-nope-nope"})
    assert r.status_code == 401
    r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers=TOKEN)
    assert r.status_code == 200
    assert r.json()["acknowledged_at"] is not None


async def test_read_only_refuses_every_write_but_reads(database_url: str) -> None:
    async with running(database_url, console_read_only=True) as app:
        await app.seed(GPU)
        incident = await app.incident_id("gpu-node-07")
        r = await app.client.post(f"/api/v1/incidents/{incident}/ack", headers=TOKEN)
        assert r.status_code == 403
        assert "read-only" in r.json()["detail"]
        csrf = await app.login()
        page = await app.client.get(f"/incidents/{incident}")
        assert page.status_code == 200
        assert 'id="ack"' not in page.text
        r = await app.client.post("/silences", data={"csrf": csrf, "matchers": 'node="gpu-node-07"', "duration": "1h"})
        assert r.status_code == 403
        assert (await app.client.get("/api/v1/silences", headers=TOKEN)).json() == []


async def test_anonymous_read_opens_pages_not_writes(database_url: str) -> None:
    async with running(database_url, console_anonymous_read=True) as app:
        await app.seed(GPU)
        incident = await app.incident_id("gpu-node-07")
        assert (await app.client.get("/incidents")).status_code == 200
        assert (await app.client.get(f"/incidents/{incident}")).status_code == 200
        r = await app.client.post(f"/incidents/{incident}/ack", data={"csrf": ""})
        assert r.status_code == 303
        assert r.headers["location"].startswith("/login")
        assert (await app.client.post(f"/api/v1/incidents/{incident}/ack")).status_code == 401


async def test_without_any_credential_reads_are_open_and_writes_explain_how_to_enable_them(database_url: str) -> None:
    async with running(database_url, bearer_token=None, console_users=None, api_tokens=None) as app:
        assert (await app.client.get("/incidents")).status_code == 200
        assert (await app.client.get("/api/v1/incidents")).status_code == 200
        r = await app.client.post("/api/v1/silences", json={"matchers": ['node="a"'], "duration": "1h"})
        assert r.status_code == 403
        assert "ALERTROUTER_CONSOLE_USERS" in r.json()["detail"]
        page = await app.client.post("/silences", data={"matchers": 'node="a"', "duration": "1h"})
        assert page.status_code == 403
        assert "ALERTROUTER_API_TOKENS" in page.text


async def test_api_token_alone_protects_reads(database_url: str) -> None:
    async with running(database_url, bearer_token=None, console_users=None) as app:
        assert (await app.client.get("/api/v1/incidents")).status_code == 401
        assert (await app.client.get("/api/v1/incidents", headers=TOKEN)).status_code == 200
        assert API_TOKEN not in (await app.client.get("/rules", headers=TOKEN)).text


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/incidents/4", "/incidents/4"),
        ("/silences?created=1", "/silences?created=1"),
        ("//evil.example/x", "/incidents"),
        ("https://evil.example/", "/incidents"),
        ("/\\evil.example", "/incidents"),
        ("/ok\r\nSet-Cookie: x=1", "/incidents"),
    ],
)
def test_login_redirects_only_to_local_paths(target: str, expected: str) -> None:
    assert safe_next(target) == expected


async def test_an_oversized_form_is_refused_while_it_streams_in(app: App) -> None:
    pulled = 0

    async def body() -> AsyncIterator[bytes]:  # 1 MiB in 8 KiB pieces, sent without a Content-Length
        nonlocal pulled
        for _ in range(128):
            pulled += 1
            yield b"a=" + b"x" * 8190

    r = await app.client.post("/login", content=body(), headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    assert "64 KiB" in r.text
    assert pulled < 16  # stopped at the limit, not after the whole megabyte
