"""Writes people make: acknowledgements, silences, used link tokens, revoked console sessions,
dead-letter retry or discard, and the service's own generated secret. Functions never commit; the
caller's transaction decides."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AlertStatus, DeliveryStatus
from alertrouter.store.handles import deliveries_t, incidents_t, insert_for, revoked_t, secrets_t, silences_t, tokens_t
from alertrouter.store.tables import (
    IncidentRow,
    SilenceRow,
)

__all__ = [
    "acknowledge_incident",
    "active_silences",
    "create_silence",
    "discard_delivery",
    "expire_silence",
    "get_or_create_secret",
    "get_silence",
    "list_silences",
    "prune_revoked_sessions",
    "prune_used_tokens",
    "retry_delivery",
    "revoke_session",
    "session_revoked",
    "use_token",
]


async def get_or_create_secret(session: AsyncSession, *, name: str, make: Callable[[], str], now: datetime) -> str:
    """The stored secret `name`, made by `make()` the first time; racing replicas all end up with the
    one that was inserted first."""
    await session.execute(
        insert_for(session, secrets_t)
        .values(name=name, value=make(), created_at=now)
        .on_conflict_do_nothing(index_elements=["name"])  # type: ignore[attr-defined]
    )
    value: str = (await session.execute(select(secrets_t.c.value).where(secrets_t.c.name == name))).scalar_one()
    return value


async def acknowledge_incident(
    session: AsyncSession, *, incident_id: int, by: str, now: datetime
) -> IncidentRow | None:
    """Acknowledge a firing incident (its repeats stop; its resolved message still goes). Already
    acknowledged or resolved: unchanged. Returns the incident as it is now, None if there is none.
    The engine clears the acknowledgement when the incident resolves and fires again."""
    await session.execute(
        update(incidents_t)
        .where(
            incidents_t.c.id == incident_id,
            incidents_t.c.status == AlertStatus.FIRING,
            incidents_t.c.acknowledged_at.is_(None),
        )
        .values(acknowledged_at=now, acknowledged_by=by)
    )
    row: IncidentRow | None = await session.get(IncidentRow, incident_id, populate_existing=True)
    return row


async def use_token(
    session: AsyncSession, *, nonce: str, action: str, incident_id: int, now: datetime, expires_at: datetime
) -> bool:
    """Record that a link was used; False if it was used before (a replay). Kept until it expires,
    after which the signature check refuses it anyway."""
    result = await session.execute(
        insert_for(session, tokens_t)
        .values(nonce=nonce, action=action, incident_id=incident_id, used_at=now, expires_at=expires_at)
        .on_conflict_do_nothing(index_elements=["nonce"])  # type: ignore[attr-defined]
    )
    return bool(cast(Any, result).rowcount)


async def prune_used_tokens(session: AsyncSession, *, now: datetime) -> int:
    result = await session.execute(tokens_t.delete().where(tokens_t.c.expires_at < now))
    return int(cast(Any, result).rowcount or 0)


async def revoke_session(
    session: AsyncSession, *, session_id: str, username: str, now: datetime, expires_at: datetime
) -> None:
    """Refuse a console session from now until it would have expired; revoking twice is harmless."""
    await session.execute(
        insert_for(session, revoked_t)
        .values(session_id=session_id, username=username, revoked_at=now, expires_at=expires_at)
        .on_conflict_do_nothing(index_elements=["session_id"])  # type: ignore[attr-defined]
    )


async def session_revoked(session: AsyncSession, *, session_id: str) -> bool:
    """One primary-key lookup, made for every request that presents a session cookie."""
    found = await session.execute(select(revoked_t.c.session_id).where(revoked_t.c.session_id == session_id))
    return found.first() is not None


async def prune_revoked_sessions(session: AsyncSession, *, now: datetime) -> int:
    """Revocations of sessions that have expired since: their cookies are refused by their signature."""
    result = await session.execute(revoked_t.delete().where(revoked_t.c.expires_at < now))
    return int(cast(Any, result).rowcount or 0)


async def create_silence(
    session: AsyncSession,
    *,
    matchers: Sequence[str],
    starts_at: datetime,
    ends_at: datetime,
    created_by: str,
    comment: str,
    now: datetime,
) -> SilenceRow:
    """`matchers` are Alertmanager matcher strings, already validated by the caller
    (`alertrouter.labels.parse_matchers`)."""
    row = SilenceRow(
        id=str(uuid.uuid4()),
        matchers=list(matchers),
        starts_at=starts_at,
        ends_at=ends_at,
        created_by=created_by,
        comment=comment,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def expire_silence(session: AsyncSession, *, silence_id: str, now: datetime) -> bool:
    """End a silence now; False if there is none that is still active or pending."""
    result = await session.execute(
        update(silences_t)
        .where(silences_t.c.id == silence_id, silences_t.c.ends_at > now)
        .values(ends_at=now, updated_at=now)
    )
    return bool(cast(Any, result).rowcount)


async def get_silence(session: AsyncSession, *, silence_id: str) -> SilenceRow | None:
    return await session.get(SilenceRow, silence_id)


async def active_silences(session: AsyncSession, *, now: datetime) -> Sequence[SilenceRow]:
    """Silences in force now or later (not yet expired), oldest first."""
    return (
        await session.scalars(select(SilenceRow).where(SilenceRow.ends_at > now).order_by(SilenceRow.created_at))
    ).all()


async def list_silences(
    session: AsyncSession, *, now: datetime, include_expired: bool = False, limit: int = 200
) -> Sequence[SilenceRow]:
    stmt = select(SilenceRow)
    if not include_expired:
        stmt = stmt.where(SilenceRow.ends_at > now)
    return (await session.scalars(stmt.order_by(SilenceRow.ends_at.desc()).limit(limit))).all()


async def retry_delivery(session: AsyncSession, *, delivery_id: int, now: datetime) -> bool:
    """Send a dead letter again: back to pending, due now, with a fresh attempt budget."""
    result = await session.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id == delivery_id, deliveries_t.c.status == DeliveryStatus.DEAD)
        .values(
            status=DeliveryStatus.PENDING, next_attempt_at=now, attempts=0, unexpected_failures=0, claimed_until=None
        )
    )
    return bool(cast(Any, result).rowcount)


async def discard_delivery(session: AsyncSession, *, delivery_id: int) -> bool:
    """Give up on a dead letter for good (it stays in the history as `discarded`)."""
    result = await session.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id == delivery_id, deliveries_t.c.status == DeliveryStatus.DEAD)
        .values(status=DeliveryStatus.DISCARDED)
    )
    return bool(cast(Any, result).rowcount)
