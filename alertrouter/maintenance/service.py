"""Starting and ending maintenance, one transaction each: the CLI, the API and the console go through here."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from alertrouter.maintenance.requests import StartRequest, node_list, who
from alertrouter.store import Database
from alertrouter.store import maintenance as store
from alertrouter.store.tables import MaintenanceRow

__all__ = ["RECENT", "end", "listed", "start"]

log = logging.getLogger(__name__)

RECENT = timedelta(days=7)  # ended windows listed this long


async def start(db: Database, request: StartRequest) -> list[MaintenanceRow]:
    async with db.write() as session:
        rows = await store.start_maintenance(
            session,
            nodes=request.nodes,
            starts_at=request.starts_at,
            ends_at=request.ends_at,
            reason=request.reason,
            by=request.by,
            now=request.starts_at,
        )
        await session.commit()
    log.info(
        "maintenance of %s started by %s until %s: %s",
        ", ".join(request.nodes),
        request.by,
        request.ends_at.isoformat(),
        request.reason,
    )
    return rows


async def end(db: Database, nodes: Sequence[str], *, by: str, now: datetime) -> list[str]:
    """End the maintenance of `nodes` now; the nodes that were in (or scheduled for) maintenance."""
    names = node_list(nodes)
    async with db.write() as session:
        ended = await store.end_maintenance(session, nodes=names, by=who(by), now=now)
        await session.commit()
    if ended:
        log.info("maintenance of %s ended by %s", ", ".join(ended), by)
    return ended


async def listed(db: Database, *, now: datetime, recent: timedelta = RECENT) -> Sequence[MaintenanceRow]:
    async with db.read() as session:
        return await store.list_maintenance(session, now=now, ended_after=now - recent)
