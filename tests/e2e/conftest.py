"""Fixtures for the end-to-end tests: a store on each backend, and alertrouter and Alertmanager processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from e2e.harness import Router, Store, launch_router
from support import pg, procs
from support.need import need
from support.procs import Proc

BACKENDS = [pytest.param("sqlite"), pytest.param("postgresql", marks=pytest.mark.postgres)]


def _print_logs(name: str, proc: Proc) -> None:
    """Shown by pytest only when the test failed."""
    print(f"\n----- {name} {proc.url} (exit {proc.popen.poll()}) log tail -----\n{proc.logs()[-6000:]}")


@pytest.fixture
def pg_store() -> Iterator[Store]:
    """A fresh, empty PostgreSQL database, dropped afterwards (alertrouter migrates it on start)."""
    problem = pg.available()
    need(problem is None, problem or "")
    name = pg.create_database("alertrouter_e2e")
    try:
        yield Store("postgresql", pg.url_for(name), pg_name=name)
    finally:
        pg.set_connections_allowed(name, True)  # a test may have left it refusing connections
        pg.drop_database(name)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    path = tmp_path / "alertrouter.db"
    return Store("sqlite", f"sqlite+aiosqlite:///{path}", sqlite_path=path)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Store:
    """A fresh store, once on SQLite and once on PostgreSQL."""
    found: Store = request.getfixturevalue(f"{'pg' if request.param == 'postgresql' else 'sqlite'}_store")
    return found


@pytest.fixture
def start_router(tmp_path: Path) -> Iterator[Callable[..., Router]]:
    """Start alertrouter processes (as many as a test needs, e.g. after a kill -9); all stopped at the end."""
    started: list[Router] = []

    def start(store: Store, *, env: Mapping[str, str] | None = None) -> Router:
        router = launch_router(store, tmp_path, env)
        started.append(router)
        return router

    yield start
    for router in started:
        router.close()
        _print_logs("alertrouter", router.proc)


@pytest.fixture
def router(store: Store, start_router: Callable[..., Router]) -> Router:
    return start_router(store)


@pytest.fixture
def start_am(tmp_path: Path) -> Iterator[Callable[[str], Proc]]:
    """Start real Alertmanagers with a given config; all stopped at the end."""
    need(procs.ALERTMANAGER is not None, "prometheus-alertmanager is not installed (run: bash .ci/setup)")
    started: list[Proc] = []

    def start(config_yaml: str) -> Proc:
        am = procs.start_alertmanager(tmp_path, config_yaml)
        started.append(am)
        return am

    yield start
    for am in started:
        am.stop()
        _print_logs("alertmanager", am)
