"""A logout revokes the session in the store: a copy of the cookie taken before is refused after it, by
this replica and any other (and after a restart), while the user's other sessions keep working."""

from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy import func, select

from alertrouter.auth.links import SESSION_PURPOSE
from alertrouter.auth.signing import Signer
from alertrouter.model import utcnow
from alertrouter.store.tables import RevokedSessionRow
from alertrouter.web.access import SESSION_COOKIE

from .conftest import SECRET, App, running


async def _log_in(app: App) -> tuple[str, str]:
    """(session cookie, CSRF token) of a fresh login on `app`'s client."""
    app.client.cookies.clear()
    csrf = await app.login()
    cookie = app.client.cookies.get(SESSION_COOKIE)
    assert cookie
    return cookie, csrf


async def _as(app: App, cookie: str, path: str) -> httpx.Response:
    """`path` requested with only this session cookie, as a stolen copy of it would be."""
    app.client.cookies.clear()
    app.client.cookies.set(SESSION_COOKIE, cookie)
    return await app.client.get(path)


async def test_a_cookie_copied_before_logout_is_refused_after_it(app: App) -> None:
    kept, _ = await _log_in(app)  # alice on another browser
    copied, csrf = await _log_in(app)
    assert (await _as(app, copied, "/incidents")).status_code == 200

    app.client.cookies.set(SESSION_COOKIE, copied)
    r = await app.client.post("/logout", data={"csrf": csrf})
    assert r.status_code == 303
    assert r.headers["location"] == "/login"

    page = await _as(app, copied, "/incidents")
    assert page.status_code == 303  # the console sends it to the login page
    assert page.headers["location"].startswith("/login")
    assert (await _as(app, copied, "/api/v1/incidents")).status_code == 401
    app.client.cookies.clear()
    app.client.cookies.set(SESSION_COOKIE, copied)
    write = await app.client.post("/api/v1/incidents/1/ack", headers={"X-CSRF-Token": csrf})
    assert write.status_code == 401

    other = await _as(app, kept, "/incidents")  # the same user's other session is untouched
    assert other.status_code == 200
    assert "alice" in other.text
    assert (await _as(app, kept, "/api/v1/incidents")).status_code == 200


async def test_the_revocation_is_in_the_store_for_every_replica_and_restart(database_url: str) -> None:
    async with running(database_url) as first:
        copied, csrf = await _log_in(first)
        assert (await first.client.post("/logout", data={"csrf": csrf})).status_code == 303
    async with running(database_url) as second:  # another replica, or the same one restarted
        assert (await _as(second, copied, "/incidents")).status_code == 303
        assert (await _as(second, copied, "/api/v1/incidents")).status_code == 401
        fresh, _ = await _log_in(second)
        assert (await _as(second, fresh, "/incidents")).status_code == 200


async def test_a_cookie_from_before_sessions_had_ids_is_revoked_too(app: App) -> None:
    legacy = Signer(SECRET, SESSION_PURPOSE).sign(
        {"u": "alice", "c": "legacy-csrf-0123"}, expires=utcnow() + timedelta(hours=1)
    )
    assert (await _as(app, legacy, "/incidents")).status_code == 200
    assert (await app.client.post("/logout", data={"csrf": "legacy-csrf-0123"})).status_code == 303
    assert (await _as(app, legacy, "/incidents")).status_code == 303


async def test_a_logout_prunes_revocations_of_sessions_that_have_expired(app: App) -> None:
    signer = Signer(SECRET, SESSION_PURPOSE)
    now = utcnow()
    async with app.runtime.db.write() as session:
        session.add(RevokedSessionRow(session_id="gone", username="bob", revoked_at=now, expires_at=now - timedelta(1)))
        session.add(RevokedSessionRow(session_id="live", username="bob", revoked_at=now, expires_at=now + timedelta(1)))
        await session.commit()
    cookie = signer.sign({"u": "alice", "c": "csrf-0123456789", "s": "mine"}, expires=now + timedelta(hours=1))
    assert (await _as(app, cookie, "/incidents")).status_code == 200
    assert (await app.client.post("/logout", data={"csrf": "csrf-0123456789"})).status_code == 303
    async with app.runtime.db.read() as session:
        left = (await session.scalars(select(RevokedSessionRow.session_id).order_by("session_id"))).all()
        assert list(left) == ["live", "mine"]
        assert (await session.scalar(select(func.count()).select_from(RevokedSessionRow))) == 2
