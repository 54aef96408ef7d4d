"""GPUs by their own identity and their events (`gpus`, `gpu_events`): what ingest records in its commit,
what the API, the console and the CLI read. Never commits."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store import bulk
from alertrouter.store.handles import gpu_events_t, gpus_t, insert_for
from alertrouter.store.tables import GpuEventRow, GpuRow

__all__ = [
    "EVENT_KEY",
    "GpuFilter",
    "count_gpus",
    "events_of",
    "get_gpu",
    "list_gpus",
    "matching_uuids",
    "read_gpus",
    "record_gpus",
]

EVENT_KEY = ("uuid", "fingerprint", "at")  # one alert episode about one GPU, however often it is re-sent
_GPU_ROWS = 100  # rows of `gpus` per upsert: 8 values each


async def record_gpus(
    session: AsyncSession, gpus: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]]
) -> None:
    """Rows of `gpus` (uuid, serial, model, node, slot, pci_bus_id, first_seen, last_seen; one per uuid)
    and of `gpu_events` (uuid, alertname, xid, at, node, slot, fingerprint), in the caller's transaction.

    A GPU already stored takes the new node, slot and `last_seen`; its serial, model and PCI bus id are
    kept where the new sighting lacks them, and `first_seen` stays. An event already stored (by
    `EVENT_KEY`) is skipped. Rows go in uuid order: concurrent writers lock them in one order."""
    # A multi-row VALUES binds every value: slices keep it under the 999 parameters of older SQLite builds.
    for part in bulk.slices(sorted(gpus, key=lambda r: str(r["uuid"])), _GPU_ROWS):
        stmt = insert_for(session, gpus_t).values(list(part))
        new = stmt.excluded  # type: ignore[attr-defined]
        await session.execute(
            stmt.on_conflict_do_update(  # type: ignore[attr-defined]
                index_elements=["uuid"],
                set_={
                    "serial": func.coalesce(new.serial, gpus_t.c.serial),
                    "model": func.coalesce(new.model, gpus_t.c.model),
                    "pci_bus_id": func.coalesce(new.pci_bus_id, gpus_t.c.pci_bus_id),
                    "node": new.node,
                    "slot": new.slot,
                    "last_seen": new.last_seen,
                },
            )
        )
    if events:
        ordered = sorted(events, key=lambda r: (str(r["uuid"]), str(r["fingerprint"]), r["at"]))
        await bulk.insert(session, gpu_events_t, ordered, on_conflict_do_nothing=list(EVENT_KEY))


async def count_gpus(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.count()).select_from(GpuRow)) or 0)


async def list_gpus(
    session: AsyncSession, *, limit: int, offset: int, uuids: Collection[str] | None = None
) -> list[GpuRow]:
    """One page of GPUs by node, slot, then uuid (`uuids`: only those)."""
    stmt = select(GpuRow).order_by(GpuRow.node, GpuRow.slot, GpuRow.uuid).limit(limit).offset(offset)
    if uuids is not None:
        if not uuids:
            return []
        rows: list[GpuRow] = []
        for part in bulk.slices(sorted(uuids)):
            rows += (await session.scalars(select(GpuRow).where(GpuRow.uuid.in_(part)))).all()
        rows.sort(key=lambda r: (r.node or "", r.slot or "", r.uuid))
        return rows[offset : offset + limit]
    return list((await session.scalars(stmt)).all())


async def get_gpu(session: AsyncSession, uuid: str) -> GpuRow | None:
    return await session.get(GpuRow, uuid)


async def events_of(session: AsyncSession, uuids: Collection[str]) -> dict[str, list[GpuEventRow]]:
    """uuid -> its events, oldest first (a uuid without events is absent)."""
    out: dict[str, list[GpuEventRow]] = defaultdict(list)
    for part in bulk.slices(sorted(uuids)):
        stmt = select(GpuEventRow).where(GpuEventRow.uuid.in_(part)).order_by(GpuEventRow.at, GpuEventRow.id)
        for row in (await session.scalars(stmt)).all():
            out[row.uuid].append(row)
    return dict(out)


async def matching_uuids(session: AsyncSession, *, xids: Collection[int], alertnames: Collection[str]) -> set[str]:
    """The GPUs with at least one event of `xids` or `alertnames`: the only ones an RMA rule can match."""
    conditions = []
    if xids:
        conditions.append(GpuEventRow.xid.in_(sorted(xids)))
    if alertnames:
        conditions.append(GpuEventRow.alertname.in_(sorted(alertnames)))
    if not conditions:
        return set()
    stmt = select(GpuEventRow.uuid).where(or_(*conditions)).distinct()
    return set((await session.scalars(stmt)).all())


@dataclass(frozen=True, slots=True)
class GpuFilter:
    """Only the GPUs `keep` accepts, given their events; `xids`/`alertnames`: a GPU none of whose events
    has one of these is not even read (the RMA rules' own, so only their GPUs are judged)."""

    xids: frozenset[int]
    alertnames: frozenset[str]
    keep: Callable[[Sequence[GpuEventRow]], bool]


async def read_gpus(
    session: AsyncSession, *, limit: int, offset: int, only: GpuFilter | None = None
) -> tuple[list[GpuRow], dict[str, list[GpuEventRow]], int]:
    """One page of GPUs (by node, slot, uuid), their events, and how many GPUs there are in all (those
    `only` keeps, when given)."""
    if only is None:
        total = await count_gpus(session)
        rows = await list_gpus(session, limit=limit, offset=offset)
    else:
        judged = await events_of(session, await matching_uuids(session, xids=only.xids, alertnames=only.alertnames))
        kept = {uuid for uuid, events in judged.items() if only.keep(events)}
        total = len(kept)
        rows = await list_gpus(session, limit=limit, offset=offset, uuids=kept)
    return rows, await events_of(session, [r.uuid for r in rows]), total
