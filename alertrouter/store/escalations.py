"""The escalation chains: started, stepped and stopped by the engine's leader; read by the console,
the API, the metrics and the digest. Functions never commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.pipeline.escalation import Chain, Stop
from alertrouter.store import bulk
from alertrouter.store.handles import incidents_t
from alertrouter.store.tables import EscalationRow

__all__ = [
    "EscalationView",
    "acknowledgers",
    "count_active",
    "load_active",
    "load_escalation",
    "paged",
    "running",
    "save_step",
    "start_chains",
    "step_counts",
    "stop_chain",
]

escalations_t = cast(Table, EscalationRow.__table__)


def _chain(row: EscalationRow) -> Chain:
    return Chain(row.incident_key, row.policy, row.started_at, row.next_step, row.next_at, row.stopped)


async def load_active(session: AsyncSession) -> dict[str, Chain]:
    """Chains not stopped: the engine's memory of them after it takes the lease."""
    rows = (await session.scalars(select(EscalationRow).where(EscalationRow.stopped.is_(None)))).all()
    return {r.incident_key: _chain(r) for r in rows}


async def start_chains(session: AsyncSession, chains: Sequence[Chain], steps: Mapping[str, int], now: datetime) -> None:
    """A new chain per incident (`steps`: policy -> its step count); an earlier occurrence's chain of the
    same incident stays as it ended, so the digest counts both. One still running (the engine would not
    start another: a safety net) is ended as `superseded`."""
    if not chains:
        return
    keys = [c.incident for c in chains]
    for chunk in bulk.slices(keys):
        await session.execute(
            update(escalations_t)
            .where(escalations_t.c.incident_key.in_(chunk), escalations_t.c.stopped.is_(None))
            .values(next_at=None, stopped=Stop.SUPERSEDED.value, stopped_at=now, updated_at=now)
        )
    await session.execute(
        escalations_t.insert(),
        [
            {
                "incident_key": c.incident,
                "policy": c.policy,
                "started_at": c.started_at,
                "next_step": c.next_step,
                "steps": steps[c.policy],
                "next_at": c.next_at,
                "stopped": None,
                "stopped_at": None,
                "stopped_by": None,
                "history": [{"event": "started", "at": now.isoformat()}],
                "updated_at": now,
            }
            for c in chains
        ],
    )


async def _history(session: AsyncSession, key: str) -> list[dict[str, Any]]:
    found = await session.scalar(
        select(escalations_t.c.history).where(escalations_t.c.incident_key == key, escalations_t.c.stopped.is_(None))
    )
    return list(found or [])


async def save_step(
    session: AsyncSession, before: Chain, after: Chain, entry: Mapping[str, Any], now: datetime
) -> bool:
    """Record that `before`'s next step was taken (`after` is the chain now). Conditional on the stored
    chain still being at that step, so a step is recorded once; False if it was not (taken already)."""
    history = [*await _history(session, before.incident), dict(entry)]
    done = await session.execute(
        update(escalations_t)
        .where(
            escalations_t.c.incident_key == before.incident,
            escalations_t.c.next_step == before.next_step,
            escalations_t.c.stopped.is_(None),
        )
        .values(
            next_step=after.next_step,
            next_at=after.next_at,
            stopped=after.stopped,
            stopped_at=now if after.stopped else None,
            history=history,
            updated_at=now,
        )
    )
    return bool(getattr(done, "rowcount", 0))


async def stop_chain(session: AsyncSession, key: str, reason: str, by: str | None, now: datetime) -> None:
    history = [*await _history(session, key), {"event": reason, "at": now.isoformat(), "by": by}]
    await session.execute(
        update(escalations_t)
        .where(escalations_t.c.incident_key == key, escalations_t.c.stopped.is_(None))
        .values(next_at=None, stopped=reason, stopped_at=now, stopped_by=by, history=history, updated_at=now)
    )


async def paged(session: AsyncSession, since: Mapping[str, datetime]) -> dict[str, list[str]]:
    """Incident key -> the receivers its chain's steps paged, in the order of the steps (each once), for
    the chain started at or after `since[key]` (the incident's current occurrence; the last such chain)."""
    out: dict[str, list[str]] = {}
    for chunk in bulk.slices(sorted(since)):
        rows = await session.execute(
            select(escalations_t.c.incident_key, escalations_t.c.started_at, escalations_t.c.history)
            .where(escalations_t.c.incident_key.in_(chunk))
            .order_by(escalations_t.c.id)
        )
        for key, started_at, history in rows:
            if started_at < since[key]:
                continue
            steps = [e for e in history or [] if isinstance(e, dict) and e.get("event") == "step"]
            out[key] = list(dict.fromkeys(str(r) for e in steps for r in e.get("receivers") or []))
    return out


async def acknowledgers(session: AsyncSession, keys: Sequence[str]) -> dict[str, str]:
    """Incident key -> who acknowledged it, for the keys acknowledged now (read in the writing
    transaction: an acknowledgement from any replica a moment ago stops a step about to be taken)."""
    out: dict[str, str] = {}
    for chunk in bulk.slices(keys):
        rows = await session.execute(
            select(incidents_t.c.key, incidents_t.c.acknowledged_by).where(
                incidents_t.c.key.in_(chunk), incidents_t.c.acknowledged_at.is_not(None)
            )
        )
        out.update((k, by or "") for k, by in rows)
    return out


@dataclass(frozen=True, slots=True)
class EscalationView:
    """An incident's chain as the console and the API show it."""

    policy: str
    started_at: datetime
    next_step: int
    steps: int
    next_at: datetime | None
    stopped: str | None
    stopped_at: datetime | None
    stopped_by: str | None
    history: list[dict[str, Any]]


async def load_escalation(session: AsyncSession, key: str) -> EscalationView | None:
    """The incident's latest chain."""
    stmt = (
        select(EscalationRow)
        .where(EscalationRow.incident_key == key)
        .order_by(EscalationRow.started_at.desc(), EscalationRow.id.desc())
        .limit(1)
    )
    row = (await session.scalars(stmt)).first()
    if row is None:
        return None
    return EscalationView(
        row.policy,
        row.started_at,
        row.next_step,
        row.steps,
        row.next_at,
        row.stopped,
        row.stopped_at,
        row.stopped_by,
        list(row.history or []),
    )


async def running(session: AsyncSession, limit: int = 200) -> list[EscalationRow]:
    """Chains not stopped, the next step due first."""
    stmt = select(EscalationRow).where(EscalationRow.stopped.is_(None)).order_by(EscalationRow.next_at).limit(limit)
    return list((await session.scalars(stmt)).all())


async def count_active(session: AsyncSession) -> int:
    return int(
        await session.scalar(select(func.count()).select_from(escalations_t).where(escalations_t.c.stopped.is_(None)))
        or 0
    )


async def step_counts(session: AsyncSession, *, since: datetime, until: datetime) -> dict[int, int]:
    """Step -> how many incidents whose chain started in [since, until) reached it: 0 counts the chains
    started (an unacknowledged critical incident's first message), 1 the first step taken, and so on."""
    rows = await session.execute(
        select(escalations_t.c.next_step, func.count())
        .where(escalations_t.c.started_at >= since, escalations_t.c.started_at < until)
        .group_by(escalations_t.c.next_step)
    )
    reached: dict[int, int] = {}
    for taken, count in rows:
        for step in range(int(taken) + 1):
            reached[step] = reached.get(step, 0) + int(count)
    return dict(sorted(reached.items()))
