"""Console page: firing alerts kept quiet (inhibited, held, silenced, quarantined), with what mutes each and why."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from alertrouter.store import console as store
from alertrouter.store.delivery import incident_ids
from alertrouter.web.console import views
from alertrouter.web.console.pages import ConsoleDep
from alertrouter.web.console.views import N_

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100


@router.get("/alerts/muted")
async def muted_page(console: ConsoleDep, page: Annotated[int, Query(ge=1, le=10_000)] = 1) -> HTMLResponse:
    async with console.runtime.db.read() as session:
        alerts, total = await store.muted_alerts(session, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
        wanted = {str((a.decision_detail or {}).get("inhibited_by") or "") for a in alerts} - {""}
        sources = await store.alerts_by_fingerprint(session, wanted)
        keys = {a.incident_key for a in [*alerts, *sources.values()] if a.incident_key}
        ids = await incident_ids(session, keys)
    pages = max(1, -(-total // PAGE_SIZE))
    return console.page(
        "muted",
        title=N_("Muted alerts"),
        alerts=alerts,
        sources=sources,
        incident_ids=ids,
        total=total,
        page=page,
        pages=pages,
        decision_text=views.DECISION_TEXT,
    )
