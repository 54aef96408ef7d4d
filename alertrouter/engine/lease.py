"""The engine's lease as this replica holds it: taken or renewed in the transaction of the work it
guards, read only when it may have gone elsewhere, given up at shutdown."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.metrics import Metrics
from alertrouter.store import STORE_ERRORS, Database, describe_error, leases

__all__ = ["LEASE", "EngineLease"]

log = logging.getLogger(__name__)

LEASE = "engine"


class EngineLease:
    """One row of `leases` (`engine`), held by at most one replica until it runs out (`ttl`): the one
    that holds it decides and notifies, so two replicas never notify the same thing twice."""

    def __init__(self, db: Database, *, holder: str, ttl: timedelta, metrics: Metrics | None = None) -> None:
        self._db = db
        self.holder = holder
        self.ttl = ttl
        self._metrics = metrics
        self.leader = False  # this replica holds it, as far as it knows
        self._renewed: datetime | None = None

    def fresh(self, now: datetime) -> bool:
        """Renewed here less than a third of its time ago: no other replica can hold it (it runs out only
        at the end of that time), so a pass need not read it before its work. The write at the end renews
        it with the same conditional update as ever, and commits only if it is still held."""
        renewed = self._renewed
        return self.leader and renewed is not None and timedelta(0) <= now - renewed < self.ttl / 3

    def renewal_due(self, now: datetime) -> bool:
        """A third of its time has passed since it was renewed here (or it never was)."""
        return self._renewed is None or now - self._renewed >= self.ttl / 3

    async def held_by_other(self, session: AsyncSession, now: datetime) -> bool:
        """Another replica holds it; not read while it is `fresh` here."""
        if self.fresh(now):
            return False
        return await leases.lease_held_by_other(session, name=LEASE, holder=self.holder, now=now)

    async def under(self, now: datetime, work: Callable[[AsyncSession], Awaitable[None]] | None) -> bool:
        """Take or renew it and do `work` in the same transaction; False (nothing written, and `lost`)
        if another replica holds it."""
        async with self._db.write() as session:
            if not await leases.hold_lease(session, name=LEASE, holder=self.holder, now=now, until=now + self.ttl):
                await session.rollback()
                self.lost()
                return False
            if work is not None:
                await work(session)
            await session.commit()
        self._renewed = now
        return True

    def taken(self) -> None:
        """A pass committed under it: say so the first time (and on the metric)."""
        if self.leader:
            return
        log.info("engine lease taken by %s", self.holder)
        self.leader = True
        if self._metrics is not None:
            self._metrics.engine_leader.set(1)

    def lost(self) -> None:
        """Another replica holds it."""
        if self.leader:
            log.info("engine lease lost to another replica")
        self.leader = False
        self._renewed = None
        if self._metrics is not None:
            self._metrics.engine_leader.set(0)

    def doubt(self) -> None:
        """What happened to it is unknown (a pass failed, its transaction rolled back): read it again
        before the next pass's work."""
        self._renewed = None

    async def release(self, now: datetime) -> None:
        """Give it up at shutdown, so that another replica takes over at its next pass (a rolling
        update), not once it has run out; a failure here only means that wait."""
        if not self.leader:
            return
        try:
            async with self._db.write() as session:
                await leases.release_lease(session, name=LEASE, holder=self.holder, now=now)
                await session.commit()
        except STORE_ERRORS as exc:
            log.warning("could not release the engine lease: %s", describe_error(exc))
        self.leader = False
        if self._metrics is not None:
            self._metrics.engine_leader.set(0)
