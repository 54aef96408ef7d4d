"""One week of history as the weekly digest reads it (never writes): alert episodes and alerts, alert
events, received payloads, outbox rows, deliveries, incidents, escalation chains, and the history of the
GPUs the `rma:` rules may judge.

The digest reads the store only through here; what an outbox row's message says is the digest's
business (`alertrouter.digest.stats`), so messages come back as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store import bulk
from alertrouter.store.escalations import step_counts
from alertrouter.store.tables import (
    AlertEpisodeRow,
    AlertEventRow,
    AlertRow,
    DeliveryRow,
    GpuEventRow,
    GpuRow,
    IncidentRow,
    OutboxRow,
    RawEventRow,
)

__all__ = [
    "EpisodeRow",
    "GpuEventFact",
    "GpuHistory",
    "GpuMatch",
    "IncidentFact",
    "OutboxEntry",
    "WeekHistory",
    "read_week",
]


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    fingerprint: str
    starts_at: datetime
    ends_at: datetime | None
    opened_at: datetime
    closed_at: datetime | None


@dataclass(frozen=True, slots=True)
class IncidentFact:
    key: str
    kind: str
    rule: str
    severity: str
    headline: str
    opened_at: datetime
    resolved_at: datetime | None
    acknowledged_at: datetime | None
    status: str


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    receiver: str
    reason: str
    incident_key: str
    message: Mapping[str, Any]  # as stored; {} when the column holds no JSON object
    created_at: datetime


@dataclass(frozen=True, slots=True)
class GpuEventFact:
    """One event of a GPU's history (`gpu_events`): the alert's `startsAt`, and where it saw the GPU."""

    at: datetime
    xid: int | None
    alertname: str
    node: str | None
    slot: str | None


@dataclass(frozen=True, slots=True)
class GpuHistory:
    """One GPU by its UUID, and its events from `GpuMatch.lookback` before the week to the week's end,
    oldest first."""

    uuid: str
    serial: str | None
    model: str | None
    events: tuple[GpuEventFact, ...]


@dataclass(frozen=True, slots=True)
class GpuMatch:
    """Which GPUs to read: those with an event of `xids` or `alertnames` in the week (the RMA rules'
    own); `lookback`: how far before the week their events are read (the rules' longest window: an
    older event cannot be in a window that reaches into the week)."""

    xids: frozenset[int] = frozenset()
    alertnames: frozenset[str] = frozenset()
    lookback: timedelta = timedelta(0)


@dataclass(slots=True)
class WeekHistory:
    """What the store holds about [start, end): rows that overlap it, counts of what happened in it."""

    episodes: list[EpisodeRow] = field(default_factory=list)
    alerts: dict[str, tuple[dict[str, str], datetime]] = field(default_factory=dict)  # fp -> (labels, first_seen)
    changes: dict[str, int] = field(default_factory=dict)  # alert event kind (not decisions) -> count
    decisions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (fingerprint, detail)
    payloads: int = 0
    payload_alerts: int = 0
    outbox: list[OutboxEntry] = field(default_factory=list)  # in the order they were written
    deliveries: dict[str, int] = field(default_factory=dict)  # status -> count
    incidents: list[IncidentFact] = field(default_factory=list)
    escalations: dict[int, int] = field(default_factory=dict)  # step -> incidents whose chain reached it
    gpus: list[GpuHistory] = field(default_factory=list)  # by uuid: those `GpuMatch` names


async def read_week(
    session: AsyncSession, *, start: datetime, end: datetime, gpus: GpuMatch | None = None
) -> WeekHistory:
    """`gpus`: which GPUs' history to read as well (None: none)."""
    week = WeekHistory()
    await _alerts(session, week, start, end)
    await _events(session, week, start, end)
    await _outbox(session, week, start, end)
    await _incidents(session, week, start, end)
    week.escalations = await step_counts(session, since=start, until=end)
    if gpus is not None:
        week.gpus = await _gpus(session, gpus, start, end)
    return week


async def _alerts(session: AsyncSession, week: WeekHistory, start: datetime, end: datetime) -> None:
    """Episodes open at some time in the week, and the labels of their alerts."""
    ep = AlertEpisodeRow
    for fp, starts_at, ends_at, opened_at, closed_at in await session.execute(
        select(ep.fingerprint, ep.starts_at, ep.ends_at, ep.opened_at, ep.closed_at).where(
            ep.opened_at < end, or_(ep.closed_at.is_(None), ep.closed_at >= start)
        )
    ):
        week.episodes.append(EpisodeRow(fp, starts_at, ends_at, opened_at, closed_at))
    fps = sorted({e.fingerprint for e in week.episodes})
    for chunk in bulk.slices(fps):
        for fp, labels, first_seen in await session.execute(
            select(AlertRow.fingerprint, AlertRow.labels, AlertRow.first_seen).where(AlertRow.fingerprint.in_(chunk))
        ):
            week.alerts[fp] = (dict(labels), first_seen)


