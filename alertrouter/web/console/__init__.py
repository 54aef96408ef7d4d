"""The web console: server-rendered pages (no build step, no scripts) over the store, and the signed
action links of messages. `install(app)` adds its routes and its error page."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from alertrouter.model import utcnow
from alertrouter.paths import data_dir
from alertrouter.store import STORE_ERRORS
from alertrouter.web.access import access_for, identify
from alertrouter.web.console import (
    channels,
    gpus,
    heartbeats,
    incidents,
    jobs,
    link_actions,
    login,
    maintenance,
    muted,
    nodes,
    oncall,
    rules,
    silences,
)
from alertrouter.web.console.pages import Console, PageError
from alertrouter.web.console.views import N_
from alertrouter.web.params import NO_NUL, BadParameter

__all__ = ["bad_request", "install"]

CSS = "console/console.css"


async def _page_error(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, PageError)
    runtime = request.app.state.runtime
    access = access_for(request)
    try:
        principal = await identify(request, runtime)
    except STORE_ERRORS:  # the page still says what went wrong, only without the caller's name
        principal = None
    console = Console(request, runtime, access, access.reader(principal), utcnow())
    return console.message(exc.status, exc.title, exc.message, **exc.values)


async def bad_request(request: Request, exc: BadParameter) -> HTMLResponse:
    """A console page's parameter that cannot be read (`alertrouter.web.params`): a 400 page naming it."""
    problem = PageError(400, N_("Bad request"), N_("The address could not be read: %(problem)s"), problem=str(exc))
    return await _page_error(request, problem)


async def _stylesheet(request: Request) -> Response:
    user_dir = request.app.state.runtime.settings.templates_dir
    for base in (user_dir, data_dir("templates")):
        if base is not None and (base / CSS).is_file():
            return Response((base / CSS).read_bytes(), media_type="text/css", headers={"Cache-Control": "max-age=300"})
    return Response(status_code=404)


def install(app: FastAPI) -> None:
    app.add_exception_handler(PageError, _page_error)
    app.add_api_route("/console.css", _stylesheet, methods=["GET"], include_in_schema=False)
    pages = (
        incidents,
        silences,
        maintenance,
        muted,
        channels,
        nodes,
        gpus,
        jobs,
        oncall,
        heartbeats,
        rules,
        login,
        link_actions,
    )
    for module in pages:
        app.include_router(module.router, dependencies=NO_NUL)
