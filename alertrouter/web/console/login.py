"""Console login and logout: a signed session cookie (HttpOnly, SameSite=Lax, Secure behind https); a
logout revokes the session in the store, so a copy of the cookie is refused too. A user name or client
address locked by the login limits (`alertrouter.web.logins`) gets the login page with 429, and no
password check. And the language switch every page links to: it remembers the person's choice in a
cookie (see `language`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from alertrouter.message.i18n import LANGUAGES
from alertrouter.web import operations
from alertrouter.web.access import SESSION_COOKIE
from alertrouter.web.console.language import LANGUAGE_COOKIE, REMEMBER
from alertrouter.web.console.pages import (
    Console,
    OptionalConsoleDep,
    PageError,
    check_csrf,
    read_form,
    security_headers,
)
from alertrouter.web.console.views import N_, duration_text
from alertrouter.web.logins import Throttled

__all__ = ["router", "safe_next"]

router = APIRouter(include_in_schema=False)

_LOCKED = {  # why a login was refused unchecked, by the limit that refused it (`alertrouter.web.logins`)
    "account": N_("Too many failed logins as this user. Try again in %(wait)s."),
    "address": N_("Too many failed logins from your address. Try again in %(wait)s."),
}


def safe_next(target: str) -> str:
    """Only a path on this server: no scheme, no `//host`, no backslash tricks."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target or any(ord(c) < 32 for c in target):
        return "/incidents"
    return target


@router.get("/login")
async def login_page(console: OptionalConsoleDep, next: Annotated[str, Query(max_length=2000)] = "/") -> HTMLResponse:
    return console.page(
        "login", title=N_("Log in"), next=safe_next(next), error="", user="", users=bool(console.access.users)
    )


@router.post("/login")
async def login(console: OptionalConsoleDep) -> Response:
    if console.request.headers.get("sec-fetch-site", "") == "cross-site":
        raise PageError(403, N_("Not allowed"), N_("Log in from the console's own login page."))
    form = await read_form(console.request)
    user, password, target = form.get("user", "").strip(), form.get("password", ""), safe_next(form.get("next", "/"))
    runtime, client = console.runtime, console.request.client
    if not console.access.users:
        raise PageError(403, N_("No console users"), N_("No console user is configured (ALERTROUTER_CONSOLE_USERS)."))
    result: bool | Throttled = False  # an empty field is wrong, and counts as no attempt
    if user and password:
        result = await console.access.login(
            user, password, db=runtime.db, metrics=runtime.metrics, address=client.host if client else None
        )
    if isinstance(result, Throttled):
        return _throttled(console, result, user=user, target=target)
    if not result:
        return console.page(
            "login",
            status=401,
            title=N_("Log in"),
            next=target,
            error=console._("Wrong user name or password."),
            user=user,
            users=True,
        )
    response = RedirectResponse(target, status_code=303, headers=security_headers())
    response.set_cookie(
        SESSION_COOKIE,
        console.access.new_session(user, runtime.signers.session, console.now),
        max_age=int(console.access.session_ttl.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=console.access.secure_cookies,
        path="/",
    )
    return response


def _throttled(console: Console, refused: Throttled, *, user: str, target: str) -> Response:
    """429 with `Retry-After`, on the login page: no password was checked, the right one neither."""
    wait = refused.retry_after if refused.retry_after < 60 else -(-refused.retry_after // 60) * 60
    response = console.page(
        "login",
        status=429,
        title=N_("Log in"),
        next=target,
        error=console._(_LOCKED[refused.scope], wait=duration_text(timedelta(seconds=wait), console.tr)),
        user=user,
        users=True,
    )
    response.headers["Retry-After"] = str(refused.retry_after)
    return response


@router.post("/logout")
async def logout(console: OptionalConsoleDep) -> Response:
    form = await read_form(console.request)
    principal = console.principal
    if principal is not None and principal.via == "session":
        if not check_csrf(form, principal.csrf):
            raise PageError(403, N_("Form expired"), N_("Reload the page and log out again."))
        assert principal.expires_at is not None
        await operations.end_session(
            console.runtime, session_id=principal.session_id, user=principal.name, expires_at=principal.expires_at
        )
    response = RedirectResponse("/login", status_code=303, headers=security_headers())
    response.delete_cookie(
        SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=console.access.secure_cookies
    )
    return response


@router.get("/language/{language}")
async def switch_language(
    language: str, console: OptionalConsoleDep, next: Annotated[str, Query(max_length=2000)] = "/incidents"
) -> Response:
    """A link rather than a form: the choice changes nothing but how this browser's pages read. A language
    the console does not have (`/language/auto`) forgets the choice: the rules' `global.language` applies."""
    response = RedirectResponse(safe_next(next), status_code=303, headers=security_headers())
    if language in LANGUAGES:
        response.set_cookie(
            LANGUAGE_COOKIE,
            language,
            max_age=REMEMBER,
            httponly=True,
            samesite="lax",
            secure=console.access.secure_cookies,
            path="/",
        )
    else:
        response.delete_cookie(
            LANGUAGE_COOKIE, path="/", httponly=True, samesite="lax", secure=console.access.secure_cookies
        )
    return response
