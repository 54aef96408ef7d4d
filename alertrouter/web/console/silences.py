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

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


async def _page(
    console: ConsoleDep, *, status: int = 200, error: str = "", form: dict[str, str] | None = None
) -> HTMLResponse:
    async with console.runtime.db.read() as session:
        rows = await actions.list_silences(session, now=console.now, include_expired=True, limit=300)
        effect = await store.silenced_counts(session)
    silences = [{"row": r, "state": views.silence_state(r, console.now), "muting": effect.get(r.id, 0)} for r in rows]
    order = {"active": 0, "pending": 1, "expired": 2}
    silences.sort(key=lambda s: order[str(s["state"])])
    return console.page(
        "silences",
        status=status,
        title="Silences",
        silences=silences,
        error=error,
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
    except ValueError as exc:
        return await _page(console, status=400, error=f"duration: {exc}", form=kept)
    try:
        row = await operations.create_silence(
            console.runtime,
            matchers=kept["matchers"].replace("\r", "").split("\n"),
            duration=duration,
            comment=kept["comment"].strip(),
            by=principal.name,
        )
    except operations.InputError as exc:
        return await _page(console, status=400, error=str(exc), form=kept)
    return RedirectResponse(f"/silences?created={row.id}", status_code=303)


@router.post("/silences/{silence_id}/expire")
async def expire(silence_id: str, console: ConsoleDep) -> Response:
    principal = await console.writer(await read_form(console.request))
    if not await operations.expire_silence(console.runtime, silence_id=silence_id, by=principal.name):
        return console.message(404, "Not found", "No active or pending silence with that id.")
    return RedirectResponse("/silences", status_code=303)
