"""`GET /api/v1/jobs`: the jobs hit now and in the last days (a week by default), each with which source
named it, its nodes (down), GPUs lost, GPU-hours lost and the incidents its alerts are in; and whether the
Prometheus lookup of pods is configured and reading. 404 when the `jobs:` rules are off."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel

from alertrouter.model import utcnow
from alertrouter.runtime import Runtime
from alertrouter.store import jobs as store
from alertrouter.store.tables.jobs import JobHitRow
from alertrouter.web.alerts import AuthorizedRuntime

__all__ = ["JobHitRead", "JobList", "LookupState", "hit_read", "read_jobs", "router"]

router = APIRouter(prefix="/api/v1", tags=["jobs"])


class JobHitRead(BaseModel):
    """`key`: `namespace/name` (`name` alone without a namespace). `source`: label, lookup or pod-name, with
    `detail` (which label, series or rule) and `note` (a value refused, two owners, the lookup down).
    `gpu_hours_lost`: GPUs lost x hours, up to now for a job still hit. `job_nodes`: nodes its pods run on
    by the lookup (0: unknown)."""

    key: str
    namespace: str
    name: str
    source: str
    detail: str
    note: str
    hit_now: bool
    since: datetime
    opened_at: datetime
    updated_at: datetime
    resolved_at: datetime | None
    nodes: list[str]
    nodes_down: list[str]
    node_count: int
    down_count: int
    gpus_lost: int
    peak_gpus_lost: int
    gpu_hours_lost: float
    alerts: int
    job_nodes: int
    incidents: list[str]


class LookupState(BaseModel):
    """`configured`: topology.prometheus reads the pods; `problem`: why it could not at its last refresh
    (what it last said stays in force), null when it could."""

    configured: bool
    problem: str | None


class JobList(BaseModel):
    now: list[JobHitRead]
    recent: list[JobHitRead]  # resolved within `days`, the latest first
    days: int
    lookup: LookupState


def hit_read(row: JobHitRow, now: datetime) -> JobHitRead:
    seconds = row.gpu_seconds
    if row.resolved_at is None:
        seconds += row.gpus_lost * max(0.0, (now - row.updated_at).total_seconds())
    return JobHitRead(
        key=f"{row.namespace}/{row.name}" if row.namespace else row.name,
        namespace=row.namespace,
        name=row.name,
        source=row.source,
        detail=row.detail,
        note=row.note,
        hit_now=row.resolved_at is None,
        since=row.since,
        opened_at=row.opened_at,
        updated_at=row.updated_at,
        resolved_at=row.resolved_at,
        nodes=list(row.nodes),
        nodes_down=list(row.nodes_down),
        node_count=row.node_count,
        down_count=row.down_count,
        gpus_lost=row.gpus_lost,
        peak_gpus_lost=row.peak_gpus_lost,
        gpu_hours_lost=round(seconds / 3600, 2),
        alerts=row.alerts,
        job_nodes=row.job_nodes,
        incidents=list(row.incidents),
    )


def lookup_state(runtime: Runtime) -> LookupState:
    lookup = runtime.lookup
    if lookup is None or lookup.pod_labels is None:
        return LookupState(configured=False, problem=None)
    return LookupState(configured=True, problem=lookup.pods().problem or None)


async def read_jobs(runtime: Runtime, days: int) -> JobList:
    """The jobs hit now and those resolved within `days`; 404 when the `jobs:` rules are off."""
    if runtime.ruleset.jobs is None:
        raise HTTPException(404, "no jobs: section in the rules")
    now = utcnow()
    async with runtime.db.read() as session:
        rows = await store.recent_hits(session, now - timedelta(days=days))
    hits = [hit_read(r, now) for r in rows]
    return JobList(
        now=[h for h in hits if h.hit_now],
        recent=[h for h in hits if not h.hit_now],
        days=days,
        lookup=lookup_state(runtime),
    )


@router.get("/jobs", response_model=JobList)
async def list_jobs(
    runtime: AuthorizedRuntime,
    days: Annotated[int, Query(ge=1, le=90, description="how far back resolved job hits are listed")] = 7,
) -> JobList:
    """The jobs hit now (the earliest hit first) and those resolved within `days` (the latest first)."""
    return await read_jobs(runtime, days)
