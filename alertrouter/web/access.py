"""Who is asking, and what they may do: console sessions, API tokens, the webhook credential.

Reads need a principal, unless `ALERTROUTER_CONSOLE_ANONYMOUS_READ` is on or no credential of any kind is
configured (then the server listens on loopback only, see `Settings.listen_host`). Writes need a console
user's session (with its CSRF token) or an API token, and are refused in read-only mode. The signed
links of messages are the only writes without a principal (`alertrouter.web.console.link_actions`).

A session cookie is signed, not stored; it carries a random session id, and a logout records that id in
the store (`revoked_sessions`) until the cookie would have expired. Every request that presents a
session looks the id up there, so a copy of the cookie stops working on every replica, across restarts,
the moment its owner logs out. There is deliberately no in-process cache of "not revoked": another
replica may have revoked the session a moment ago.

Console logins are limited per user name and per client address, in the store too
(`alertrouter.web.logins`): a locked one is refused with 429 before its password is checked.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request

from alertrouter.auth.passwords import hash_password, parse_pairs, verify_password
from alertrouter.auth.signing import Signer, TokenError
from alertrouter.auth.webhook import Authenticator
from alertrouter.metrics import Metrics
from alertrouter.model import utcnow
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.settings import Settings
from alertrouter.store import Database
from alertrouter.store.actions import session_revoked
from alertrouter.web.logins import LoginLimits, Throttled

__all__ = [
    "SESSION_COOKIE",
    "Access",
    "Principal",
    "ReadPrincipal",
    "WritePrincipal",
    "access_for",
    "identify",
    "require_reader",
]

log = logging.getLogger(__name__)

SESSION_COOKIE = "alertrouter_session"
MAX_SESSION_ID = 64  # the column that records revoked sessions
FAILED_LOGIN_DELAY = 1.0  # seconds added to every failed login, so guessing is slow
NO_WRITERS = (
    "writes need a console user or an API token: set ALERTROUTER_CONSOLE_USERS "
    "(hashes from `alertrouter hash-password`) or ALERTROUTER_API_TOKENS"
)


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    can_write: bool
    via: Literal["session", "token", "webhook", "anonymous"]
    csrf: str = ""  # the session's CSRF token, which every console form must send back
    session_id: str = ""  # what a logout revokes (sessions only)
    expires_at: datetime | None = None  # when the session's cookie expires (sessions only)


class Access:
    """The access rules of one server, built from its settings and its webhook credential's check."""

    def __init__(self, settings: Settings, webhook: Authenticator, *, secure_cookies: bool = False) -> None:
        users = settings.console_users.get_secret_value() if settings.console_users else ""
        tokens = settings.api_tokens.get_secret_value() if settings.api_tokens else ""
        self.users = parse_pairs(users, what="user", check=lambda _: None) if users else {}
        pairs = parse_pairs(tokens, what="token", check=lambda _: None) if tokens else {}
        self._tokens = {name: token.encode() for name, token in pairs.items()}
        self.webhook = webhook
        self.read_only = settings.console_read_only
        self.anonymous_read = settings.console_anonymous_read
        self.session_ttl = settings.session_ttl
        self.secure_cookies = secure_cookies
        self.limits = LoginLimits(settings)
        self._dummy_hash = hash_password(secrets.token_urlsafe(12), iterations=_iterations(self.users))

    @property
    def configured(self) -> bool:
        """Whether any credential exists; without one, reads are open (and the port is loopback only)."""
        return bool(self.users or self._tokens or self.webhook.enabled)

    @property
    def writers_configured(self) -> bool:
        return bool(self.users or self._tokens)

    def from_header(self, authorization: str | None) -> Principal | None:
        if not authorization:
            return None
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer":
            presented = value.strip().encode()
            for name, token in self._tokens.items():
                if hmac.compare_digest(presented, token):
                    return Principal(f"token:{name}", True, "token")
        if self.webhook.enabled and self.webhook.check(authorization):
            return Principal("webhook", False, "webhook")
        return None

    def from_cookie(self, cookie: str | None, signer: Signer, now: datetime) -> Principal | None:
        if not cookie:
            return None
        try:
            data = signer.verify(cookie, now=now)
        except TokenError:
            return None
        user, csrf = data.get("u"), data.get("c")
        if not isinstance(user, str) or not isinstance(csrf, str) or user not in self.users:
            return None  # a removed user's sessions end with the restart that removed them
        # Cookies issued before sessions carried an id (at most one session TTL old) are known by their
        # CSRF token, which is as random and as unique per login: they can be revoked like the others.
        sid = data.get("s", csrf)
        if not isinstance(sid, str) or not 0 < len(sid) <= MAX_SESSION_ID:
            return None
        expires = datetime.fromtimestamp(data["exp"], UTC)
        return Principal(user, True, "session", csrf, session_id=sid, expires_at=expires)

    def reader(self, principal: Principal | None) -> Principal | None:
        """The principal a read runs as: the caller, or anonymous where reads are open."""
        if principal is not None:
            return principal
        if self.anonymous_read or not self.configured:
            return Principal("anonymous", False, "anonymous")
        return None

    def write_refusal(self, principal: Principal | None) -> tuple[int, str] | None:
        """(status, reason) when `principal` may not write; None when it may."""
        if principal is None or principal.via == "anonymous":
            if not self.writers_configured:
                return 403, NO_WRITERS
            return 401, "log in, or send an API token (Authorization: Bearer)"
        if self.read_only:
            return 403, "the console is read-only (ALERTROUTER_CONSOLE_READ_ONLY)"
        if not principal.can_write:
            return 403, f"{principal.via} credentials may only read; writes need a console user or an API token"
        return None

    def new_session(self, user: str, signer: Signer, now: datetime) -> str:
        session = {"u": user, "c": secrets.token_urlsafe(16), "s": secrets.token_urlsafe(16)}
        return signer.sign(session, expires=now + self.session_ttl)

    async def login(
        self, user: str, password: str, *, db: Database, metrics: Metrics, address: str | None
    ) -> bool | Throttled:
        """Checks the password off the event loop; an unknown user costs as much as a wrong password.
        First the attempt is counted against the login limits (`alertrouter.web.logins`): a user name or
        address at its limit is refused unchecked (Throttled), whatever the password."""
        refused = await self.limits.begin(db, user=user, address=address, now=utcnow())
        if refused is not None:
            metrics.login_throttled.labels(scope=refused.scope).inc()
            return refused
        encoded = self.users.get(user)
        ok = await asyncio.to_thread(verify_password, password, encoded or self._dummy_hash)
        ok = ok and encoded is not None
        for scope, _until in await self.limits.settle(db, user=user, address=address, ok=ok, now=utcnow()):
            metrics.login_lockouts.labels(scope=scope).inc()
        if ok:
            log.info("console login: %s", user)
            return True
        metrics.login_failures.inc()
        log.warning("console login failed for user %r", user[:64])
        await asyncio.sleep(FAILED_LOGIN_DELAY)
        return False