async def _events(session: AsyncSession, week: WeekHistory, start: datetime, end: datetime) -> None:
    """Alert events and received payloads of the week."""
    ev = AlertEventRow
    in_week = (ev.at >= start, ev.at < end)
    for kind, n in await session.execute(
        select(ev.kind, func.count()).where(*in_week, ev.kind != "decision").group_by(ev.kind)
    ):
        week.changes[kind] = int(n)
    for fp, detail in await session.execute(select(ev.fingerprint, ev.detail).where(*in_week, ev.kind == "decision")):
        if isinstance(detail, dict):
            week.decisions.append((fp, detail))
    raw = RawEventRow
    payloads, payload_alerts = (
        await session.execute(
            select(func.count(), func.coalesce(func.sum(raw.alert_count), 0)).where(
                raw.received_at >= start, raw.received_at < end
            )
        )
    ).one()
    week.payloads, week.payload_alerts = int(payloads), int(payload_alerts)


async def _outbox(session: AsyncSession, week: WeekHistory, start: datetime, end: datetime) -> None:
    """Outbox rows written in the week, and their deliveries' outcomes counted."""
    ob = OutboxRow
    for receiver, reason, key, message, created_at in await session.execute(
        select(ob.receiver, ob.reason, ob.incident_key, ob.message, ob.created_at)
        .where(ob.created_at >= start, ob.created_at < end)
        .order_by(ob.id)
    ):
        msg = message if isinstance(message, dict) else {}
        week.outbox.append(OutboxEntry(receiver, reason, key, msg, created_at))
    dl = DeliveryRow
    for status, n in await session.execute(
        select(dl.status, func.count()).where(dl.created_at >= start, dl.created_at < end).group_by(dl.status)
    ):
        week.deliveries[status] = int(n)


async def _incidents(session: AsyncSession, week: WeekHistory, start: datetime, end: datetime) -> None:
    """Incidents open at some time in the week."""
    inc = IncidentRow
    for r in await session.scalars(
        select(inc).where(inc.opened_at < end, or_(inc.resolved_at.is_(None), inc.resolved_at >= start))
    ):
        week.incidents.append(
            IncidentFact(
                r.key, r.kind, r.rule, r.severity, r.headline, r.opened_at, r.resolved_at, r.acknowledged_at, r.status
            )
        )


async def _gpus(session: AsyncSession, match: GpuMatch, start: datetime, end: datetime) -> list[GpuHistory]:
    """The GPUs with an event `match` names in [start, end), each with every event (of any kind, where
    it was seen) from `match.lookback` before `start` to `end`: a GPU that moved keeps them all."""
    ev = GpuEventRow
    named = [ev.xid.in_(sorted(match.xids))] if match.xids else []
    named += [ev.alertname.in_(sorted(match.alertnames))] if match.alertnames else []
    if not named:
        return []
    stmt = select(ev.uuid).where(ev.at >= start, ev.at < end, or_(*named)).distinct()
    uuids = sorted(set((await session.scalars(stmt)).all()))
    out: list[GpuHistory] = []
    for chunk in bulk.slices(uuids):
        gpus = {
            uuid: (serial, model)
            for uuid, serial, model in await session.execute(
                select(GpuRow.uuid, GpuRow.serial, GpuRow.model).where(GpuRow.uuid.in_(chunk))
            )
        }
        events: dict[str, list[GpuEventFact]] = {uuid: [] for uuid in chunk}
        for uuid, at, xid, alertname, node, slot in await session.execute(
            select(ev.uuid, ev.at, ev.xid, ev.alertname, ev.node, ev.slot)
            .where(ev.uuid.in_(chunk), ev.at >= start - match.lookback, ev.at < end)
            .order_by(ev.uuid, ev.at, ev.id)
        ):
            events[uuid].append(GpuEventFact(at, xid, alertname, node, slot))
        for uuid in chunk:
            serial, model = gpus.get(uuid, (None, None))
            out.append(GpuHistory(uuid, serial, model, tuple(events[uuid])))
    return out
