"""Reads for the web console: filtered incident lists, an incident's decision trail and deliveries,
muted alerts, silence effects. Label filters run in SQL through the JSON column on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.pipeline.types import Decision
from alertrouter.store import bulk
from alertrouter.store.db import Database, describe_error
from alertrouter.store.handles import attempts_t, deliveries_t
from alertrouter.store.tables import (
    AlertEventRow,
    AlertRow,
    IncidentRow,
    OutboxRow,
    UsedTokenRow,
)

__all__ = [
    "CHOICE_MAX",
    "MUTED_DECISIONS",
    "AlertTimes",
    "FilterChoices",
    "IncidentFilter",
    "alert_times",
    "alerts_by_fingerprint",
    "attempts_for",
    "decision_trail",
    "delivery_status",
    "filter_choices",
    "incident_deliveries",
    "incident_messages",
    "list_incidents",
    "muted_alerts",
    "silenced_counts",
    "used_token",
]

log = logging.getLogger(__name__)

MUTED_DECISIONS = (
    Decision.INHIBITED,
    Decision.HELD,
    Decision.SILENCED,
    Decision.MAINTENANCE,
    Decision.MUTED_BY_INTERVAL,
    Decision.QUARANTINED,
)
CHOICE_MAX = 256  # the longest region the incident filter accepts, so the longest it offers


@dataclass(frozen=True, slots=True)
class IncidentFilter:
    status: str | None = None  # firing | resolved | None (all)
    kind: str | None = None  # node | cluster
    severity: str | None = None
    region: str | None = None
    node: str | None = None  # exact value of the node label, or a prefix ending in *
    node_label: str = "node"


async def used_token(session: AsyncSession, *, nonce: str) -> UsedTokenRow | None:
    return await session.get(UsedTokenRow, nonce)


def _incident_conditions(f: IncidentFilter) -> list[Any]:
    conditions: list[Any] = []
    if f.status:
        conditions.append(IncidentRow.status == f.status)
    if f.kind:
        conditions.append(IncidentRow.kind == f.kind)
    if f.severity:
        conditions.append(IncidentRow.severity == f.severity)
    if f.region:
        conditions.append(IncidentRow.labels["region"].as_string() == f.region)
    if f.node:
        node = IncidentRow.labels[f.node_label].as_string()
        if f.node.endswith("*"):
            prefix = f.node[:-1].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            conditions.append(node.like(prefix + "%", escape="\\"))
        else:
            conditions.append(node == f.node)
    return conditions


async def list_incidents(
    session: AsyncSession, f: IncidentFilter, *, limit: int, offset: int
) -> tuple[Sequence[IncidentRow], int]:
    """Firing incidents first, storms (cluster incidents) first among them, then the most recently changed.

    Read part by part, each in index order (`ix_incidents_status_kind_updated`): one count per
    (status, kind), then only the parts the page falls in, from its offset there. Sorting the whole
    list by that order in SQL sorted every incident of the status shown, per request: tens of
    thousands of rows during a storm.
    """
    conditions = _incident_conditions(f)
    counted = await session.execute(
        select(IncidentRow.status, IncidentRow.kind, func.count())
        .where(*conditions)
        .group_by(IncidentRow.status, IncidentRow.kind)
    )
    counts = {(status, kind): int(n) for status, kind, n in counted}
    rows: list[IncidentRow] = []
    skip = offset
    for statuses, kinds in _parts(counts):
        size = sum(counts.get((s, k), 0) for s in statuses for k in kinds)
        if skip >= size:
            skip -= size
            continue
        stmt = (
            select(IncidentRow)
            .where(*conditions, IncidentRow.status.in_(statuses), IncidentRow.kind.in_(kinds))
            .order_by(IncidentRow.updated_at.desc(), IncidentRow.id.desc())
            .limit(limit - len(rows))
            .offset(skip)
        )
        rows.extend((await session.scalars(stmt)).all())
        skip = 0
        if len(rows) >= limit:
            break
    return rows, sum(counts.values())


def _parts(counts: dict[tuple[str, str], int]) -> list[tuple[list[str], list[str]]]:
    """The list's parts in order, as the statuses and kinds each holds: firing storms, firing node
    incidents, then the same for every other status. Values other than the usual ones (none are
    written today) share the part of the usual value they are not."""
    statuses = sorted({s for s, _ in counts})
    kinds = sorted({k for _, k in counts})
    firing = [s for s in statuses if s == AlertStatus.FIRING]
    other_status = [s for s in statuses if s != AlertStatus.FIRING]
    cluster = [k for k in kinds if k == IncidentKind.CLUSTER]
    other_kind = [k for k in kinds if k != IncidentKind.CLUSTER]
    parts = [(st, kd) for st in (firing, other_status) for kd in (cluster, other_kind)]
    return [(st, kd) for st, kd in parts if st and kd]


async def filter_choices(session: AsyncSession) -> dict[str, list[str]]:
    """The regions and severities incidents have, for the filter menus."""
    region = IncidentRow.labels["region"].as_string()
    offered = select(region).where(region.is_not(None), func.length(region) <= CHOICE_MAX)  # longer: unfilterable
    regions = (await session.scalars(offered.distinct().limit(200))).all()
    severities = (await session.scalars(select(IncidentRow.severity).distinct().limit(50))).all()
    return {"region": sorted(r for r in regions if r), "severity": sorted(s for s in severities if s)}


class FilterChoices:
    """`filter_choices`, held, and read again in the background once `ttl` seconds old.

    The distinct regions are a scan of every incident's labels (growing with the incidents); the menus
    change when a new region or severity first appears, so menus up to `ttl` old are enough. A console
    list answers with the menus held while they are read again: none waits for the scan but a list read
    before any are held (`serve` reads them once idle after it starts). During a storm, when the list is read most,
    one read every `ttl` paid the scan on the same cores as the storm's pass. Per process: replicas keep
    their own.
    """

    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl, self._clock = ttl, clock
        self._held: tuple[float, dict[str, list[str]]] | None = None
        self._reading: asyncio.Task[None] | None = None

    async def get(self, db: Database) -> dict[str, list[str]]:
        held = self._held
        if held is None:
            return await self.read(db)
        if self._clock() - held[0] >= self._ttl and (self._reading is None or self._reading.done()):
            self._reading = asyncio.create_task(self._read_again(db), name="alertrouter-filter-choices")
        return held[1]

    async def read(self, db: Database) -> dict[str, list[str]]:
        """Read the menus now, and hold them unless they are empty: read on a store that has no incidents
        yet (a first start), they would hide the first incidents' regions for `ttl`, and reading them
        again costs nothing there."""
        started = self._clock()
        async with db.read() as session:
            choices = await filter_choices(session)
        self._held = (started, choices) if any(choices.values()) else None
        return choices

    async def _read_again(self, db: Database) -> None:
        try:
            await self.read(db)
        except Exception as exc:  # the menus held stay; the next list read after this tries again
            log.warning("console filter menus not read again, the ones held stay: %s", describe_error(exc))

    async def settled(self) -> None:
        """Until a read in the background (if one runs) has ended."""
        if self._reading is not None:
            await asyncio.shield(self._reading)

    async def stop(self) -> None:
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading


async def decision_trail(
    session: AsyncSession, *, fingerprints: Sequence[str], limit: int = 500
) -> Sequence[AlertEventRow]:
    """The decision changes of these alerts and their incident's escalation events, oldest first (the
    latest `limit`)."""
    if not fingerprints:
        return []
    stmt = (
        select(AlertEventRow)
        .where(
            AlertEventRow.fingerprint.in_(list(fingerprints)[:1000]), AlertEventRow.kind.in_(("decision", "escalation"))
        )
        .order_by(AlertEventRow.at.desc(), AlertEventRow.id.desc())
        .limit(limit)
    )
    return list(reversed((await session.scalars(stmt)).all()))


@dataclass(frozen=True, slots=True)
class AlertTimes:
    """An incident's times as its alerts tell them (not when alertrouter opened or closed it)."""

    firing_since: datetime | None  # the earliest startsAt of its alerts still firing
    started: datetime | None  # the earliest startsAt of all of them
    ended: datetime | None  # the latest endsAt of those resolved


