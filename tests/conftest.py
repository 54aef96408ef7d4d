"""Shared fixtures: a migrated database on SQLite and on PostgreSQL, and a running in-process app."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from alertrouter.store import Database
from alertrouter.store.migrate import upgrade
from alertrouter.store.tables import Base
from support import pg
from support.need import need

BACKENDS = ["sqlite", "postgresql"]
TESTS = Path(__file__).resolve().parent
CLUSTER = TESTS / "cluster"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's `--dist loadgroup` (how .ci/test runs the suite on several workers): each
    module runs whole on one worker, so its module-scoped fixtures (a server, an Alertmanager) start once;
    every cluster-box test on one worker, since the session's boxes start together at the first scenario
    (tests/cluster/conftest.py) and would start again on a second worker. Without xdist the mark is inert."""
    for item in items:
        group = "cluster" if item.path.is_relative_to(CLUSTER) else str(item.path.relative_to(TESTS))
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """Every test leaves the root logger as it found it. A command run in-process (`main([...])`)
    calls `configure_logging`, which replaces the root handlers with one writing to the test's
    captured stderr; that stream is closed when the test ends, and a later test's log record (an SMTP
    sink's thread saying "connection lost") would meet it as a logging error."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """One migrated PostgreSQL database for the session; tests empty it before use."""
    problem = pg.available()
    need(problem is None, problem or "")
    name = pg.create_database()
    try:
        upgrade(pg.url_for(name))
        yield name
    finally:
        pg.drop_database(name)


@pytest.fixture(scope="session")
def sqlite_migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated to head for the session: each test gets a copy (migrating a file costs far
    more than copying it, and hundreds of tests ask for one)."""
    path = tmp_path_factory.mktemp("sqlite-migrated") / "alertrouter.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


def copy_sqlite(source: Path, target: Path) -> None:
    """`source` copied to `target` through SQLite's backup API, so a page still in the write-ahead log
    (alertrouter runs SQLite in WAL mode) is copied too."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database, once on SQLite (a copy of the session's migrated file) and once on
    PostgreSQL (the session's database, emptied)."""
    if request.param == "sqlite":
        path = tmp_path / "alertrouter.db"
        copy_sqlite(request.getfixturevalue("sqlite_migrated"), path)
        return f"sqlite+aiosqlite:///{path}"
    name: str = request.getfixturevalue("pg_database")
    pg.truncate(name, [t.name for t in Base.metadata.sorted_tables])
    return pg.url_for(name)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    try:
        yield database
    finally:
        await database.dispose()
