"""PostgreSQL connections taken from the pool are alive: closed ones are replaced without a round trip,
idle ones are pinged, busy ones are not (`store.connections.check_on_checkout`); the same for the driver's
connection a re-sent push's states are read on (`Database.read_driver`), which a failure drops."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import asyncpg
import pytest
from sqlalchemy import exc, text
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_connection

from alertrouter.store import Database, bulk, connections, is_outage
from alertrouter.store.alerts import load_states, read_states
from alertrouter.store.handles import alerts_t
from alertrouter.store.tables import Base
from support import pg
from support.rows import alert

pytestmark = pytest.mark.postgres


@pytest.fixture
def url(pg_database: str) -> str:
    return pg.url_for(pg_database)


@pytest.fixture
def pings(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every ping the pool's check sends, True for one that answered; `fail` makes the next ones fail."""
    sent: list[bool] = []
    ping: Callable[[AsyncAdapt_asyncpg_connection], None] = AsyncAdapt_asyncpg_connection.ping

    def counting_ping(self: AsyncAdapt_asyncpg_connection) -> None:
        if getattr(counting_ping, "fail", False):
            sent.append(False)
            raise OSError("no answer")
        ping(self)
        sent.append(True)

    monkeypatch.setattr(AsyncAdapt_asyncpg_connection, "ping", counting_ping)
    return sent


async def read_one(db: Database) -> int:
    async with db.read() as session:
        return int((await session.execute(text("SELECT 1"))).scalar_one())


async def backend_pids(db: Database) -> set[int]:
    async with db.read() as session:
        return {int((await session.execute(text("SELECT pg_backend_pid()"))).scalar_one())}


@asynccontextmanager
async def opened(url: str, monkeypatch: pytest.MonkeyPatch, ping_idle: float) -> AsyncIterator[Database]:
    """A store whose pool pings connections idle for more than `ping_idle` seconds, disposed after."""
    monkeypatch.setattr(connections, "PING_IDLE", ping_idle)
    db = Database(url)
    try:
        yield db
    finally:
        await db.dispose()


async def test_a_connection_the_server_closed_is_replaced_without_a_ping(
    url: str, pings: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(url, monkeypatch, ping_idle=connections.PING_IDLE) as db:
        (pid,) = await backend_pids(db)
        admin = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
        try:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            await admin.fetchval("SELECT pg_sleep(0.2)")  # the server's close reaches the pooled connection
        finally:
            await admin.close()
        assert await read_one(db) == 1  # without the check, "connection was closed in the middle of operation"
        assert await backend_pids(db) != {pid}
        assert pings == []


async def test_only_a_connection_idle_for_a_while_is_pinged(
    url: str, pings: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(url, monkeypatch, ping_idle=3600.0) as db:
        for _ in range(3):
            assert await read_one(db) == 1
        assert pings == []  # busy: never idle an hour

    async with opened(url, monkeypatch, ping_idle=0.0) as db:
        assert await read_one(db) == 1
        assert pings == []  # a new connection has just proved itself
        assert await read_one(db) == 1
        assert pings == [True]  # taken back from the pool after being idle


async def test_an_idle_connection_that_does_not_answer_its_ping_is_replaced(
    url: str, pings: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(url, monkeypatch, ping_idle=0.0) as db:
        before = await backend_pids(db)
        monkeypatch.setattr(AsyncAdapt_asyncpg_connection.ping, "fail", True, raising=False)
        after = await backend_pids(db)  # the read itself succeeds, on a new connection
        assert pings == [False]
        assert after != before


async def stored(db: Database, count: int) -> list[str]:
    fps = [f"{i:016x}" for i in range(count)]
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert(fp) for fp in fps])
        await s.commit()
    return fps


@pytest.fixture
def empty(pg_database: str) -> str:
    pg.truncate(pg_database, [t.name for t in Base.metadata.sorted_tables])
    return pg.url_for(pg_database)


async def test_the_driver_read_gives_the_sessions_states_on_a_checked_connection(
    empty: str, pings: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(empty, monkeypatch, ping_idle=0.0) as db:
        fps = await stored(db, 3)
        async with db.read_single() as session:
            expected = await load_states(session, [*fps, "f" * 16], lock=False)
        pings.clear()
        assert await read_states(db, [*fps, "f" * 16]) == expected
        assert pings == [True]  # the pool's check on checkout ran for it (idle: pinged)


async def test_a_failing_driver_read_is_an_outage_and_its_connection_is_dropped(
    empty: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(empty, monkeypatch, ping_idle=connections.PING_IDLE) as db:
        fps = await stored(db, 2)
        fetch = asyncpg.Connection.fetch
        used: list[asyncpg.Connection] = []

        async def failing(self: asyncpg.Connection, *args: object, **kwargs: object) -> object:
            used.append(self)
            raise asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command")

        monkeypatch.setattr(asyncpg.Connection, "fetch", failing)
        with pytest.raises(exc.OperationalError, match="administrator command") as raised:
            await read_states(db, fps)
        assert is_outage(raised.value)  # a push is answered 503, and retried
        assert used[0].is_closed()  # dropped, not handed to the next reader
        monkeypatch.setattr(asyncpg.Connection, "fetch", fetch)
        assert sorted(await read_states(db, fps)) == fps


async def test_an_error_of_the_readers_own_in_a_driver_read_is_raised_as_it_is_not_as_an_outage(
    empty: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row the reader cannot decode is the row's fault, not the store's: the engine finds the row and
    sets it aside (`Poisoned`) rather than waiting for a store that answers."""
    async with opened(empty, monkeypatch, ping_idle=connections.PING_IDLE) as db:
        fps = await stored(db, 2)

        async def read_and_fail() -> None:
            async with db.read_driver() as connection:
                assert len(await connection.fetch("SELECT fingerprint FROM alerts")) == 2
                raise ValueError("cannot decode this row")

        with pytest.raises(ValueError, match="cannot decode") as raised:
            await read_and_fail()
        assert not is_outage(raised.value)
        assert sorted(await read_states(db, fps)) == fps  # and the pool still gives a working connection