async def alert_times(session: AsyncSession, keys: Iterable[str]) -> dict[str, AlertTimes]:
    """Per incident key, its alerts' times, of the alerts of its current occurrence: still firing, or
    ended since it opened (one over before a reopening is another occurrence's); of all its alerts when
    none is (an incident told only after its alerts were over). Keys of no alert are left out. One
    grouped read per chunk of keys: a page of incidents is one or two statements."""
    a, i = AlertRow, IncidentRow
    firing = AlertStatus.FIRING.value
    now = or_(a.status == firing, a.ends_at.is_(None), a.ends_at >= i.opened_at)
    found: dict[str, dict[bool, dict[str, tuple[datetime, datetime | None]]]] = {}
    for chunk in bulk.slices(sorted(set(keys))):
        stmt = (
            select(a.incident_key, a.status, now, func.min(a.starts_at), func.max(a.ends_at))
            .join(i, i.key == a.incident_key)
            .where(a.incident_key.in_(chunk))
            .group_by(a.incident_key, a.status, now)
        )
        for key, status, current, first, last in await session.execute(stmt):
            found.setdefault(str(key), {}).setdefault(bool(current), {})[status] = (first, last)
    out = {}
    for key, by_occurrence in found.items():
        by_status = by_occurrence.get(True) or by_occurrence[False]
        live, over = by_status.get(firing), by_status.get(AlertStatus.RESOLVED.value)
        started = min(t[0] for t in by_status.values())
        out[key] = AlertTimes(live[0] if live else None, started, over[1] if over else None)
    return out


