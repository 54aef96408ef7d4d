"""Database URLs as operators write them (copied from psql, Django, Heroku or another tool's docs) name the
async driver the store runs on; what cannot work is refused with one sentence, never a traceback."""

from __future__ import annotations

import re

import pytest

from alertrouter.settings import Settings
from alertrouter.store.urls import async_url, masked


@pytest.mark.parametrize(
    ("written", "used"),
    [
        ("sqlite:///alertrouter.db", "sqlite+aiosqlite:///alertrouter.db"),
        ("sqlite:////var/lib/alertrouter/alertrouter.db", "sqlite+aiosqlite:////var/lib/alertrouter/alertrouter.db"),
        ("sqlite://", "sqlite+aiosqlite://"),
        ("sqlite+pysqlite:///a.db", "sqlite+aiosqlite:///a.db"),
        ("sqlite+aiosqlite:///a.db", "sqlite+aiosqlite:///a.db"),
        ("postgresql://ar:pw@db:5432/alertrouter", "postgresql+asyncpg://ar:pw@db:5432/alertrouter"),
        ("postgres://ar:pw@db/alertrouter", "postgresql+asyncpg://ar:pw@db/alertrouter"),  # Heroku, Render
        ("postgresql+psycopg2://ar:pw@db/alertrouter", "postgresql+asyncpg://ar:pw@db/alertrouter"),
        ("postgresql+asyncpg://ar:pw@db/alertrouter", "postgresql+asyncpg://ar:pw@db/alertrouter"),
        # libpq's sslmode is asyncpg's ssl, same values
        ("postgresql://ar:pw@db/alertrouter?sslmode=require", "postgresql+asyncpg://ar:pw@db/alertrouter?ssl=require"),
        # a password with URL-escaped characters stays escaped
        ("postgresql://ar:p%40ss%2Fw@db/alertrouter", "postgresql+asyncpg://ar:p%40ss%2Fw@db/alertrouter"),
        ("  sqlite:///a.db\n", "sqlite+aiosqlite:///a.db"),  # pasted with whitespace
    ],
)
def test_plain_forms_get_the_async_driver(written: str, used: str) -> None:
    assert async_url(written) == used


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("mysql://ar:pw@db/alertrouter", "unsupported database 'mysql'"),
        ("mongodb://db/alertrouter", "unsupported database 'mongodb'"),
        ("alertrouter.db", "not a database URL"),
        ("", "not a database URL"),
        ("postgresql+nosuchdriver://db/a", "unknown postgresql driver 'nosuchdriver'"),
        ("postgresql://ar:pw@db", "no database name"),
    ],
)
def test_urls_that_cannot_work_are_refused_in_a_sentence(written: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as caught:
        async_url(written)
    assert "\n" not in str(caught.value)


def test_the_setting_is_normalised_and_its_error_names_it_without_the_password() -> None:
    assert Settings(database_url="postgres://ar:pw@db/a").database_url == "postgresql+asyncpg://ar:pw@db/a"
    with pytest.raises(ValueError, match="unsupported database 'mysql'") as caught:
        Settings(database_url="mysql://ar:hunter2@db/a")
    assert "database_url" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_masked_hides_the_password_only() -> None:
    assert (
        masked("postgresql+asyncpg://ar:hunter2@db:5432/a?ssl=require")
        == "postgresql+asyncpg://ar:***@db:5432/a?ssl=require"
    )
    assert masked("sqlite+aiosqlite:///a.db") == "sqlite+aiosqlite:///a.db"
