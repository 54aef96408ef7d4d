"""What every console page shares: the template environment, the caller, forms, CSRF, the response.

Templates are `templates/console/*.html.j2` (overridable file by file through ALERTROUTER_TEMPLATES_DIR,
like the message templates), rendered with autoescape on: label values and every other piece of data
reach a page only as escaped text. Pages send a Content-Security-Policy without scripts.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qsl, quote

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined

from alertrouter.ingest.body import BodyTooLarge, read_body
from alertrouter.labels import alert_title
from alertrouter.model import utcnow
from alertrouter.paths import data_dir
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.web.access import Access, Principal, access_for, identify
from alertrouter.web.console import views
from alertrouter.web.ids import path_id

__all__ = [
    "Console",
    "ConsoleDeliveryId",
    "ConsoleDep",
    "ConsoleIncidentId",
    "OptionalConsoleDep",
    "PageError",
    "check_csrf",
    "environment",
    "read_form",
    "security_headers",
]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
FORM_LIMIT = 64 * 1024


def environment(user_dir: Path | None) -> Environment:
    dirs = [d for d in (user_dir, data_dir("templates")) if d is not None]
    env = Environment(
        loader=ChoiceLoader([FileSystemLoader(d) for d in dirs]),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = views.when
    env.filters["short"] = views.short_time
    env.filters["duration"] = views.duration_text
    env.filters["cap"] = views.cap_text
    env.filters["shown_labels"] = views.shown_labels
    env.filters["alert_title"] = alert_title  # labels -> alertname, or the label set when it has none
    env.filters["urlquote"] = lambda value: quote(str(value), safe="")
    return env


class PageError(Exception):
    """Stop and show a message page (`alertrouter.web.console` turns it into a response)."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


@dataclass(slots=True)
class Console:
    request: Request
    runtime: Runtime
    access: Access
    principal: Principal | None  # None only on the pages anyone may open (login, signed links)
    now: datetime

    @property
    def can_write(self) -> bool:
        return self.access.write_refusal(self.principal) is None

    def page(self, name: str, *, status: int = 200, title: str = "", **context: Any) -> HTMLResponse:
        env: Environment | None = getattr(self.request.app.state, "console_env", None)
        if env is None:
            env = self.request.app.state.console_env = environment(self.runtime.settings.templates_dir)
        html = env.get_template(f"console/{name}.html.j2").render(
            title=title,
            me=self.principal,
            can_write=self.can_write,
            read_only=self.access.read_only,
            csrf=self.principal.csrf if self.principal else "",
            now=self.now,
            path=self.request.url.path,
            **context,
        )
        return HTMLResponse(html, status_code=status, headers=security_headers())

    def message(self, status: int, title: str, message: str, **context: Any) -> HTMLResponse:
        return self.page("message", status=status, title=title, message=message, **context)

    async def writer(self, form: Mapping[str, str]) -> Principal:
        """The principal of a console form that writes: allowed to write, with the session's CSRF token."""
        refusal = self.access.write_refusal(self.principal)
        if refusal is not None:
            if refusal[0] == 401:
                raise HTTPException(303, headers={"Location": login_url(self.request)})
            raise PageError(refusal[0], "Not allowed", refusal[1])
        assert self.principal is not None
        if self.principal.via == "session" and not check_csrf(form, self.principal.csrf):
            raise PageError(
                403, "Form expired", "The form's security token does not match your session: reload and retry."
            )
        return self.principal


def check_csrf(form: Mapping[str, str], expected: str) -> bool:
    return bool(expected) and hmac.compare_digest(form.get("csrf", "").encode(), expected.encode())


def security_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",  # signed links must not leak through a Referer header
        "Cache-Control": "no-store",
    }


def login_url(request: Request) -> str:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/login?next=" + quote(target, safe="")


async def read_form(request: Request, limit: int = FORM_LIMIT) -> dict[str, str]:
    """An urlencoded form body (the last value of a repeated field wins). A body over `limit` is refused
    as it streams in, not after it has all been read."""
    try:
        body = await read_body(request, limit)
    except BodyTooLarge:
        raise PageError(413, "Too large", f"A form may carry at most {limit // 1024} KiB.") from None
    if not body:
        return {}
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise PageError(415, "Unsupported form", "Forms are posted as application/x-www-form-urlencoded.")
    try:
        return dict(parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=200))
    except (UnicodeDecodeError, ValueError):
        raise PageError(400, "Bad form", "The form could not be read.") from None


async def _open_console(request: Request, runtime: RuntimeDep) -> Console:
    access = access_for(request)
    return Console(request, runtime, access, access.reader(await identify(request, runtime)), utcnow())


async def _reading_console(request: Request, runtime: RuntimeDep) -> Console:
    console = await _open_console(request, runtime)
    if console.principal is None:
        raise HTTPException(303, headers={"Location": login_url(request)})
    return console


ConsoleDep = Annotated[Console, Depends(_reading_console)]  # pages that need read access
OptionalConsoleDep = Annotated[Console, Depends(_open_console)]  # login and the signed links


def _no(what: str) -> Callable[[int], Exception]:
    return lambda value: PageError(404, "Not found", f"There is no {what} {value}.")


# Ids out of range (see `alertrouter.web.ids`) get the page an absent row gets.
ConsoleIncidentId = Annotated[int, path_id("incident_id", missing=_no("incident"))]
ConsoleDeliveryId = Annotated[int, path_id("delivery_id", missing=_no("delivery"))]
