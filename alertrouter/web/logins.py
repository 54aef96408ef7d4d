"""Console login limits: failed logins counted per user name and per client address in the store, so
every replica of `serve` enforces one count, and a locked name or address is refused (429) before its
password is checked, even the right one.

An attempt is counted before the check (`begin`) and settled after it (`settle`): parallel attempts
each take a place in the count, so no more than the limit are ever being checked at once, however many
connections guess. A failure at the limit locks; a success clears the user name's count and gives the
address back its place (people behind one address keep their own mistakes). An attempt cut short between
the two (the process stopped) stays counted, as a failure that locks nothing. The time per failure
(`access.FAILED_LOGIN_DELAY`) still applies to the attempts that are let through.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.model import NAME_MAX
from alertrouter.settings import Settings
from alertrouter.store import Database, logins
from alertrouter.store.logins import Scope

__all__ = ["LoginLimits", "Throttled", "address_subject"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Throttled:
    """A login refused unchecked: by which limit, and how many seconds until it may be tried again."""

    scope: Scope
    retry_after: int


def address_subject(host: str | None) -> str:
    """What an address is counted as: an IPv4 address itself, an IPv6 one by its /64 (one machine's
    usual share: counting each address of it would give it 2**64 counts), an IPv4-mapped one as IPv4."""
    if not host:
        return "unknown"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host[:NAME_MAX]  # not an address (a test client, a Unix socket's peer): counted as named
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class LoginLimits:
    """The limits of one server, from its settings (`ALERTROUTER_LOGIN_*`); a limit of 0 is off."""

    def __init__(self, settings: Settings) -> None:
        self.limits: dict[Scope, int] = {
            "address": settings.login_address_failures,
            "account": settings.login_account_failures,
        }
        self.window = settings.login_failure_window
        self.lockout = settings.login_lockout
        self.lockout_max = settings.login_lockout_max

    def _subjects(self, user: str, address: str | None) -> list[tuple[Scope, str]]:
        """The rows an attempt counts in, the address first: every transaction takes them in one order,
        so two on PostgreSQL never wait for each other's rows in a circle."""
        subjects: list[tuple[Scope, str]] = [("address", address_subject(address)), ("account", user[:NAME_MAX])]
        return [(scope, subject) for scope, subject in subjects if self.limits[scope] > 0]

    async def begin(self, db: Database, *, user: str, address: str | None, now: datetime) -> Throttled | None:
        """Count the attempt in each limit before its password is checked; None if every one has room.
        A refusal by one limit takes the attempt back from the others: it checked no password."""
        async with db.write() as session:
            taken: list[tuple[Scope, str]] = []
            for scope, subject in self._subjects(user, address):
                limit = self.limits[scope]
                if await logins.reserve(
                    session, scope=scope, subject=subject, limit=limit, window=self.window, now=now
                ):
                    taken.append((scope, subject))
                    continue
                for other, counted in taken:
                    await logins.refund(session, scope=other, subject=counted)
                wait = await logins.retry_after(session, scope=scope, subject=subject, window=self.window, now=now)
                await session.commit()
                return Throttled(scope, wait)
            await session.commit()
        return None

    async def settle(
        self, db: Database, *, user: str, address: str | None, ok: bool, now: datetime
    ) -> list[tuple[Scope, datetime]]:
        """Settle an attempt `begin` let through: a success clears the user name and gives the address
        its place back; a failure stays counted and locks where it reached the limit. Returns the locks
        it started, (scope, until), each logged here."""
        locks: list[tuple[Scope, datetime]] = []
        async with db.write() as session:
            for scope, subject in self._subjects(user, address):
                if ok and scope == "account":
                    await logins.clear(session, scope=scope, subject=subject)
                elif ok:
                    await logins.refund(session, scope=scope, subject=subject)
                else:
                    until = await logins.record_failure(
                        session,
                        scope=scope,
                        subject=subject,
                        limit=self.limits[scope],
                        window=self.window,
                        lockout=self.lockout,
                        lockout_max=self.lockout_max,
                        now=now,
                    )
                    if until is not None:
                        locks.append((scope, until))
            await session.commit()
        for scope, until in locks:
            self._log_lock(scope, user, address, until - now)
        return locks

    def _log_lock(self, scope: Scope, user: str, address: str | None, lasts: timedelta) -> None:
        """One WARNING per lock (not per refused attempt, which the metrics count); the user name cut to
        64 characters, as every login line has it."""
        if scope == "account":
            what, last = f"user {user[:64]!r}", f"from {address_subject(address)}"
        else:
            what, last = f"address {address_subject(address)}", f"as user {user[:64]!r}"
        log.warning(
            "console login: %s locked for %d s after %d failed logins within %s (the last %s)",
            what,
            int(lasts.total_seconds()),
            self.limits[scope],
            _span(self.window),
            last,
        )


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"
