"""Console pages: every GPU by its own identity (UUID), the RMA candidates, and one GPU's history with the
evidence that made it a candidate. The verdict is worded on the page from its fields (rule, Xids or
alertnames, count, span) in the page's language; the API's `reason` is English."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from alertrouter.gpu.report import report
from alertrouter.model import NAME_MAX
from alertrouter.store import gpus as store
from alertrouter.web.console.pages import N_, ConsoleDep, PageError
from alertrouter.web.gpus import read_reports, rules_of

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100


@router.get("/gpus")
async def gpus_page(
    console: ConsoleDep,
    rma: Annotated[bool, Query()] = False,
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
) -> HTMLResponse:
    reports, total = await read_reports(console.runtime, rma=rma, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    return console.page(
        "gpus",
        title="GPUs",
        gpus=reports,
        total=total,
        rma=rma,
        page=page,
        pages=max(1, -(-total // PAGE_SIZE)),
    )


@router.get("/gpus/{uuid}")
async def gpu_page(console: ConsoleDep, uuid: str) -> HTMLResponse:
    row = None
    if len(uuid) <= NAME_MAX:  # no stored UUID is longer
        async with console.runtime.db.read() as session:
            row = await store.get_gpu(session, uuid)
            events = (await store.events_of(session, [uuid])).get(uuid, []) if row is not None else []
    if row is None:
        raise PageError(404, N_("Not found"), N_("No GPU with UUID %(uuid)s has been seen."), uuid=uuid[:NAME_MAX])
    gpu = report(row, events, rules_of(console.runtime))
    return console.page("gpu", title_text=gpu.uuid, gpu=gpu, evidence=set(gpu.verdict.evidence))
