"""Process settings from ALERTROUTER_* variables, and the listen-address safety rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from alertrouter.settings import LOOPBACK, Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("ALERTROUTER_"):
            monkeypatch.delenv(name)


def test_env_vars_and_durations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALERTROUTER_DATABASE_URL", "postgresql+asyncpg://u:p@db/ar")
    monkeypatch.setenv("ALERTROUTER_RAW_EVENT_RETENTION", "30d")
    monkeypatch.setenv("ALERTROUTER_STORE_TIMEOUT", "2s")
    monkeypatch.setenv("ALERTROUTER_LOG_LEVEL", "debug")
    s = Settings()
    assert s.database_url == "postgresql+asyncpg://u:p@db/ar"
    assert s.raw_event_retention == timedelta(days=30)
    assert s.store_timeout == timedelta(seconds=2)
    assert s.log_level == "DEBUG"
    assert s.max_body_bytes == 1024 * 1024


def test_secrets_do_not_show_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALERTROUTER_BEARER_TOKEN", "tok-123456")
    assert "tok-123456" not in repr(Settings())


def test_basic_auth_needs_both_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALERTROUTER_BASIC_USERNAME", "am")
    with pytest.raises(ValidationError, match="must be set together"):
        Settings()


@pytest.mark.parametrize(
    ("env", "host", "warns"),
    [
        ({}, LOOPBACK, True),
        ({"ALERTROUTER_HOST": "0.0.0.0"}, LOOPBACK, True),
        (
            {"ALERTROUTER_HOST": "0.0.0.0", "ALERTROUTER_ALLOW_UNAUTHENTICATED_REMOTE": "true"},
            "0.0.0.0",
            True,
        ),
        ({"ALERTROUTER_BEARER_TOKEN": "t"}, "0.0.0.0", False),
        ({"ALERTROUTER_BEARER_TOKEN": "t", "ALERTROUTER_HOST": "10.1.2.3"}, "10.1.2.3", False),
        ({"ALERTROUTER_BEARER_TOKEN": ""}, LOOPBACK, True),
    ],
)
def test_listen_host(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], host: str, warns: bool) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    chosen, warning = Settings().listen_host()
    assert chosen == host
    assert (warning is not None) is warns
