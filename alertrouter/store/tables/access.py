"""Console and link access: used action links, the service's own secrets, ended sessions, failed logins."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import NAME_MAX
from alertrouter.store.tables.base import Base

__all__ = ["LoginFailureRow", "RevokedSessionRow", "SecretRow", "UsedTokenRow"]


class UsedTokenRow(Base):
    """Signed action links already used: a link works once, and only until it expires."""

    __tablename__ = "used_tokens"

    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    action: Mapped[str] = mapped_column(String(16))
    incident_id: Mapped[int] = mapped_column(Integer)
    used_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)


class SecretRow(Base):
    """Secrets the service makes for itself (the key that signs links and sessions when
    ALERTROUTER_SECRET_KEY is unset), shared by every replica through the store."""

    __tablename__ = "secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class RevokedSessionRow(Base):
    """Console sessions ended by a logout before their cookie expired. The cookie is signed, not stored,
    so only this row can refuse it: every replica looks here, and a restart forgets nothing. A row is
    needed only until the session would have expired anyway (`expires_at`), then it is pruned."""

    __tablename__ = "revoked_sessions"

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    username: Mapped[str] = mapped_column(String(NAME_MAX))
    revoked_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)


class LoginFailureRow(Base):
    """Failed console logins counted per user name (`scope` account) and per client address (`scope`
    address), shared by every replica so that spreading guesses over them gains nothing. An attempt is
    counted before its password is checked (a success takes it back), so parallel guesses cannot pass
    the limit. `failures` is the count of the window begun at `window_start`; reaching the limit sets
    `locked_until` and starts `lockouts`, the streak that makes each further lock longer. Rows quiet for
    a day and unlocked are pruned by housekeeping (`updated_at`)."""

    __tablename__ = "login_failures"

    scope: Mapped[str] = mapped_column(String(16), primary_key=True)  # account | address
    subject: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)  # the user name (cut), or the address
    failures: Mapped[int] = mapped_column(Integer)
    window_start: Mapped[datetime]
    locked_until: Mapped[datetime | None]
    lockouts: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(index=True)
