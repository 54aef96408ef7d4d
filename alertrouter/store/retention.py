"""Every retention rule in one place: what is pruned, after how long, and in what steps.

Two loops apply them: maintenance prunes the raw payload log hourly on every replica (cheap, and
each replica keeps the log it wrote bounded even without a scheduler); the scheduler's hourly
housekeeping prunes the history on the leader only. Backlogs (after an outage or a shorter
retention) go in transactions of their own, so neither holds the SQLite write lock for long.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store import Database, bulk
from alertrouter.store import alerts as store
from alertrouter.store.actions import prune_revoked_sessions, prune_used_tokens
from alertrouter.store.handles import events_t
from alertrouter.store.logins import prune_login_failures
from alertrouter.store.nodes import prune_node_aliases
from alertrouter.store.runs import prune_history

__all__ = ["EVENTS_CHUNK", "RAW_CHUNK", "prune_events", "prune_raw_log", "prune_rest"]

RAW_CHUNK = 1000  # raw payloads deleted per transaction
EVENTS_CHUNK = 5000  # history events deleted per transaction


async def prune_raw_log(db: Database, *, before: datetime) -> int:
    """Raw payloads received before `before` (`ALERTROUTER_RAW_EVENT_RETENTION`), the events' links to
    them cleared."""
    return await db.in_batches(lambda session, n: store.prune_raw_events(session, before, limit=n), RAW_CHUNK)


async def prune_events(db: Database, *, before: datetime) -> int:
    """Alert history events before `before` (`ALERTROUTER_HISTORY_RETENTION`): the biggest history table."""

    async def step(session: AsyncSession, n: int) -> int:
        return len(await bulk.delete_oldest(session, events_t.c.at, before, limit=n))

    return await db.in_batches(step, EVENTS_CHUNK)


async def prune_rest(
    session: AsyncSession, *, before: datetime, now: datetime, aliases_before: datetime
) -> dict[str, int]:
    """In the caller's transaction: the rest of the history before `before` (finished deliveries, outbox
    rows, scheduled runs), link nonces and session revocations that have expired by `now`, learned
    node aliases last seen before `aliases_before` (`topology.learned_alias_ttl` ago: ignored already),
    and the failed-login counts of names and addresses quiet for a day (`store.logins.STREAK`)."""
    pruned = await prune_history(session, before=before)
    pruned["used_tokens"] = await prune_used_tokens(session, now=now)
    pruned["revoked_sessions"] = await prune_revoked_sessions(session, now=now)
    pruned["node_aliases"] = await prune_node_aliases(session, before=aliases_before)
    pruned["login_failures"] = await prune_login_failures(session, now=now)
    return pruned
