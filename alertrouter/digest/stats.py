"""Reads one week of history for the digest (never writes): episodes, alerts, engine decisions,
received payloads, the outbox, deliveries and incidents, into `WeekRows`."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.digest.types import EpisodeRow, IncidentFact, WeekRows
from alertrouter.message.snapshot import MessageError, MessageSnapshot
from alertrouter.store import bulk
from alertrouter.store.escalations import step_counts
from alertrouter.store.tables import (
    AlertEpisodeRow,
    AlertEventRow,
    AlertRow,
    DeliveryRow,
    IncidentRow,
    OutboxRow,
    RawEventRow,
)

__all__ = ["gather"]


def _text(message: Mapping[str, Any], key: str) -> str:
    value = message.get(key)
    return value if isinstance(value, str) else ""


async def gather(session: AsyncSession, *, start: datetime, end: datetime, now: datetime | None = None) -> WeekRows:
    """`now`: when it is read (a preview of the week still going on ends there, not at the week's end)."""
    rows = WeekRows(start=start, end=end, read_at=now)
    ep = AlertEpisodeRow
    for fp, starts_at, ends_at, opened_at, closed_at in await session.execute(
        select(ep.fingerprint, ep.starts_at, ep.ends_at, ep.opened_at, ep.closed_at).where(
            ep.opened_at < end, or_(ep.closed_at.is_(None), ep.closed_at >= start)
        )
    ):
        rows.episodes.append(EpisodeRow(fp, starts_at, ends_at, opened_at, closed_at))
    fps = sorted({e.fingerprint for e in rows.episodes})
    for chunk in bulk.slices(fps):
        for fp, labels, first_seen in await session.execute(
            select(AlertRow.fingerprint, AlertRow.labels, AlertRow.first_seen).where(AlertRow.fingerprint.in_(chunk))
        ):
            rows.alerts[fp] = (dict(labels), first_seen)

    ev = AlertEventRow
    in_week = (ev.at >= start, ev.at < end)
    for kind, n in await session.execute(
        select(ev.kind, func.count()).where(*in_week, ev.kind != "decision").group_by(ev.kind)
    ):
        rows.changes[kind] = int(n)
    for fp, detail in await session.execute(select(ev.fingerprint, ev.detail).where(*in_week, ev.kind == "decision")):
        if isinstance(detail, dict):
            rows.decisions.append((fp, detail))

    raw = RawEventRow
    payloads, payload_alerts = (
        await session.execute(
            select(func.count(), func.coalesce(func.sum(raw.alert_count), 0)).where(
                raw.received_at >= start, raw.received_at < end
            )
        )
    ).one()
    rows.payloads, rows.payload_alerts = int(payloads), int(payload_alerts)

    ob = OutboxRow
    for receiver, reason, key, message, created_at in await session.execute(
        select(ob.receiver, ob.reason, ob.incident_key, ob.message, ob.created_at)
        .where(ob.created_at >= start, ob.created_at < end)
        .order_by(ob.id)
    ):
        msg = message if isinstance(message, dict) else {}
        rows.intents.append((receiver, reason, key, _text(msg, "severity"), _text(msg, "headline") or key, created_at))
        if key not in rows.snapshots:  # the first message about the incident: its headline's facts
            with suppress(MessageError):  # a damaged row: its stored headline is shown
                rows.snapshots[key] = MessageSnapshot.from_json(msg)

    dl = DeliveryRow
    for status, n in await session.execute(
        select(dl.status, func.count()).where(dl.created_at >= start, dl.created_at < end).group_by(dl.status)
    ):
        rows.deliveries[status] = int(n)

    inc = IncidentRow
    for r in await session.scalars(
        select(inc).where(inc.opened_at < end, or_(inc.resolved_at.is_(None), inc.resolved_at >= start))
    ):
        rows.incidents.append(
            IncidentFact(
                r.key, r.kind, r.rule, r.severity, r.headline, r.opened_at, r.resolved_at, r.acknowledged_at, r.status
            )
        )
    rows.escalations = await step_counts(session, since=start, until=end)
    return rows
