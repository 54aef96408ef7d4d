"""Jobs hit by alerts (`job_hits`): the engine's writes after its passes, the API's and the digest's reads.
Never commits.

`save_hits` turns the jobs hit now (by job key: what names each and its figures, `IDENTITY` and `FIGURES`,
made by `engine.jobs` from `jobs.impact.JobImpact`) into row changes against the open rows: a job not open
opens a row; an open one whose figures changed is updated (its GPU-seconds summed up to now at the GPUs it
had lost); an open one no longer hit is resolved. It returns what changed, which the engine tells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import NAME_MAX
from alertrouter.store.tables.jobs import NOTE_MAX, JobHitRow

__all__ = ["FIGURES", "IDENTITY", "HitChange", "JobWeekFact", "open_hits", "recent_hits", "save_hits", "week_hits"]

IDENTITY = ("namespace", "name", "source", "detail", "note")  # set when a row opens
FIGURES = (
    "nodes",
    "nodes_down",
    "incidents",
    "node_count",
    "down_count",
    "gpus_lost",
    "alerts",
    "job_nodes",
    "since",
    "cause",
)


@dataclass(frozen=True, slots=True)
class JobWeekFact:
    """One episode of a job hit, as the weekly digest reads it: its GPU-seconds lost up to `updated_at`,
    and `gpus_lost` since then while it is open."""

    key: str
    cause: str
    opened_at: datetime
    updated_at: datetime
    resolved_at: datetime | None
    gpus_lost: int
    gpu_seconds: float


@dataclass(frozen=True, slots=True)
class HitChange:
    """`kind`: opened, updated (more or fewer of its nodes hit) or resolved; `row` as it is now; `grew`: an
    update that lost more GPUs than it ever had."""

    kind: Literal["opened", "updated", "resolved"]
    row: JobHitRow
    grew: bool = False


def _key(row: JobHitRow) -> str:
    return f"{row.namespace}/{row.name}" if row.namespace else row.name


async def open_hits(session: AsyncSession) -> dict[str, JobHitRow]:
    """The jobs hit now, by job key (the oldest row of a key, should two be open)."""
    rows = (
        await session.scalars(select(JobHitRow).where(JobHitRow.resolved_at.is_(None)).order_by(JobHitRow.id))
    ).all()
    out: dict[str, JobHitRow] = {}
    for row in rows:
        out.setdefault(_key(row), row)
    return out


def _lost_since(row: JobHitRow, now: datetime) -> float:
    return row.gpus_lost * max(0.0, (now - row.updated_at).total_seconds())


async def save_hits(session: AsyncSession, impacts: Mapping[str, Mapping[str, Any]], now: datetime) -> list[HitChange]:
    """Open, update and resolve rows so the open ones are `impacts` (job key -> `IDENTITY` and `FIGURES`
    values); what changed, in job key order."""
    current = await open_hits(session)
    changes: list[HitChange] = []
    for key in sorted(set(current) | set(impacts)):
        row, impact = current.get(key), impacts.get(key)
        if row is None and impact is not None:
            row = JobHitRow(
                **{name: impact[name] for name in (*IDENTITY, *FIGURES)},
                opened_at=now,
                updated_at=now,
                resolved_at=None,
                peak_gpus_lost=impact["gpus_lost"],
                gpu_seconds=0.0,
            )
            row.detail, row.note = row.detail[:NAME_MAX], row.note[:NOTE_MAX]  # a configured label name may be long
            session.add(row)
            changes.append(HitChange("opened", row))
        elif row is not None and impact is None:
            values: dict[str, object] = {"resolved_at": now, "updated_at": now}
            values["gpu_seconds"] = row.gpu_seconds + _lost_since(row, now)
            await session.execute(update(JobHitRow).where(JobHitRow.id == row.id).values(values))
            changes.append(HitChange("resolved", _with(row, values)))
        elif row is not None and impact is not None:
            figures = {name: impact[name] for name in FIGURES}
            if all(getattr(row, name) == value for name, value in figures.items()):
                continue
            values = {**figures, "updated_at": now, "gpu_seconds": row.gpu_seconds + _lost_since(row, now)}
            grew = impact["gpus_lost"] > row.peak_gpus_lost  # read before the UPDATE, which sets the session's row
            values["peak_gpus_lost"] = max(row.peak_gpus_lost, impact["gpus_lost"])
            await session.execute(update(JobHitRow).where(JobHitRow.id == row.id).values(values))
            changes.append(HitChange("updated", _with(row, values), grew))
    await session.flush()
    return changes


def _with(row: JobHitRow, values: Mapping[str, object]) -> JobHitRow:
    """`row` as written (a detached copy: the session's own is not refreshed from the UPDATE)."""
    fields = {c.key: getattr(row, c.key) for c in JobHitRow.__table__.columns}
    return JobHitRow(**{**fields, **values})


async def recent_hits(session: AsyncSession, since: datetime, limit: int = 500) -> Sequence[JobHitRow]:
    """The rows hit now or resolved since `since`, the open ones first, then the latest resolved."""
    stmt = (
        select(JobHitRow)
        .where(or_(JobHitRow.resolved_at.is_(None), JobHitRow.resolved_at >= since))
        .order_by(JobHitRow.resolved_at.is_not(None), JobHitRow.resolved_at.desc(), JobHitRow.since, JobHitRow.id)
        .limit(limit)
    )
    return (await session.scalars(stmt)).all()


async def week_hits(session: AsyncSession, start: datetime, end: datetime) -> list[JobWeekFact]:
    """The episodes open at some time in [start, end), oldest first."""
    stmt = (
        select(JobHitRow)
        .where(JobHitRow.opened_at < end, or_(JobHitRow.resolved_at.is_(None), JobHitRow.resolved_at >= start))
        .order_by(JobHitRow.opened_at, JobHitRow.id)
    )
    return [
        JobWeekFact(_key(r), r.cause, r.opened_at, r.updated_at, r.resolved_at, r.gpus_lost, r.gpu_seconds)
        for r in (await session.scalars(stmt)).all()
    ]
