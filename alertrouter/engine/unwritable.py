"""After a pass's write failed on its values: which of its items the store refuses alone, so that their
alerts are quarantined and the rest of the pass commits, instead of every later pass failing the same way.

Each learned alias, and each incident with what its receivers were told and its messages, is written
alone under a savepoint of one transaction that is rolled back at the end: nothing here is kept. An
alias refused alone quarantines the alert that taught it; an incident refused alone, every alert
decided under it (a storm's too: its incident cannot be told otherwise).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.engine.decisions import Poisoned
from alertrouter.pipeline import aliases
from alertrouter.pipeline.types import EvalResult, IncidentState
from alertrouter.store import Database, describe_error, is_outage
from alertrouter.store import incidents as store
from alertrouter.store import nodes as node_store

__all__ = ["Unwritable", "find_unwritable", "raise_unwritable"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Unwritable:
    """One item the store refused alone: what it was, and the alerts to quarantine for it."""

    item: str
    error: str
    fingerprints: tuple[str, ...]


async def _refused(session: AsyncSession, write: Callable[[], Awaitable[None]]) -> str | None:
    """The store's refusal of `write()` under a savepoint, or None; an outage is raised."""
    try:
        async with session.begin_nested():
            await write()
    except Exception as exc:
        if is_outage(exc):
            raise
        return f"{type(exc).__name__}: {describe_error(exc)}"[:500]  # the driver's line, not the statement
    return None


async def raise_unwritable(
    exc: Exception,
    db: Database,
    result: EvalResult,
    written: Sequence[IncidentState],
    learnt: Sequence[aliases.LearnedAlias],
    now: datetime,
    alerts_of: Callable[[str], Sequence[str]],
) -> None:
    """After the pass's write was refused on its values (`exc`): raise `Poisoned` with the alerts of the items
    refused alone (logged here once, with the store's traceback), so the rest commits without them; return
    when no item is refused alone."""
    found = await find_unwritable(db, result, written, learnt, now, alerts_of)
    culprits = {fp: f"{u.item} refused by the store: {u.error}" for u in found for fp in u.fingerprints}
    if not culprits:
        return
    for u in found:
        log.error("%s refused by the store; its %d alert(s) quarantined", u.item, len(u.fingerprints), exc_info=exc)
    raise Poisoned(culprits) from exc


async def find_unwritable(
    db: Database,
    result: EvalResult,
    written: Sequence[IncidentState],
    learnt: Sequence[aliases.LearnedAlias],
    now: datetime,
    alerts_of: Callable[[str], Sequence[str]],
) -> list[Unwritable]:
    """The items of a failed pass's write that the store refuses on their own (none: not a value's fault)."""
    found: list[Unwritable] = []
    reasons = result.notify_reasons()
    async with db.write() as session:
        for alias in learnt:
            error = await _refused(session, functools.partial(node_store.save_node_aliases, session, [alias]))
            if error is not None:
                found.append(Unwritable(f"node alias {alias.address!r}", error, (alias.fingerprint,)))
        for state in written:
            error = await _refused(session, functools.partial(_incident, session, state, result, reasons, now))
            if error is not None:
                found.append(Unwritable(f"incident {state.key!r}", error, tuple(alerts_of(state.key))))
        await session.rollback()
    return found


async def _incident(
    session: AsyncSession,
    state: IncidentState,
    result: EvalResult,
    reasons: Mapping[tuple[str, str], str],
    now: datetime,
) -> None:
    """An incident as the pass writes it: its row, what each receiver was told, its messages."""
    await store.save_incidents(session, [state], now)
    told = {k: s for k, s in result.notify_states.items() if k[0] == state.key}
    await store.save_notify_states(session, told, {k: reasons[k] for k in told})
    await store.insert_intents(session, [i for i in result.intents if i.incident == state.key], now)
