"""Process settings from `ALERTROUTER_*` environment variables; built by `get_settings()`, never at import."""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from alertrouter.auth.passwords import MIN_TOKEN_LENGTH, check_format, check_token, parse_pairs
from alertrouter.durations import parse_duration
from alertrouter.paths import default_rules_dir
from alertrouter.store.urls import async_url

__all__ = ["LOOPBACK", "MIN_SECRET_LENGTH", "ListenRefused", "Settings", "get_settings"]

LOOPBACK = "127.0.0.1"
# Every credential a machine presents (webhook bearer token and Basic password, API tokens) and the signing
# key: none is slowed down by a login delay, so each must be too long to guess. Console passwords are checked
# by `alertrouter hash-password` instead (settings hold only their hashes).
MIN_SECRET_LENGTH = MIN_TOKEN_LENGTH
_SINGLE_SECRETS = {
    "bearer_token": "ALERTROUTER_BEARER_TOKEN",
    "basic_password": "ALERTROUTER_BASIC_PASSWORD",
    "secret_key": "ALERTROUTER_SECRET_KEY",
}


class Settings(BaseSettings):
    """Everything an operator sets per process. What users edit (routes, rules) lives in `rules/`."""

    model_config = SettingsConfigDict(env_prefix="ALERTROUTER_", extra="ignore", hide_input_in_errors=True)

    database_url: str = Field(
        "sqlite+aiosqlite:///alertrouter.db",
        description="sqlite:///path.db or postgresql://user:pw@host/db (postgres://, sslmode= and the +aiosqlite, "
        "+asyncpg forms too): the async driver is picked",
    )
    host: str | None = Field(
        None, description="Listen address; without a credential loopback only (another address stops `serve`)"
    )
    port: int = Field(9095, ge=1, le=65535)
    config: Path = Field(default_factory=default_rules_dir, description="Rules directory or YAML file")
    bearer_token: SecretStr | None = None
    basic_username: str | None = None
    basic_password: SecretStr | None = None
    allow_unauthenticated_remote: bool = Field(
        False, description="Listen on a non-loopback address without credentials (not recommended)"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    auto_migrate: bool = True
    raw_event_retention: timedelta = Field(timedelta(days=7))
    touch_flush_interval: timedelta = Field(
        timedelta(seconds=5), description="How often last_seen/endsAt refreshes are written in one batch"
    )
    store_timeout: timedelta = Field(timedelta(seconds=10), description="Ingest gives up with 503 after this")
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        "FULL", description="FULL fsyncs every commit (durable across power loss); NORMAL only across crashes"
    )
    db_pool_size: int = Field(10, ge=1)
    engine_interval: timedelta = Field(
        timedelta(seconds=1), description="Longest time between engine passes (they also run after each ingest)"
    )
    engine_min_gap: timedelta = Field(
        timedelta(milliseconds=50),
        description="Shortest time between the start of a pass and that of one for a newly firing alert",
    )
    templates_dir: Path | None = Field(
        None, description="A directory of message templates overriding the shipped ones file by file"
    )
    delivery_interval: timedelta = Field(
        timedelta(seconds=1), description="Longest time between delivery passes (they also run after each decision)"
    )
    delivery_concurrency: int = Field(8, ge=1, description="Channels sent through at the same time")
    deliver: bool = Field(True, description="Run the delivery loop in this process (false: only decide and record)")
    secret_key: SecretStr | None = Field(
        None,
        description="Signs acknowledge/silence links and console sessions; when unset, one is generated "
        "and kept in the store, shared by every replica",
    )
    link_ttl: timedelta = Field(timedelta(hours=24), description="How long the links in a message keep working")
    link_silence: timedelta = Field(timedelta(hours=1), description="How long a message's 'silence' link silences")
    console_users: SecretStr | None = Field(
        None, description="Console logins, user:hash[,user:hash...]; make a hash with `alertrouter hash-password`"
    )
    api_tokens: SecretStr | None = Field(
        None, description="Tokens for API writes (Authorization: Bearer), name:token[,name:token...]"
    )
    console_read_only: bool = Field(False, description="Console and API refuse every write but the signed links")
    console_anonymous_read: bool = Field(False, description="Anyone who reaches the port may read the console")
    session_ttl: timedelta = Field(timedelta(hours=12), description="How long a console login lasts")
    scheduler: bool = Field(True, description="Run scheduled jobs (weekly digest, housekeeping) in this process")
    history_retention: timedelta = Field(
        timedelta(days=90),
        description="How long alert history, finished notifications and scheduled runs are kept (at least 15d: "
        "a digest reads its whole week up to a week after it ended)",
    )
    # --- Console login limits (`alertrouter.web.logins`) ---
    login_account_failures: int = Field(
        5,
        ge=0,
        description="Failed console logins of one user name within ALERTROUTER_LOGIN_FAILURE_WINDOW that lock "
        "it: until the lock ends every login as that user, even with the right password, is refused with 429 "
        "(any user name counts, known or not; a successful login clears it); 0: no limit per user name",
    )
    login_address_failures: int = Field(
        20,
        ge=0,
        description="Failed console logins from one client address (an IPv6 address counts with its /64) "
        "within ALERTROUTER_LOGIN_FAILURE_WINDOW that lock the address the same way, whatever the user "
        "names tried; behind a proxy, set uvicorn's FORWARDED_ALLOW_IPS to it so that the client's own "
        "address counts; 0: no limit per address",
    )
    login_failure_window: timedelta = Field(
        timedelta(minutes=15), description="The time over which failed console logins are counted toward a lock"
    )
    login_lockout: timedelta = Field(
        timedelta(minutes=15),
        description="How long the first lock of a user name or address lasts; each next one starting within a "
        "day of the last one's end lasts twice as long, up to ALERTROUTER_LOGIN_LOCKOUT_MAX",
    )
    login_lockout_max: timedelta = Field(
        timedelta(hours=4), description="The longest a console login lock lasts, however many came before it"
    )

    @field_validator("login_failure_window", "login_lockout", "login_lockout_max", mode="before")
    @classmethod
    def _login_duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) and value and not value.startswith("P") else value

    @field_validator("login_failure_window", "login_lockout", "login_lockout_max")
    @classmethod
    def _positive_login_time(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be longer than 0s")
        return value

    @model_validator(mode="after")
    def _lockout_within_max(self) -> Settings:
        if self.login_lockout > self.login_lockout_max:
            raise ValueError("ALERTROUTER_LOGIN_LOCKOUT must not be longer than ALERTROUTER_LOGIN_LOCKOUT_MAX")
        return self

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        return async_url(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator(
        "raw_event_retention",
        "touch_flush_interval",
        "store_timeout",
        "engine_interval",
        "engine_min_gap",
        "delivery_interval",
        "link_ttl",
        "link_silence",
        "session_ttl",
        "history_retention",
        mode="before",
    )
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if isinstance(value, str) and value and not value.startswith("P"):
            return parse_duration(value)
        return value

    @field_validator("bearer_token", "basic_password", "secret_key", "console_users", "api_tokens", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator(*_SINGLE_SECRETS, mode="after")
    @classmethod
    def _long_enough(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        """A 1-character token (or 16 spaces) would open the 0.0.0.0 bind; the error names the setting,
        never the value (`check_token` says what is wrong)."""
        if value is not None:
            try:
                check_token(value.get_secret_value())
            except ValueError as exc:
                raise ValueError(f"{_SINGLE_SECRETS[str(info.field_name)]} {exc}") from None
        return value

    @field_validator("history_retention")
    @classmethod
    def _longer_than_a_digest(cls, value: timedelta) -> timedelta:
        if value < timedelta(days=15):
            raise ValueError("must be at least 15d: the weekly digest reads a whole week, up to a week after it")
        return value

    @model_validator(mode="after")
    def _basic_pair(self) -> Settings:
        if (self.basic_username is None) != (self.basic_password is None):
            raise ValueError("ALERTROUTER_BASIC_USERNAME and ALERTROUTER_BASIC_PASSWORD must be set together")
        return self

    @field_validator("console_users", "api_tokens")
    @classmethod
    def _credential_pairs(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        """Bad entries fail at startup, naming the entry but never echoing a hash or token."""
        if value is not None:
            users = info.field_name == "console_users"
            what = "ALERTROUTER_CONSOLE_USERS user" if users else "ALERTROUTER_API_TOKENS token"
            parse_pairs(value.get_secret_value(), what=what, check=check_format if users else check_token)
        return value

    @property
    def has_credentials(self) -> bool:
        return self.bearer_token is not None or self.basic_username is not None

    def listen_host(self) -> tuple[str, str | None]:
        """The address to bind, and a warning to log when the choice needs explaining.

        Without a webhook credential anyone who can reach the port could inject alerts (console users
        and API tokens guard reads and writes, not the ingest endpoints), so the server listens on
        loopback when no address is asked for, and `ListenRefused` when another address is asked for
        (unless the operator explicitly accepts the risk): never somewhere the operator did not ask.
        """
        if self.has_credentials:
            return self.host or "0.0.0.0", None  # noqa: S104 - authenticated, all interfaces by design
        if not self.host or _is_loopback(self.host):  # unset or empty: nothing asked for
            return self.host or LOOPBACK, (
                "no credential configured (ALERTROUTER_BEARER_TOKEN or ALERTROUTER_BASIC_*): listening on loopback only"
            )
        if self.allow_unauthenticated_remote:
            return self.host, f"no credential configured: listening on {self.host} WITHOUT authentication"
        others = [name for name, value in _GUARDS.items() if getattr(self, value) is not None]
        note = f" ({' and '.join(others)} protect the console and the API only, not the webhook)" if others else ""
        raise ListenRefused(
            f"listening on {self.host} (ALERTROUTER_HOST or --host) needs the credential Alertmanager sends, "
            f"and none is set{note}: set ALERTROUTER_BEARER_TOKEN (e.g. `openssl rand -hex 24`) or "
            "ALERTROUTER_BASIC_USERNAME and ALERTROUTER_BASIC_PASSWORD, or listen on loopback only with "
            "ALERTROUTER_HOST=127.0.0.1"
        )


class ListenRefused(ValueError):
    """A non-loopback listen address without a webhook credential: `serve` stops with this message."""


_GUARDS = {"ALERTROUTER_CONSOLE_USERS": "console_users", "ALERTROUTER_API_TOKENS": "api_tokens"}


def _is_loopback(host: str) -> bool:
    """`localhost`, and any address of 127.0.0.0/8 or ::1; a name other than localhost is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def get_settings(**overrides: Any) -> Settings:
    return Settings(**overrides)
