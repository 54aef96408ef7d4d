"""What the engine reads and writes: live alerts, incident records, what each receiver was told, the
outbox of intended messages, alert decisions and quarantine."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, Text, cast, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.labelset import LabelSet
from alertrouter.message.facts import facts_from_json
from alertrouter.model import AlertStatus, IncidentKind, OutboxStatus
from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.throttle import NotifyState
from alertrouter.pipeline.types import Decision, IncidentRecord, IncidentState, Intent, LiveAlert
from alertrouter.store import bulk
from alertrouter.store.db import is_outage
from alertrouter.store.handles import alerts_t, change_counter_t, events_t, incidents_t, notify_t, outbox_t
from alertrouter.store.live_rows import LIVE_STATE, LoadedAlert, loaded, merged, unheld
from alertrouter.store.tables import IncidentRow, NotifyStateRow, SilenceRow

__all__ = [
    "PG_CURSOR",
    "change_cursor",
    "clear_acknowledgements",
    "insert_intents",
    "load_acknowledged",
    "load_incidents",
    "load_live_alerts",
    "load_silences",
    "move_incidents",
    "quarantine_alerts",
    "save_decisions",
    "save_incidents",
    "save_notify_states",
    "unreadable_alerts",
]

QUARANTINED = Decision.QUARANTINED.value


PG_CURSOR = "SELECT txid_snapshot_xmin(txid_current_snapshot())"  # `change_cursor` on PostgreSQL


async def change_cursor(session: AsyncSession) -> int:
    """Where a read of alert changes made now can take the next read up: every change whose
    `alerts.change_seq` is below the value is visible to a read that starts after this call.

    PostgreSQL: the oldest transaction still in progress (`change_seq` is the writing transaction's
    id, and every transaction below it has finished). SQLite: one more than the counter the triggers
    draw from (one writer at a time, so values are committed in order). See migration 0015.
    """
    if session.get_bind().dialect.name == "postgresql":
        return int(await session.scalar(text(PG_CURSOR)) or 0)
    counter = change_counter_t.c
    return int(await session.scalar(select(counter.value).where(counter.id == 1)) or 0) + 1


async def load_live_alerts(
    session: AsyncSession,
    *,
    since: int | None,
    resolved_since: datetime,
    known: Mapping[str, datetime] | None = None,
    inserted: Mapping[str, tuple[LiveAlert, datetime]] | None = None,
    held: Mapping[str, LiveAlert] | None = None,
) -> tuple[list[LoadedAlert], int]:
    """Firing alerts and recently resolved ones (all of them, or only those changed at or after the
    change cursor `since`), with their `updated_at`, and the decision and incident key stored last; and
    the cursor the next read starts from (`change_cursor`, taken before this read).

    A read from a cursor can return changes the caller already holds (on PostgreSQL, those of
    transactions that were in progress when the cursor was taken, and committed before this read).
    With `known` (fingerprint -> the `updated_at` the caller holds), rows the caller already holds
    unchanged are left out, found by a first read of two columns. `inserted` (fingerprint -> the alert
    and `updated_at` this process's ingest inserted) is used for rows whose `updated_at` is still that
    one: a storm's new alerts are not read back (a new alert has no stored decision yet). `held`
    (fingerprint -> the alert the caller holds): a changed row's labels are taken from there, not read
    and decoded again (an alert's labels never change: its fingerprint is theirs). Equal stored details
    are returned as one shared object, which callers must not change.
    """
    cursor = await change_cursor(session)
    c = alerts_t.c
    state = [c[name] for name in LIVE_STATE]
    stmt = select(c.fingerprint, c.labels, *state).where(_not_quarantined)
    out: list[LoadedAlert] = []
    rows: list[Sequence[Any]]
    if since is None:
        rows = list(await session.execute(stmt.where(_live(resolved_since))))
    elif known is None:
        rows = list(await session.execute(stmt.where(c.change_seq >= since)))
    else:
        stamps = await session.execute(
            select(c.fingerprint, c.updated_at).where(_not_quarantined, c.change_seq >= since)
        )
        out, unread, again = unheld(stamps, known, inserted, held)
        whole: list[Sequence[Any]] = []
        for chunk in bulk.slices(unread):
            whole += await session.execute(stmt.where(c.fingerprint.in_(chunk)))
        states: list[Sequence[Any]] = []
        for chunk in bulk.slices(again):
            states += await session.execute(
                select(c.fingerprint, *state).where(_not_quarantined, c.fingerprint.in_(chunk))
            )
        return merged(out, whole, states, held), cursor
    return loaded(out, rows), cursor


# Resolved alerts whose resolve is not told yet (`pipeline.stale`): live however long ago they resolved.
_UNTOLD = (Decision.STALE.value, Decision.RESOLVING.value)


def _live(resolved_since: datetime) -> ColumnElement[bool]:
    c = alerts_t.c
    return or_(c.status == AlertStatus.FIRING.value, c.updated_at >= resolved_since, c.decision.in_(_UNTOLD))


_not_quarantined = or_(alerts_t.c.decision.is_(None), alerts_t.c.decision != QUARANTINED)


async def unreadable_alerts(session: AsyncSession, *, resolved_since: datetime) -> dict[str, str]:
    """The live alerts whose rows cannot be read back (fingerprint -> the error), found one by one
    after a whole read failed: a value a driver cannot decode must stop only its own alert."""
    c = alerts_t.c
    stmt = select(c.fingerprint, c.labels, c.status, c.starts_at, c.fired_at, c.updated_at, c.decision_detail)
    fingerprints = list(await session.scalars(select(c.fingerprint).where(_not_quarantined, _live(resolved_since))))
    bad: dict[str, str] = {}
    for fp in fingerprints:
        try:
            (await session.execute(stmt.where(c.fingerprint == fp))).all()
        except Exception as exc:
            if is_outage(exc):
                raise
            bad[fp] = f"{type(exc).__name__}: {exc}"[:500]  # the driver's own error for this row's values
    return bad


async def quarantine_alerts(session: AsyncSession, errors: Mapping[str, str], now: datetime) -> None:
    """Mark alerts as quarantined with their error: every later pass leaves them out, and the API and
    console show why; and a decision event each, so that the decision trail (the incident's page, the
    history) says when and why as it does for every other decision."""
    details = {fp: {"error": error, "quarantined_at": now.isoformat()} for fp, error in sorted(errors.items())}
    for fp, detail in details.items():
        await session.execute(
            update(alerts_t)
            .where(alerts_t.c.fingerprint == fp)
            .values(decision=QUARANTINED, decision_detail=detail, decided_at=now)
        )
    began = await _episode_starts(session, list(details))
    events = [
        {
            "fingerprint": fp,
            "kind": "decision",
            "at": now,
            "episode_starts_at": began.get(fp, now),
            "raw_event_id": None,
            "detail": {"decision": QUARANTINED, **detail},
        }
        for fp, detail in details.items()
    ]
    await bulk.insert(session, events_t, events)


async def _episode_starts(session: AsyncSession, fingerprints: Sequence[str]) -> dict[str, datetime]:
    """The `starts_at` of each alert that has a readable one. Read as text: an alert is quarantined
    because its row may not be readable (a start in the year 10000, which the driver cannot return as
    a datetime); such a start is left out, and its event takes the time of the quarantine instead."""
    out: dict[str, datetime] = {}
    for chunk in bulk.slices(fingerprints):
        rows = await session.execute(
            select(alerts_t.c.fingerprint, cast(alerts_t.c.starts_at, Text)).where(alerts_t.c.fingerprint.in_(chunk))
        )
        for fp, began in rows:
            with contextlib.suppress(TypeError, ValueError):  # the column holds naive UTC on both stores
                out[fp] = datetime.fromisoformat(began).replace(tzinfo=UTC)
    return out


async def load_incidents(
    session: AsyncSession, *, resolved_since: datetime
) -> tuple[dict[str, IncidentRecord], dict[str, datetime]]:
    """The incidents firing, or resolved and written since `resolved_since`, with what each receiver
    was told; and when each was last written (`updated_at`)."""
    rows = (
        await session.scalars(
            select(IncidentRow).where(
                or_(IncidentRow.status == AlertStatus.FIRING, IncidentRow.updated_at >= resolved_since)
            )
        )
    ).all()
    notify: dict[str, dict[str, NotifyState]] = {}
    keys = [r.key for r in rows]
    for chunk in bulk.slices(keys):
        for n in (await session.scalars(select(NotifyStateRow).where(NotifyStateRow.incident_key.in_(chunk)))).all():
            notify.setdefault(n.incident_key, {})[sys.intern(n.receiver)] = NotifyState(
                last_sent_at=n.last_sent_at, firing=frozenset(n.firing), repeats=n.repeats, since=n.since
            )
    # Kept until the incident is evaluated again: the strings most incidents share (and the key, which
    # the engine's placements hold too) one object each, the labels compact (see `LabelSet`), the summary
    # as its typed facts (their texts shared too: the headline is the record's).
    intern = sys.intern
    records = {
        intern(r.key): IncidentRecord(
            key=intern(r.key),
            firing=r.status == AlertStatus.FIRING,
            opened_at=r.opened_at,
            active_since=r.active_since,
            resolved_at=r.resolved_at,
            acknowledged=r.acknowledged_at is not None,
            notify=notify.get(r.key, {}),
            kind=intern(r.kind),
            rule=intern(r.rule),
            parent=None if r.parent_key is None else intern(r.parent_key),
            severity=intern(r.severity),
            headline=intern(r.headline),
            labels=LabelSet(r.labels),
            summary=facts_from_json(_kind(r.kind), r.summary),
        )
        for r in rows
    }
    return records, {r.key: r.updated_at for r in rows}


def _kind(kind: str) -> IncidentKind:
    """A row's kind; anything but a storm's reads as a node incident's, as the outbox message's does."""
    return IncidentKind.CLUSTER if kind == IncidentKind.CLUSTER else IncidentKind.NODE


async def load_acknowledged(session: AsyncSession, *, resolved_since: datetime) -> set[str]:
    """The keys of the acknowledged incidents among those `load_incidents` reads: acknowledgements are
    written by people (any replica), so the engine reads them every pass; there are few."""
    return set(await session.scalars(acknowledged_keys(resolved_since)))


def acknowledged_keys(resolved_since: datetime) -> Select[tuple[str]]:
    """`load_acknowledged`'s statement. Worded so that both databases read it from the partial index of
    acknowledged incidents (migration 0016): with `status` alone in the OR, SQLite chose its other
    indexes and read every firing incident."""
    c = incidents_t.c
    return select(c.key).where(
        c.acknowledged_at.is_not(None),
        c.status.in_((AlertStatus.FIRING, AlertStatus.RESOLVED)),
        or_(c.status == AlertStatus.FIRING, c.updated_at >= resolved_since),
    )


def _incident_row(state: IncidentState, now: datetime) -> dict[str, Any]:
    return {
        "key": state.key,
        "kind": state.kind,
        "rule": state.rule,
        "status": "firing" if state.firing else "resolved",
        "severity": state.severity,
        "headline": state.headline,
        "labels": dict(state.labels),
        "summary": state.summary.to_json(),
        "parent_key": state.parent,
        "opened_at": state.opened_at,
        "active_since": state.active_since,
        "updated_at": now,
        "resolved_at": state.resolved_at,
    }


async def save_incidents(session: AsyncSession, states: Iterable[IncidentState], now: datetime) -> None:
    rows = [_incident_row(s, now) for s in sorted(states, key=lambda s: s.key)]
    await bulk.insert(session, incidents_t, rows, on_conflict_do_update=["key"])


async def save_notify_states(
    session: AsyncSession, states: Mapping[tuple[str, str], NotifyState], reasons: Mapping[tuple[str, str], str]
) -> None:
    rows = [
        {
            "incident_key": k,
            "receiver": r,
            "last_sent_at": s.last_sent_at,
            "firing": sorted(s.firing),
            "repeats": s.repeats,
            "since": s.since,
            "last_reason": reasons[(k, r)],
        }
        for (k, r), s in sorted(states.items())
    ]
    await bulk.insert(session, notify_t, rows, on_conflict_do_update=["incident_key", "receiver"])


async def insert_intents(session: AsyncSession, intents: Sequence[Intent], now: datetime) -> None:
    rows = [
        {
            "incident_key": i.incident,
            "receiver": i.receiver,
            "reason": i.reason.value,
            "created_at": now,
            "message": i.message.to_json(),
            "status": OutboxStatus.PENDING,
            "attempts": 0,
            "next_attempt_at": now,
        }
        for i in intents
    ]
    if rows:
        await session.execute(outbox_t.insert(), rows)


async def save_decisions(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows: fingerprint, node, incident_key, decision, decision_detail, decided_at. `updated_at` is left
    alone on purpose: it marks changes of the alert itself, which is what the engine watches."""
    await bulk.update(session, alerts_t, sorted(rows, key=lambda r: r["fingerprint"]), key=["fingerprint"])


async def load_silences(session: AsyncSession, *, now: datetime) -> list[Silence]:
    """Silences in force now or later; expired ones no longer matter to the engine."""
    rows = (await session.scalars(select(SilenceRow).where(SilenceRow.ends_at > now).order_by(SilenceRow.id))).all()
    return [Silence.parse(r.id, r.matchers, r.starts_at, r.ends_at) for r in rows]


async def clear_acknowledgements(session: AsyncSession, keys: Sequence[str]) -> None:
    """An incident that fired again after resolving is a new occurrence: its old acknowledgement ends."""
    for chunk in bulk.slices(keys):
        await session.execute(
            update(incidents_t)
            .where(incidents_t.c.key.in_(chunk), incidents_t.c.acknowledged_at.is_not(None))
            .values(acknowledged_at=None, acknowledged_by=None)
        )


async def move_incidents(session: AsyncSession, moved: Mapping[str, str], now: datetime) -> None:
    """Node incidents whose alerts moved to another key (`EvalResult.moved`, old -> new): the old one
    is resolved without a message, and what each receiver was told moves with the alerts to the new
    key, unless the new key already has its own (so the next message is a repeat, not a first)."""
    for old, new in sorted(moved.items()):
        await session.execute(
            update(incidents_t)
            .where(incidents_t.c.key == old, incidents_t.c.status == AlertStatus.FIRING)
            .values(status=AlertStatus.RESOLVED, resolved_at=now, updated_at=now)
        )
        taken = select(notify_t.c.receiver).where(notify_t.c.incident_key == new).scalar_subquery()
        await session.execute(
            update(notify_t)
            .where(notify_t.c.incident_key == old, notify_t.c.receiver.not_in(taken))
            .values(incident_key=new)
        )