async def incident_messages(session: AsyncSession, *, key: str, limit: int = 100) -> Sequence[OutboxRow]:
    stmt = select(OutboxRow).where(OutboxRow.incident_key == key).order_by(OutboxRow.id.desc()).limit(limit)
    return (await session.scalars(stmt)).all()


async def incident_deliveries(session: AsyncSession, *, incident_id: int, limit: int = 200) -> Sequence[Row[Any]]:
    """Deliveries of an incident newest first, and the coalesced messages that carried some of them."""
    stmt = (
        select(deliveries_t)
        .where(deliveries_t.c.incident_id == incident_id)
        .order_by(deliveries_t.c.id.desc())
        .limit(limit)
    )
    rows = list((await session.execute(stmt)).all())
    parents = {r.parent_id for r in rows if r.parent_id is not None} - {r.id for r in rows}
    if parents:
        extra = await session.execute(select(deliveries_t).where(deliveries_t.c.id.in_(sorted(parents))))
        rows.extend(extra.all())
    return rows


async def attempts_for(session: AsyncSession, delivery_ids: Iterable[int]) -> dict[int, list[Row[Any]]]:
    ids = sorted(set(delivery_ids))
    out: dict[int, list[Row[Any]]] = {i: [] for i in ids}
    for chunk in bulk.slices(ids):
        stmt = select(attempts_t).where(attempts_t.c.delivery_id.in_(chunk)).order_by(attempts_t.c.id)
        for row in (await session.execute(stmt)).all():
            out[row.delivery_id].append(row)
    return out


async def muted_alerts(session: AsyncSession, *, limit: int, offset: int) -> tuple[Sequence[AlertRow], int]:
    """Firing alerts the engine keeps quiet: inhibited, held for a possible source, or silenced."""
    conditions = [AlertRow.status == AlertStatus.FIRING, AlertRow.decision.in_(MUTED_DECISIONS)]
    total = int(await session.scalar(select(func.count()).select_from(AlertRow).where(*conditions)) or 0)
    stmt = (
        select(AlertRow)
        .where(*conditions)
        .order_by(AlertRow.decision, AlertRow.node, AlertRow.fingerprint)
        .limit(limit)
        .offset(offset)
    )
    return (await session.scalars(stmt)).all(), total


async def alerts_by_fingerprint(session: AsyncSession, fingerprints: Iterable[str]) -> dict[str, AlertRow]:
    wanted = sorted(set(fingerprints))
    out: dict[str, AlertRow] = {}
    for chunk in bulk.slices(wanted):
        rows = await session.scalars(select(AlertRow).where(AlertRow.fingerprint.in_(chunk)))
        out.update((r.fingerprint, r) for r in rows)
    return out


async def silenced_counts(session: AsyncSession) -> dict[str, int]:
    """Firing alerts each silence mutes now, as the engine last decided."""
    silence_id = AlertRow.decision_detail["silenced_by"].as_string()
    stmt = (
        select(silence_id, func.count())
        .where(AlertRow.status == AlertStatus.FIRING, AlertRow.decision == Decision.SILENCED)
        .group_by(silence_id)
    )
    return {str(sid): int(n) for sid, n in (await session.execute(stmt)).all() if sid}


async def delivery_status(session: AsyncSession, *, delivery_id: int) -> str | None:
    status: str | None = await session.scalar(select(deliveries_t.c.status).where(deliveries_t.c.id == delivery_id))
    return status
