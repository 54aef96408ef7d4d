"""Process settings from ALERTROUTER_* variables, and the listen-address safety rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from alertrouter.auth.passwords import hash_password
from alertrouter.settings import LOOPBACK, ListenRefused, Settings


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
    monkeypatch.setenv("ALERTROUTER_BEARER_TOKEN", "tok-123456-abcdefgh")
    assert "tok-123456-abcdefgh" not in repr(Settings())


def test_basic_auth_needs_both_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALERTROUTER_BASIC_USERNAME", "am")
    with pytest.raises(ValidationError, match="must be set together"):
        Settings()


@pytest.mark.parametrize(
    ("env", "host", "warns"),
    [
        ({}, LOOPBACK, True),
        ({"ALERTROUTER_HOST": ""}, LOOPBACK, True),
        ({"ALERTROUTER_HOST": "127.0.0.2"}, "127.0.0.2", True),
        ({"ALERTROUTER_HOST": "::1"}, "::1", True),
        ({"ALERTROUTER_HOST": "localhost"}, "localhost", True),
        (
            {"ALERTROUTER_HOST": "0.0.0.0", "ALERTROUTER_ALLOW_UNAUTHENTICATED_REMOTE": "true"},
            "0.0.0.0",
            True,
        ),
        ({"ALERTROUTER_BEARER_TOKEN": "t" * 16}, "0.0.0.0", False),
        ({"ALERTROUTER_BEARER_TOKEN": "t" * 16, "ALERTROUTER_HOST": "10.1.2.3"}, "10.1.2.3", False),
        ({"ALERTROUTER_BEARER_TOKEN": ""}, LOOPBACK, True),
    ],
)
def test_listen_host(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], host: str, warns: bool) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    chosen, warning = Settings().listen_host()
    assert chosen == host
    assert (warning is not None) is warns


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "gpu-router.example.org"])
def test_a_remote_address_without_a_webhook_credential_is_refused(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    """Not quietly loopback instead: `serve` stops with this message (tests/cli/test_serve_listen.py)."""
    monkeypatch.setenv("ALERTROUTER_HOST", host)
    monkeypatch.setenv("ALERTROUTER_CONSOLE_USERS", f"alice:{hash_password('correct horse battery', iterations=1000)}")
    with pytest.raises(ListenRefused) as caught:
        Settings().listen_host()
    assert str(caught.value) == (
        f"listening on {host} (ALERTROUTER_HOST or --host) needs the credential Alertmanager sends, and none is "
        "set (ALERTROUTER_CONSOLE_USERS protect the console and the API only, not the webhook): set "
        "ALERTROUTER_BEARER_TOKEN (e.g. `openssl rand -hex 24`) or ALERTROUTER_BASIC_USERNAME and "
        "ALERTROUTER_BASIC_PASSWORD, or listen on loopback only with ALERTROUTER_HOST=127.0.0.1"
    )


SHORT = "s3cr3t-0123456"  # 14 characters: one of them would have opened the 0.0.0.0 bind


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ALERTROUTER_BEARER_TOKEN": "§"}, "ALERTROUTER_BEARER_TOKEN"),
        ({"ALERTROUTER_BEARER_TOKEN": SHORT}, "ALERTROUTER_BEARER_TOKEN"),
        ({"ALERTROUTER_BASIC_USERNAME": "am", "ALERTROUTER_BASIC_PASSWORD": SHORT}, "ALERTROUTER_BASIC_PASSWORD"),
        ({"ALERTROUTER_SECRET_KEY": SHORT}, "ALERTROUTER_SECRET_KEY"),
        ({"ALERTROUTER_API_TOKENS": f"ci:{SHORT}"}, "ALERTROUTER_API_TOKENS token entry 1 (ci)"),
    ],
)
def test_a_short_credential_is_refused_by_name_without_its_value(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], named: str
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValidationError) as caught:
        Settings()
    message = str(caught.value)
    assert named in message
    assert "at least 16 characters" in message
    assert all(v not in message for k, v in env.items() if k != "ALERTROUTER_BASIC_USERNAME")


@pytest.mark.parametrize(
    "name",
    ["ALERTROUTER_BEARER_TOKEN", "ALERTROUTER_BASIC_PASSWORD", "ALERTROUTER_SECRET_KEY", "ALERTROUTER_API_TOKENS"],
)
def test_a_credential_of_16_characters_is_accepted(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    value = "0123456789abcdef"
    monkeypatch.setenv(name, f"ci:{value}" if name == "ALERTROUTER_API_TOKENS" else value)
    if name == "ALERTROUTER_BASIC_PASSWORD":
        monkeypatch.setenv("ALERTROUTER_BASIC_USERNAME", "am")
    Settings()  # no error
