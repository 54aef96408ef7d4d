"""Console login limits: failed logins are counted per user name and per client address in the store, so
parallel guesses, and guesses spread over replicas, get no more tries than the limit; a locked name or
address is refused with 429 and `Retry-After` before its password is checked, even the right one; the
lock ends, and the next one lasts longer; each lock is logged and counted in /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import select, update

from alertrouter.model import utcnow
from alertrouter.settings import Settings
from alertrouter.store import Database, retention
from alertrouter.store.tables import LoginFailureRow
from alertrouter.web import access
from alertrouter.web.console.language import LANGUAGE_COOKIE
from alertrouter.web.logins import address_subject

from .conftest import PASSWORD, App, running

WRONG = "Tr0ub4dor&3"  # a guess; never written to a log


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """No time added per failure, where the test makes its failures one after another."""
    monkeypatch.setattr(access, "FAILED_LOGIN_DELAY", 0.0)


async def _post(client: httpx.AsyncClient, user: str, password: str) -> httpx.Response:
    return await client.post("/login", data={"user": user, "password": password, "next": "/incidents"})


async def _parallel(client: httpx.AsyncClient, user: str, count: int) -> Counter[int]:
    answers = await asyncio.gather(*(_post(client, user, WRONG) for _ in range(count)))
    return Counter(r.status_code for r in answers)


@contextlib.asynccontextmanager
async def _from(app: App, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `app` whose requests come from `address`."""
    transport = httpx.ASGITransport(app=app.asgi, client=(address, 50_000))
    async with httpx.AsyncClient(transport=transport, base_url="http://ar") as client:
        yield client


def _error(page: httpx.Response) -> str:
    found = re.search(r'<p class="error" id="error">([^<]*)</p>', page.text)
    assert found is not None, page.text
    return found.group(1)


def _metric(text: str, line_start: str) -> float:
    (value,) = [line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(line_start + " ")]
    return float(value)


async def _rows(app: App) -> dict[tuple[str, str], LoginFailureRow]:
    async with app.runtime.db.read() as session:
        return {(r.scope, r.subject): r for r in (await session.scalars(select(LoginFailureRow))).all()}


async def _end_locks(app: App) -> None:
    """Every lock ended a second ago: rows as a later time would find them, without waiting for it."""
    past = utcnow() - timedelta(seconds=1)
    async with app.runtime.db.write() as session:
        await session.execute(
            update(LoginFailureRow)
            .where(LoginFailureRow.locked_until.is_not(None))
            .values(locked_until=past, window_start=past)
        )
        await session.commit()


