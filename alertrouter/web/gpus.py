"""`GET /api/v1/gpus` and `GET /api/v1/gpus/{uuid}`: every GPU by its own identity (its UUID), its events,
and whether the `rma:` rules make it an RMA candidate, with the evidence."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel

from alertrouter.gpu.report import GpuReport, candidate_query, report
from alertrouter.gpu.rma import RmaRule
from alertrouter.model import NAME_MAX
from alertrouter.ruleset.rma import rma_rules
from alertrouter.runtime import Runtime
from alertrouter.store import gpus as store
from alertrouter.web.alerts import AuthorizedRuntime
from alertrouter.web.ids import Limit, Offset

__all__ = ["GpuEventRead", "GpuList", "GpuRead", "gpu_read", "read_reports", "router", "rules_of"]

router = APIRouter(prefix="/api/v1", tags=["gpus"])


class GpuEventRead(BaseModel):
    """`at`: the alert's `startsAt`; `xid`: null for a GPU alert without one (a row-remap failure alert)."""

    xid: int | None
    alertname: str
    at: datetime


class PlaceRead(BaseModel):
    node: str | None
    gpu: str | None
    first: datetime
    last: datetime
    events: int


class GpuRead(BaseModel):
    """`node`/`gpu`: where the GPU was last seen (node as the pipeline names it, `gpu` the index on it).
    `rma_candidate`/`reason`: the `rma:` rules' verdict in English, with `rma_rule`, `rma_rules` (every
    rule met) and `evidence` (the events that met the first one). `conflict`: its UUID was seen at two
    places at once (`places`): two GPUs may claim one UUID; their events are listed, never merged away."""

    uuid: str
    node: str | None
    gpu: str | None
    model: str | None
    serial: str | None
    pci_bus_id: str | None
    first_seen: datetime
    last_seen: datetime
    events: list[GpuEventRead]
    rma_candidate: bool
    reason: str
    rma_rule: str | None
    rma_rules: list[str]
    evidence: list[GpuEventRead]
    places: list[PlaceRead]
    conflict: bool


class GpuList(BaseModel):
    gpus: list[GpuRead]
    total: int
    limit: int
    offset: int


def _event(e: object) -> GpuEventRead:
    return GpuEventRead.model_validate(e, from_attributes=True)


def gpu_read(r: GpuReport) -> GpuRead:
    return GpuRead(
        uuid=r.uuid,
        node=r.node,
        gpu=r.slot,
        model=r.model,
        serial=r.serial,
        pci_bus_id=r.pci_bus_id,
        first_seen=r.first_seen,
        last_seen=r.last_seen,
        events=[_event(e) for e in r.events],
        rma_candidate=r.verdict.candidate,
        reason=r.reason,
        rma_rule=r.verdict.rule,
        rma_rules=list(r.verdict.rules),
        evidence=[_event(e) for e in r.verdict.evidence],
        places=[PlaceRead(node=p.node, gpu=p.slot, first=p.first, last=p.last, events=p.events) for p in r.places],
        conflict=r.conflict,
    )


def rules_of(runtime: Runtime) -> tuple[RmaRule, ...]:
    return rma_rules(runtime.ruleset.rma)


async def read_reports(runtime: Runtime, *, rma: bool, limit: int, offset: int) -> tuple[list[GpuReport], int]:
    """One page of GPUs (only the RMA candidates with `rma`), and how many there are in all."""
    rules = rules_of(runtime)
    only = None
    if rma:
        query = candidate_query(rules)
        only = store.GpuFilter(xids=query.xids, alertnames=query.alertnames, keep=query.keep)
    async with runtime.db.read() as session:
        rows, events, total = await store.read_gpus(session, limit=limit, offset=offset, only=only)
    return [report(row, events.get(row.uuid, []), rules) for row in rows], total


@router.get("/gpus", response_model=GpuList)
async def list_gpus(
    runtime: AuthorizedRuntime,
    rma: Annotated[bool, Query(description="only the RMA candidates")] = False,
    limit: Limit = 100,
    offset: Offset = 0,
) -> GpuList:
    """GPUs by node, slot, then UUID, each with its events and RMA verdict."""
    reports, total = await read_reports(runtime, rma=rma, limit=limit, offset=offset)
    return GpuList(gpus=[gpu_read(r) for r in reports], total=total, limit=limit, offset=offset)


@router.get("/gpus/{uuid}", response_model=GpuRead)
async def get_gpu(runtime: AuthorizedRuntime, uuid: str) -> GpuRead:
    """One GPU by its UUID (as dcgm-exporter's `UUID` label says it); 404 for one never recorded."""
    if len(uuid) > NAME_MAX:  # no stored UUID is longer: answered as an unknown one, without a read
        raise HTTPException(404, "no GPU with that UUID")
    async with runtime.db.read() as session:
        row = await store.get_gpu(session, uuid)
        if row is None:
            raise HTTPException(404, f"no GPU with UUID {uuid!r}")
        events = (await store.events_of(session, [uuid])).get(uuid, [])
    return gpu_read(report(row, events, rules_of(runtime)))
