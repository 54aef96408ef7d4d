"""Console page: who is on call now and next for each schedule, upcoming overrides, and the escalation
chains running now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from alertrouter.pipeline.oncall import Override, Rota, Shift
from alertrouter.store import escalations as store
from alertrouter.store.delivery import incident_ids
from alertrouter.web.console.pages import ConsoleDep
from alertrouter.web.console.views import N_

__all__ = ["ScheduleView", "router", "schedule_views"]

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class ScheduleView:
    name: str
    timezone: str
    shifts: list[Shift]  # now, then next
    names: dict[str, str]  # person -> how to show them
    overrides: list[Override]


def schedule_views(rota: Rota, now: datetime) -> list[ScheduleView]:
    names = {p.name: p.label for p in rota.people.values()}
    return [
        ScheduleView(s.name, s.timezone, s.shifts(now, 2), names, s.upcoming_overrides(now)[:10])
        for s in rota.schedules.values()
    ]


@router.get("/oncall")
async def oncall_page(console: ConsoleDep) -> HTMLResponse:
    rota = console.runtime.engine.pipeline.rota
    async with console.runtime.db.read() as session:
        running = await store.running(session)
        ids = await incident_ids(session, [r.incident_key for r in running])
    return console.page(
        "oncall",
        title=N_("On call"),
        schedules=schedule_views(rota, console.now),
        running=running,
        incident_ids=ids,
    )