async def test_parallel_wrong_passwords_get_only_the_limit_checked(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The attack as found: 20 connections at once, each wrong password held for the failure delay.
    caplog.set_level(logging.INFO)
    async with running(database_url) as app:
        answers = await _parallel(app.client, "alice", 20)
        assert answers == {401: 5, 429: 15}  # 5 (ALERTROUTER_LOGIN_ACCOUNT_FAILURES) checked, whatever the parallelism
        assert caplog.text.count("console login failed for user 'alice'") == 5
        metrics = (await app.client.get("/metrics")).text
        assert _metric(metrics, "alertrouter_login_failures_total") == 5
        assert _metric(metrics, 'alertrouter_login_throttled_total{scope="account"}') == 15
        assert _metric(metrics, 'alertrouter_login_throttled_total{scope="address"}') == 0
        assert _metric(metrics, 'alertrouter_login_lockouts_total{scope="account"}') == 1
        locks = [r for r in caplog.records if "locked" in r.getMessage()]
        assert [(r.levelname, r.getMessage()) for r in locks] == [
            (
                "WARNING",
                "console login: user 'alice' locked for 900 s after 5 failed logins within 15m "
                "(the last from 127.0.0.1)",
            )
        ]


async def test_a_locked_user_is_refused_even_the_right_password(
    database_url: str, quick: None, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url) as app:
        for _ in range(4):
            assert (await _post(app.client, "alice", WRONG)).status_code == 401
        await app.login()  # a success clears the count: four more failures lock nothing
        app.client.cookies.clear()
        for _ in range(4):
            assert (await _post(app.client, "alice", WRONG)).status_code == 401
        await app.login()
        app.client.cookies.clear()
        for _ in range(5):
            assert (await _post(app.client, "alice", WRONG)).status_code == 401

        refused = await _post(app.client, "alice", PASSWORD)
        assert refused.status_code == 429
        assert 890 <= int(refused.headers["retry-after"]) <= 900  # the 15m lock, from the last failure
        assert "alertrouter_session" not in refused.headers.get("set-cookie", "")
        assert _error(refused) == "Too many failed logins as this user. Try again in 15m."
        assert 'name="password"' in refused.text  # the form stays, for later
        app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")
        chinese = await _post(app.client, "alice", PASSWORD)
        assert chinese.status_code == 429
        assert _error(chinese) == "该用户登录失败次数过多，请在 15 分钟后重试。"
        app.client.cookies.clear()

        assert (await _post(app.client, "bob", "bobs password")).status_code == 303  # only alice is locked
        assert WRONG not in caplog.text
        assert PASSWORD not in caplog.text


async def test_the_lock_ends_and_the_next_one_lasts_twice_as_long(database_url: str, quick: None) -> None:
    async with running(database_url) as app:
        for _ in range(5):
            await _post(app.client, "alice", WRONG)
        assert (await _post(app.client, "alice", PASSWORD)).status_code == 429
        await _end_locks(app)
        assert (await _post(app.client, "alice", WRONG)).status_code == 401  # a fresh count after the lock
        for _ in range(4):
            await _post(app.client, "alice", WRONG)
        second = await _post(app.client, "alice", PASSWORD)
        assert second.status_code == 429
        assert 1790 <= int(second.headers["retry-after"]) <= 1800
        assert _error(second) == "Too many failed logins as this user. Try again in 30m."
        assert (await _rows(app))[("account", "alice")].lockouts == 2
        await _end_locks(app)
        assert (await _post(app.client, "alice", PASSWORD)).status_code == 303
        assert ("account", "alice") not in await _rows(app)  # the success forgot the streak too


async def test_a_lock_made_through_one_replica_holds_on_another(database_url: str) -> None:
    async with running(database_url) as first, running(database_url) as second:
        spread = await asyncio.gather(_parallel(first.client, "alice", 10), _parallel(second.client, "alice", 10))
        assert spread[0] + spread[1] == {401: 5, 429: 15}  # one count for both
        for replica in (first, second):
            refused = await _post(replica.client, "alice", PASSWORD)
            assert refused.status_code == 429
            assert "Too many failed logins as this user." in _error(refused)


async def test_one_address_trying_many_names_is_locked_and_others_are_not(
    database_url: str, quick: None, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url, login_address_failures=3) as app:
        for _ in range(4):
            await app.login()  # successes from the address count nothing
            app.client.cookies.clear()
        long_name = "m" * 100
        for user in ("mallory", "root", long_name):
            assert (await _post(app.client, user, WRONG)).status_code == 401
        refused = await _post(app.client, "alice", PASSWORD)
        assert refused.status_code == 429
        assert 890 <= int(refused.headers["retry-after"]) <= 900
        assert _error(refused) == "Too many failed logins from your address. Try again in 15m."
        async with _from(app, "10.20.0.7") as elsewhere:
            assert (await _post(elsewhere, "alice", PASSWORD)).status_code == 303
        line = "console login: address 127.0.0.1 locked for 900 s after 3 failed logins within 15m (the last as user"
        assert f"{line} '{'m' * 64}')" in caplog.text
        assert long_name not in caplog.text
        metrics = (await app.client.get("/metrics")).text
        assert _metric(metrics, 'alertrouter_login_lockouts_total{scope="address"}') == 1
        assert _metric(metrics, 'alertrouter_login_throttled_total{scope="address"}') == 1


@pytest.mark.parametrize(
    ("host", "subject"),
    [
        ("192.0.2.10", "192.0.2.10"),
        ("2001:db8:aa:bb:1:2:3:4", "2001:db8:aa:bb::/64"),
        ("2001:db8:aa:bb:ffff::9", "2001:db8:aa:bb::/64"),  # the same machine's other address
        ("::ffff:192.0.2.10", "192.0.2.10"),
        ("testclient", "testclient"),
        (None, "unknown"),
    ],
)
def test_an_ipv6_address_counts_with_its_64(host: str | None, subject: str) -> None:
    assert address_subject(host) == subject


async def test_housekeeping_forgets_names_and_addresses_quiet_for_a_day(db: Database) -> None:
    now = utcnow()
    day = timedelta(days=1)
    rows = {  # subject: (last attempt, lock's end)
        "quiet": (now - day - timedelta(minutes=1), None),
        "lock-ended-long-ago": (now - 2 * day, now - day - timedelta(minutes=1)),
        "recent": (now - timedelta(hours=23), None),
        "lock-ended-lately": (now - 2 * day, now - timedelta(hours=1)),  # its streak still counts
        "still-locked": (now - 2 * day, now + timedelta(hours=1)),
    }
    async with db.write() as session:
        for subject, (updated, locked) in rows.items():
            session.add(
                LoginFailureRow(
                    scope="account",
                    subject=subject,
                    failures=1,
                    window_start=updated,
                    locked_until=locked,
                    lockouts=1 if locked else 0,
                    updated_at=updated,
                )
            )
        await session.commit()
    async with db.write() as session:
        pruned = await retention.prune_rest(session, before=now - 90 * day, now=now, aliases_before=now - 7 * day)
        await session.commit()
    assert pruned["login_failures"] == 2
    async with db.read() as session:
        left = (await session.scalars(select(LoginFailureRow.subject).order_by(LoginFailureRow.subject))).all()
    assert list(left) == ["lock-ended-lately", "recent", "still-locked"]


def test_the_limits_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALERTROUTER_LOGIN_ACCOUNT_FAILURES", "3")
    monkeypatch.setenv("ALERTROUTER_LOGIN_ADDRESS_FAILURES", "0")
    monkeypatch.setenv("ALERTROUTER_LOGIN_FAILURE_WINDOW", "1h")
    monkeypatch.setenv("ALERTROUTER_LOGIN_LOCKOUT", "5m")
    monkeypatch.setenv("ALERTROUTER_LOGIN_LOCKOUT_MAX", "1d")
    s = Settings()
    limits = (s.login_account_failures, s.login_address_failures, s.login_failure_window)
    assert limits == (3, 0, timedelta(hours=1))
    assert (s.login_lockout, s.login_lockout_max) == (timedelta(minutes=5), timedelta(days=1))
    defaults = Settings.model_fields
    assert (defaults["login_account_failures"].default, defaults["login_address_failures"].default) == (5, 20)
    monkeypatch.setenv("ALERTROUTER_LOGIN_LOCKOUT", "2d")
    with pytest.raises(ValidationError, match="ALERTROUTER_LOGIN_LOCKOUT must not be longer"):
        Settings()
    monkeypatch.setenv("ALERTROUTER_LOGIN_LOCKOUT", "0")
    with pytest.raises(ValidationError, match="must be longer than 0s"):
        Settings()


async def test_an_address_limit_of_0_counts_only_user_names(database_url: str, quick: None) -> None:
    async with running(database_url, login_address_failures=0) as app:
        for user in ("mallory", "root", "admin", "oracle", "test", "guest"):
            assert (await _post(app.client, user, WRONG)).status_code == 401
        assert {scope for scope, _ in await _rows(app)} == {"account"}
