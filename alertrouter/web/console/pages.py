"""What every console page shares: the template environment, the caller, forms, CSRF, the response.

Templates are `templates/console/*.html.j2` (overridable file by file through ALERTROUTER_TEMPLATES_DIR,
like the message templates), rendered with autoescape on: label values and every other piece of data
reach a page only as escaped text. Pages send a Content-Security-Policy without scripts.

Each page is written in the language `language.choose_language` picks for the person, with Jinja2's i18n
extension over the same gettext catalogue as the messages (`alertrouter.message.i18n.translations`), and shows
times in the rules' `global.timezone`. Words said from Python (page titles, errors) are marked with `N_`
and translated when the page is rendered.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from gettext import NullTranslations
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qsl, quote
from zoneinfo import ZoneInfo

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined

from alertrouter.gpu import xid
from alertrouter.ingest.body import BodyTooLarge, read_body
from alertrouter.labels import alert_title
from alertrouter.message import i18n, phrases
from alertrouter.model import utcnow
from alertrouter.paths import data_dir
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.web.access import Access, Principal, access_for, identify
from alertrouter.web.console import errors, views
from alertrouter.web.console.language import LANGUAGE_COOKIE, choose_language
from alertrouter.web.console.views import N_
from alertrouter.web.ids import path_id

__all__ = [
    "N_",
    "Console",
    "ConsoleDeliveryId",
    "ConsoleDep",
    "ConsoleIncidentId",
    "OptionalConsoleDep",
    "PageError",
    "check_csrf",
    "console_templates",
    "environment",
    "environment_of",
    "read_form",
    "security_headers",
]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
FORM_LIMIT = 64 * 1024


def environment(user_dir: Path | None, language: str = i18n.DEFAULT_LANGUAGE, timezone: str = "UTC") -> Environment:
    """The console's templates in `language`, times shown in `timezone`."""
    dirs = [d for d in (user_dir, data_dir("templates")) if d is not None]
    env = Environment(
        loader=ChoiceLoader([FileSystemLoader(d) for d in dirs]),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    tr = i18n.translations(language)
    env.install_gettext_translations(tr, newstyle=True)  # type: ignore[attr-defined]
    zone = ZoneInfo(timezone)
    env.filters["when"] = lambda value: views.when(value, zone)
    env.filters["short"] = lambda value: views.short_time(value, zone)
    env.filters["duration"] = lambda value: views.duration_text(value, tr)
    env.filters["cap"] = lambda value, limit=views.VALUE_CAP: views.cap_text(value, limit, tr)
    env.filters["shown_labels"] = lambda values: views.shown_labels(values, views.LABELS_SHOWN, tr)
    env.filters["alert_title"] = alert_title  # labels -> alertname, or the label set when it has none
    env.filters["urlquote"] = lambda value: quote(str(value), safe="")
    env.filters["headline"] = lambda row: views.incident_headline(tr, row, language)
    env.filters["severity"] = lambda value: phrases.severity_name(tr, str(value))
    env.filters["word"] = lambda value: views.word(tr, value)  # a state, a decision, an outcome
    env.filters["who"] = lambda name: views.who(tr, name)
    env.filters["localized"] = lambda notes: i18n.localized_annotations(notes or {}, language)  # summary_zh_CN
    env.filters["error"] = lambda text: errors.error_text(tr, language, text)  # a delivery's stored error
    env.filters["message_kind"] = lambda kind: views.message_kind(tr, kind)
    env.globals["units"] = lambda count, unit_name: phrases.unit_count(tr, str(count), str(unit_name))
    env.globals["language"] = language
    env.globals["xid_catalog"] = xid.CATALOG_URL
    env.globals["languages"] = [(code, views.LANGUAGE_NAMES[code]) for code in i18n.LANGUAGES]
    return env


def environment_of(app: FastAPI, runtime: Runtime, language: str) -> Environment:
    """The app's console environment for `language` (and the rules' time zone), made at its first use."""
    zone = runtime.ruleset.global_.timezone
    envs: dict[tuple[str, str], Environment] | None = getattr(app.state, "console_envs", None)
    if envs is None:
        envs = app.state.console_envs = {}
    env = envs.get((language, zone))
    if env is None:
        env = envs.setdefault((language, zone), environment(runtime.settings.templates_dir, language, zone))
    return env


def console_templates(app: FastAPI, runtime: Runtime) -> list[tuple[Environment, str]]:
    """Every console template, in the environment of every language the console speaks: what `serve`
    compiles ahead of the first views after a start (`app._warm_console`). Otherwise compiling each page,
    in each language, is paid by the first person to open it after a restart, often during the incident
    that made them look."""
    out = []
    for language in i18n.LANGUAGES:
        env = environment_of(app, runtime, language)
        out += [(env, name) for name in env.list_templates(filter_func=_console_template)]
    return out


def _console_template(name: str) -> bool:
    return name.startswith("console/") and name.endswith(".j2")


class PageError(Exception):
    """Stop and show a message page (`alertrouter.web.console` turns it into a response)."""

    def __init__(self, status: int, title: str, message: str, **values: object) -> None:
        """`title` and `message` are msgids (marked with `N_`); `values` fill the message's placeholders."""
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.values = values


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

    @property
    def language(self) -> str:
        """The switch's cookie > the rules' `global.language` (the browser's Accept-Language is not read)."""
        cookie = self.request.cookies.get(LANGUAGE_COOKIE)
        return choose_language(cookie, self.runtime.ruleset.global_.language)

    @property
    def timezone(self) -> ZoneInfo:
        return ZoneInfo(self.runtime.ruleset.global_.timezone)

    @property
    def tr(self) -> NullTranslations:
        return i18n.translations(self.language)

    def _(self, message: str, **values: object) -> str:
        """A word said from Python, in the page's language."""
        text = self.tr.gettext(message)
        return text % values if values else text

    def when(self, value: datetime | str | None) -> str:
        return views.when(value, self.timezone)

    def page(self, name: str, *, status: int = 200, title: str = "", **context: Any) -> HTMLResponse:
        """`title` is a msgid, or data (an incident's headline) passed already translated as `title_text`."""
        env = environment_of(self.request.app, self.runtime, self.language)
        target = self.request.url.path + (f"?{self.request.url.query}" if self.request.url.query else "")
        html = env.get_template(f"console/{name}.html.j2").render(
            title=context.pop("title_text", None) or (self._(title) if title else ""),
            here=target,
            me=self.principal,
            can_write=self.can_write,
            read_only=self.access.read_only,
            csrf=self.principal.csrf if self.principal else "",
            now=self.now,
            path=self.request.url.path,
            **context,
        )
        return HTMLResponse(html, status_code=status, headers=security_headers())

    def message(self, status: int, title: str, message: str, **values: object) -> HTMLResponse:
        """A message page: `title` and `message` are msgids, `values` fill the message's placeholders."""
        return self.page("message", status=status, title=title, message=self._(message, **values))

    def _refusal(self) -> str:
        """Why this principal may not write (as `Access.write_refusal`, in words of the page's language)."""
        if self.principal is None or self.principal.via == "anonymous":
            return N_(
                "Changes need a console user or an API token: set ALERTROUTER_CONSOLE_USERS (hashes from "
                "`alertrouter hash-password`) or ALERTROUTER_API_TOKENS."
            )
        if self.access.read_only:
            return N_("The console is read-only (ALERTROUTER_CONSOLE_READ_ONLY).")
        return N_("These credentials may only read; changes need a console user or an API token.")

    async def writer(self, form: Mapping[str, str]) -> Principal:
        """The principal of a console form that writes: allowed to write, with the session's CSRF token."""
        refusal = self.access.write_refusal(self.principal)
        if refusal is not None:
            if refusal[0] == 401:
                raise HTTPException(303, headers={"Location": login_url(self.request)})
            raise PageError(refusal[0], N_("Not allowed"), self._refusal())
        assert self.principal is not None
        if self.principal.via == "session" and not check_csrf(form, self.principal.csrf):
            raise PageError(
                403,
                N_("Form expired"),
                N_("The form's security token does not match your session: reload and retry."),
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
        raise PageError(413, N_("Too large"), N_("A form may carry at most %(kib)s KiB."), kib=limit // 1024) from None
    if not body:
        return {}
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise PageError(
            415, N_("Unsupported form"), N_("Forms are posted as %(type)s."), type="application/x-www-form-urlencoded"
        )
    try:
        return dict(parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=200))
    except (UnicodeDecodeError, ValueError):
        raise PageError(400, N_("Bad form"), N_("The form could not be read.")) from None


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


def _no(message: str) -> Callable[[int], Exception]:
    return lambda value: PageError(404, N_("Not found"), message, id=value)


# Ids out of range (see `alertrouter.web.ids`) get the page an absent row gets.
ConsoleIncidentId = Annotated[int, path_id("incident_id", missing=_no(N_("There is no incident %(id)s.")))]
ConsoleDeliveryId = Annotated[int, path_id("delivery_id", missing=_no(N_("There is no delivery %(id)s.")))]
