"""Console page: the jobs hit now and in the last week (`GET /api/v1/jobs`'s view): which source named each
job, its nodes down and GPUs lost, GPU-hours lost, since when, and the incidents its alerts are in; and a
word when the Prometheus lookup of pods is down (the jobs are then named from its last answer)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from alertrouter.web.console.pages import N_, ConsoleDep, PageError
from alertrouter.web.jobs import read_jobs

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/jobs")
async def jobs_page(console: ConsoleDep) -> HTMLResponse:
    if console.runtime.ruleset.jobs is None:
        raise PageError(404, N_("Not found"), N_("Jobs are not watched: add a jobs section to the rules."))
    jobs = await read_jobs(console.runtime, 7)
    return console.page("jobs", title="Jobs", now_hit=jobs.now, recent=jobs.recent, lookup=jobs.lookup)
