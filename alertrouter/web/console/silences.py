"""Console pages: silences (active, pending, expired), creating one from matchers, expiring one."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from alertrouter.durations import parse_duration
from alertrouter.store import actions
from alertrouter.store import console as store
from alertrouter.web import operations
from alertrouter.web.console import views
from alertrouter.web.console.pages import ConsoleDep, read_form
from alertrouter.web.console.views import N_

__all__ = ["BY_SHOWN", "COMMENT_SHOWN", "MATCHER_SHOWN", "router"]

router = APIRouter(include_in_schema=False)

# Characters of each shown in the list before "… (N more characters)"; the whole value is the cell's
# `title` (a matcher may be a 4,096-character regex of nodes, a comment 1,000 characters, a name 255).
MATCHER_SHOWN = 160
COMMENT_SHOWN = 200
BY_SHOWN = 64


async def _page(
    console: ConsoleDep,
    *,
    status: int = 200,
    error: str = "",
    detail: str = "",
    form: dict[str, str] | None = None,
) -> HTMLResponse:
    """`error` in the page's language; `detail` the parser's own words (shown as machine text)."""
    async with console.runtime.db.read() as session:
        rows = await actions.list_silences(session, now=console.now, include_expired=True, limit=300)
        effect = await store.silenced_counts(session)
    silences = [{"row": r, "state": views.silence_state(r, console.now), "muting": effect.get(r.id, 0)} for r in rows]
    order = {"active": 0, "pending": 1, "expired": 2}
    silences.sort(key=lambda s: order[str(s["state"])])
    return console.page(
        "silences",
        status=status,
        title=N_("Silences"),
        silences=silences,
        shown={"matcher": MATCHER_SHOWN, "comment": COMMENT_SHOWN, "by": BY_SHOWN},
        error=error,
        detail=detail,
        form=form or {"matchers": "", "duration": "2h", "comment": ""},
        created=console.request.query_params.get("created", ""),
    )


@router.get("/silences")
async def silences_page(console: ConsoleDep) -> HTMLResponse:
    return await _page(console)


@router.post("/silences")
async def create(console: ConsoleDep) -> Response:
    form = await read_form(console.request)
    principal = await console.writer(form)
    kept = {k: form.get(k, "") for k in ("matchers", "duration", "comment")}
    try:
        duration = parse_duration(kept["duration"] or "2h")
    except (ValueError, OverflowError):  # OverflowError: more days than Python's timedelta holds
        error = console._("The duration %(value)s could not be read (for example 30m, 2h, 1d).", value=kept["duration"])
        return await _page(console, status=400, error=error, form=kept)
    try:
        row = await operations.create_silence(
            console.runtime,
            matchers=kept["matchers"].replace("\r", "").split("\n"),
            duration=duration,
            comment=kept["comment"].strip(),
            by=principal.name,
        )
    except operations.InputError as exc:
        error = console._("The silence could not be created:")
        return await _page(console, status=400, error=error, detail=str(exc), form=kept)
    return RedirectResponse(f"/silences?created={row.id}", status_code=303)


@router.post("/silences/{silence_id}/expire")
async def expire(silence_id: str, console: ConsoleDep) -> Response:
    principal = await console.writer(await read_form(console.request))
    if not await operations.expire_silence(console.runtime, silence_id=silence_id, by=principal.name):
        return console.message(404, N_("Not found"), N_("No active or pending silence with that id."))
    return RedirectResponse("/silences", status_code=303)
