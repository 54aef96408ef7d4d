"""Failed console logins, counted per user name and per client address (`LoginFailureRow`).

Every decision is one conditional statement on the subject's row, so replicas and parallel requests
agree without a lock of their own: an attempt is counted (`reserve`) before its password is checked
and refused when the count is at the limit or the subject is locked; a failure that leaves the count
at the limit locks the subject (`record_failure`); a success takes its count back (`refund`) or clears
the user name (`clear`). Functions never commit; the caller's transaction decides.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from sqlalchemy import Table, and_, case, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from alertrouter.store.handles import insert_for
from alertrouter.store.tables import LoginFailureRow, UTCDateTime

__all__ = [
    "STREAK",
    "Scope",
    "clear",
    "prune_login_failures",
    "record_failure",
    "refund",
    "reserve",
    "retry_after",
]

Scope = Literal["account", "address"]

# A lock that starts within this time of the previous one's end lasts longer than it (a streak); rows
# quiet and unlocked for as long are forgotten, which ends the streak as well.
STREAK = timedelta(days=1)

logins_t = cast(Table, LoginFailureRow.__table__)
_c = logins_t.c


def _at(value: datetime) -> ColumnElement[datetime]:
    """A time as a value inside an expression (CASE), stored as the columns store it."""
    return literal(value, UTCDateTime())


def _row(scope: Scope, subject: str) -> ColumnElement[bool]:
    return and_(_c.scope == scope, _c.subject == subject)


def _unlocked(now: datetime) -> ColumnElement[bool]:
    return or_(_c.locked_until.is_(None), _c.locked_until <= now)


async def reserve(
    session: AsyncSession, *, scope: Scope, subject: str, limit: int, window: timedelta, now: datetime
) -> bool:
    """Count one attempt of `subject`, unless it is locked or has `limit` failures (or attempts still
    being checked) in its window: False then, and nothing is written. One INSERT ... ON CONFLICT DO
    UPDATE ... WHERE, so no two attempts can both take the last place. A window older than `window`
    starts again from this attempt."""
    cut = now - window
    expired = _c.window_start <= cut
    stmt = (
        insert_for(session, logins_t)
        .values(scope=scope, subject=subject, failures=1, window_start=now, lockouts=0, updated_at=now)
        .on_conflict_do_update(  # type: ignore[attr-defined]
            index_elements=["scope", "subject"],
            set_={
                "failures": case((expired, 1), else_=_c.failures + 1),
                "window_start": case((expired, _at(now)), else_=_c.window_start),
                "updated_at": now,
            },
            where=and_(_unlocked(now), or_(_c.failures < limit, expired)),
        )
    )
    result = await session.execute(stmt)
    return bool(cast(Any, result).rowcount)


async def refund(session: AsyncSession, *, scope: Scope, subject: str) -> None:
    """Take back an attempt `reserve` counted that was no failure (the right password, or refused by
    the other scope's limit)."""
    await session.execute(
        update(logins_t).where(_row(scope, subject), _c.failures > 0).values(failures=_c.failures - 1)
    )


async def clear(session: AsyncSession, *, scope: Scope, subject: str) -> None:
    """Forget `subject` altogether: its count, a lock, the streak (a user who logged in)."""
    await session.execute(logins_t.delete().where(_row(scope, subject)))


async def record_failure(
    session: AsyncSession,
    *,
    scope: Scope,
    subject: str,
    limit: int,
    window: timedelta,
    lockout: timedelta,
    lockout_max: timedelta,
    now: datetime,
) -> datetime | None:
    """After a failed attempt `reserve` counted: lock `subject` if its count is at `limit`. Returns the
    lock's end when this failure started a lock, else None: parallel failures at
    the limit lock once, the first one's update making the others' conditions false. The first lock of
    a streak lasts `lockout`, each next one twice the last, up to `lockout_max`; the count starts again
    from zero when the lock ends."""
    until = now + lockout
    locked = await session.execute(
        update(logins_t)
        .where(_row(scope, subject), _c.failures >= limit, _c.window_start > now - window, _unlocked(now))
        .values(
            lockouts=case(
                (and_(_c.locked_until.is_not(None), _c.locked_until > now - STREAK), _c.lockouts + 1), else_=1
            ),
            failures=0,
            window_start=until,
            locked_until=until,
            updated_at=now,
        )
        .returning(_c.lockouts)
    )
    streak = locked.scalar_one_or_none()
    if streak is None:
        return None
    if streak > 1:  # the same transaction, so the row stays as locked by the statement above meanwhile
        grown = lockout * 2 ** min(streak - 1, 20)
        until = now + min(grown, lockout_max)
        await session.execute(
            update(logins_t).where(_row(scope, subject)).values(window_start=until, locked_until=until)
        )
    return until


async def retry_after(session: AsyncSession, *, scope: Scope, subject: str, window: timedelta, now: datetime) -> int:
    """Whole seconds until `subject` may try again, for a `Retry-After` header (at least 1): the lock's
    end, or while the last attempts of a full window are still being checked, the window's end."""
    found = (await session.execute(select(_c.locked_until, _c.window_start).where(_row(scope, subject)))).first()
    if found is None:
        return 1
    locked_until: datetime | None = found.locked_until
    window_start: datetime = found.window_start
    until = locked_until if locked_until is not None and locked_until > now else window_start + window
    return max(1, math.ceil((until - now).total_seconds()))


async def prune_login_failures(session: AsyncSession, *, now: datetime) -> int:
    """Rows of subjects with no attempt for `STREAK` and no lock in force or ended within it."""
    cut = now - STREAK
    result = await session.execute(
        logins_t.delete().where(_c.updated_at < cut, or_(_c.locked_until.is_(None), _c.locked_until < cut))
    )
    return int(cast(Any, result).rowcount or 0)
