"""Claims on scheduled runs (one row per job and period) and pruning of old history; never commits.

A claim is an INSERT that does nothing on conflict, or else a conditional UPDATE of a row that is
`failed` or crashed (`running` past `claimed_until`): whichever statement changes a row wins, so two
schedulers, even two that both believe they lead, cannot both run one period. `done` is final unless
forced. The caller commits the claim before doing the work, and marks the outcome afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import DeliveryStatus, OutboxStatus, RunStatus
from alertrouter.store.handles import deliveries_t, insert_for, outbox_t, runs_t
from alertrouter.store.tables import ScheduledRunRow

__all__ = ["INSTALLED", "claim_run", "finish_run", "get_run", "installed_at", "prune_history"]

INSTALLED = "installed"  # the job whose one row says when this store's first scheduler started


_OPEN_DELIVERY = (DeliveryStatus.PENDING, DeliveryStatus.SENDING)  # anything else is finished history


def _rowcount(result: Any) -> int:
    return int(cast(CursorResult[Any], result).rowcount)


async def claim_run(
    session: AsyncSession,
    *,
    job: str,
    period: str,
    holder: str,
    now: datetime,
    until: datetime,
    max_attempts: int,
    force: bool = False,
) -> bool:
    """Take the run of `job` for `period` until `until`; True if this holder now has it. A failed run
    is taken again once its `claimed_until` (the retry time) has passed, up to `max_attempts`;
    `force` also takes a `done` one (an operator's explicit resend)."""
    inserted = await session.execute(
        insert_for(session, runs_t)
        .values(
            job=job,
            period=period,
            status=RunStatus.RUNNING,
            holder=holder,
            claimed_until=until,
            attempts=1,
            started_at=now,
        )
        .on_conflict_do_nothing(index_elements=["job", "period"])  # type: ignore[attr-defined]
    )
    if _rowcount(inserted) == 1:
        return True
    c = runs_t.c
    retry = and_(c.status.in_((RunStatus.FAILED, RunStatus.RUNNING)), c.claimed_until < now, c.attempts < max_attempts)
    taken = await session.execute(
        update(runs_t)
        .where(c.job == job, c.period == period, or_(retry, c.status == RunStatus.DONE) if force else retry)
        .values(
            status=RunStatus.RUNNING,
            holder=holder,
            claimed_until=until,
            attempts=c.attempts + 1,
            started_at=now,
            finished_at=None,
            error=None,
        )
    )
    return _rowcount(taken) == 1


async def finish_run(
    session: AsyncSession,
    *,
    job: str,
    period: str,
    holder: str,
    now: datetime,
    status: RunStatus,
    detail: Mapping[str, Any],
    error: str | None = None,
    retry_at: datetime | None = None,
) -> bool:
    """Mark our run `done` or `failed` (retry after `retry_at`); False if the claim is no longer ours
    (it expired and another holder took the period over)."""
    c = runs_t.c
    result = await session.execute(
        update(runs_t)
        .where(c.job == job, c.period == period, c.holder == holder, c.status == RunStatus.RUNNING)
        .values(
            status=status,
            finished_at=now,
            error=error,
            detail=dict(detail),
            claimed_until=retry_at if retry_at is not None else now,
        )
    )
    return _rowcount(result) == 1


async def get_run(session: AsyncSession, *, job: str, period: str) -> ScheduledRunRow | None:
    return (
        await session.scalars(
            select(ScheduledRunRow).where(ScheduledRunRow.job == job, ScheduledRunRow.period == period)
        )
    ).first()


async def installed_at(session: AsyncSession, *, holder: str, now: datetime) -> datetime:
    """When the first scheduler ran on this store: recorded by the first call (`now`), read ever after."""
    await session.execute(
        insert_for(session, runs_t)
        .values(
            job=INSTALLED,
            period="-",
            status=RunStatus.DONE,
            holder=holder,
            claimed_until=now,
            attempts=1,
            started_at=now,
            finished_at=now,
        )
        .on_conflict_do_nothing(index_elements=["job", "period"])  # type: ignore[attr-defined]
    )
    c = runs_t.c
    at: datetime = (await session.execute(select(c.started_at).where(c.job == INSTALLED, c.period == "-"))).scalar_one()
    return at


async def prune_history(session: AsyncSession, *, before: datetime) -> dict[str, int]:
    """Delete the other history older than `before` (alert events go separately, in batches): finished
    deliveries (their attempts go with them), finished outbox rows and finished scheduled runs.
    Pending work is never pruned, nor the row that says when the store was installed."""
    counts = {
        "deliveries": await session.execute(
            delete(deliveries_t).where(deliveries_t.c.created_at < before, deliveries_t.c.status.notin_(_OPEN_DELIVERY))
        ),
        "outbox": await session.execute(
            delete(outbox_t).where(outbox_t.c.created_at < before, outbox_t.c.status != OutboxStatus.PENDING)
        ),
        "scheduled_runs": await session.execute(
            delete(runs_t).where(
                runs_t.c.started_at < before, runs_t.c.status != RunStatus.RUNNING, runs_t.c.job != INSTALLED
            )
        ),
    }
    return {name: _rowcount(result) for name, result in counts.items()}
