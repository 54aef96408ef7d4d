"""Console page: each configured heartbeat (`heartbeats:` in the rules), when its source was last
heard from and how, whether alertrouter has raised "monitoring is blind" for it, or whether it is
still waiting for its first sighting."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from alertrouter.web.console.pages import ConsoleDep

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/heartbeats")
async def heartbeats_page(console: ConsoleDep) -> HTMLResponse:
    monitor = console.runtime.heartbeats
    statuses = await monitor.statuses() if monitor is not None else []
    return console.page(
        "heartbeats",
        title="Heartbeats",
        heartbeats=statuses,
        missing=sum(1 for s in statuses if s.missing),
        waiting=sum(1 for s in statuses if s.waiting),
    )
