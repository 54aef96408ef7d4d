"""Database URLs as people write them, turned into the async ones the store runs on.

`sqlite:///alertrouter.db`, `postgresql://user:pw@host/db` and Heroku's `postgres://...` are what operators
copy from other tools; SQLAlchemy's asyncio engine needs the driver named (`sqlite+aiosqlite`,
`postgresql+asyncpg`) and otherwise fails deep in startup with a traceback. `async_url` names the driver,
translates libpq's `sslmode` into asyncpg's `ssl`, and refuses what cannot work (another database, another
driver, a string that is not a URL) with one sentence.
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["EXAMPLES", "async_url", "masked"]

EXAMPLES = "sqlite:///path/alertrouter.db or postgresql://user:password@host:5432/database"
_ASYNC = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}
# Drivers a URL may name: the async one, or a synchronous one people copy from other tools (replaced).
_KNOWN_DRIVERS = {
    "sqlite": {"aiosqlite", "pysqlite"},
    "postgresql": {"asyncpg", "psycopg2", "psycopg", "pg8000"},
}


def async_url(text: str) -> str:
    """The URL with the async driver of its database; ValueError saying why when it cannot work."""
    try:
        url = make_url(text.strip())
    except ArgumentError:
        raise ValueError(f"not a database URL (expected e.g. {EXAMPLES})") from None
    backend, _, driver = url.drivername.partition("+")
    backend = "postgresql" if backend == "postgres" else backend
    if backend not in _ASYNC:
        raise ValueError(f"unsupported database {backend!r}: alertrouter stores in SQLite or PostgreSQL ({EXAMPLES})")
    if driver and driver not in _KNOWN_DRIVERS[backend]:
        raise ValueError(f"unknown {backend} driver {driver!r} (write {backend}:// and alertrouter picks one)")
    url = url.set(drivername=_ASYNC[backend])
    if backend == "postgresql":
        if not url.database:
            raise ValueError(f"no database name in the URL (expected e.g. {EXAMPLES})")
        if "sslmode" in url.query:  # libpq's spelling; asyncpg takes the same values as `ssl`
            query = {k: v for k, v in url.query.items() if k != "sslmode"}
            url = url.set(query={**query, "ssl": url.query["sslmode"]})
    return url.render_as_string(hide_password=False)


def masked(url: str | URL) -> str:
    """The URL to log: password hidden."""
    return make_url(url).render_as_string(hide_password=True)
