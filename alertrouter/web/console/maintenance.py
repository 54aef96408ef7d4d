"""Console page: the nodes in maintenance, by hand (who, why, until when) or from the cluster (a cordon,
a taint: while the cluster says so); starting it for some nodes and ending it early."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from alertrouter.maintenance import service
from alertrouter.maintenance.requests import RequestError, start_request
from alertrouter.pipeline.maintenance import cluster_windows
from alertrouter.web.console.pages import ConsoleDep, read_form
from alertrouter.web.console.views import N_
from alertrouter.web.maintenance import window_state

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


async def _page(
    console: ConsoleDep, *, status: int = 200, error: str = "", form: dict[str, str] | None = None
) -> HTMLResponse:
    runtime, now = console.runtime, console.now
    rows = await service.listed(runtime.db, now=now)
    windows: list[dict[str, Any]] = [
        {
            "node": r.node,
            "source": r.source,
            "state": window_state(r, now),
            "since": r.starts_at,
            "until": r.ends_at,
            "reason": r.reason,
            "by": r.created_by,
            "ended_by": r.ended_by,
        }
        for r in rows
    ]
    held = runtime.lookup.snapshot().maintenance if runtime.lookup is not None else {}
    cluster = [
        {
            "node": w.node,
            "source": w.source,
            "state": "active",
            "since": w.starts_at,
            "until": None,
            "reason": w.reason,
            "by": "",
            "ended_by": None,
        }
        for w in cluster_windows(held)
    ]
    order = {"active": 0, "pending": 1, "ended": 2}
    windows.sort(key=lambda w: (order[w["state"]], w["node"]))
    return console.page(
        "maintenance",
        status=status,
        title=N_("Maintenance"),
        windows=cluster + windows,
        error=error,
        form=form or {"nodes": "", "duration": "4h", "reason": ""},
    )


@router.get("/maintenance")
async def maintenance_page(console: ConsoleDep) -> HTMLResponse:
    return await _page(console)


@router.post("/maintenance")
async def start(console: ConsoleDep) -> Response:
    form = await read_form(console.request)
    principal = await console.writer(form)
    kept = {k: form.get(k, "") for k in ("nodes", "duration", "reason")}
    try:
        wanted = start_request(kept["nodes"].split(), kept["duration"], kept["reason"], principal.name, now=console.now)
    except RequestError as exc:
        return await _page(console, status=400, error=str(exc), form=kept)
    await service.start(console.runtime.db, wanted)
    console.runtime.engine.nudge(force=True)
    return RedirectResponse("/maintenance", status_code=303)


@router.post("/maintenance/{node}/end")
async def end(node: str, console: ConsoleDep) -> Response:
    principal = await console.writer(await read_form(console.request))
    try:
        ended = await service.end(console.runtime.db, [node], by=principal.name, now=console.now)
    except RequestError:
        ended = []
    if not ended:
        return console.message(404, N_("Not found"), N_("That node is not in maintenance."))
    console.runtime.engine.nudge(force=True)
    return RedirectResponse("/maintenance", status_code=303)