def _iterations(users: dict[str, str]) -> int:
    """The dummy hash costs what the real ones do."""
    for encoded in users.values():
        head = encoded.split("$")
        if len(head) == 4 and head[1].isdigit():
            return int(head[1])
    return 1_000


def access_for(request: Request) -> Access:
    """The app's Access, made on first use from the runtime's settings."""
    access: Access | None = getattr(request.app.state, "access", None)
    if access is None:
        runtime: Runtime = request.app.state.runtime
        external = runtime.ruleset.global_.external_url or ""
        access = Access(runtime.settings, runtime.auth, secure_cookies=external.lower().startswith("https://"))
        request.app.state.access = access
    return access


async def identify(request: Request, runtime: Runtime) -> Principal | None:
    """The caller's own credential (header first, then the session cookie, unless revoked); None if it
    has none. Worked out once per request: the error page asks again after the route's dependencies."""
    if hasattr(request.state, "principal"):
        known: Principal | None = request.state.principal
        return known
    access = access_for(request)
    principal = access.from_header(request.headers.get("authorization"))
    if principal is None:
        principal = access.from_cookie(request.cookies.get(SESSION_COOKIE), runtime.signers.session, utcnow())
        if principal is not None:
            async with runtime.db.read() as session:
                if await session_revoked(session, session_id=principal.session_id):
                    principal = None
    request.state.principal = principal
    return principal


async def require_reader(request: Request, runtime: RuntimeDep) -> Principal:
    """The API's read check: 401 without a credential (unless reads are open)."""
    access = access_for(request)
    principal = access.reader(await identify(request, runtime))
    if principal is None:
        raise HTTPException(401, "missing or wrong credentials", headers={"WWW-Authenticate": _challenge(access)})
    return principal


async def _api_writer(request: Request, runtime: RuntimeDep) -> Principal:
    access = access_for(request)
    principal = await identify(request, runtime)
    refusal = access.write_refusal(principal)
    if refusal is not None:
        status, reason = refusal
        headers = {"WWW-Authenticate": _challenge(access)} if status == 401 else None
        raise HTTPException(status, reason, headers=headers)
    assert principal is not None
    if principal.via == "session":
        # A cookie rides along with any request the browser makes: API writes by session need the CSRF header.
        sent = request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(sent.encode(), principal.csrf.encode()):
            raise HTTPException(403, "missing or wrong X-CSRF-Token header for a session write")
    return principal


def _challenge(access: Access) -> str:
    return access.webhook.challenge or 'Bearer realm="alertrouter"'


ReadPrincipal = Annotated[Principal, Depends(require_reader)]
WritePrincipal = Annotated[Principal, Depends(_api_writer)]
