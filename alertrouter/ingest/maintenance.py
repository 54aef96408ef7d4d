"""The maintenance loop: flush the write-behind refreshes, expire alerts whose `endsAt` passed, and
apply the raw log's retention (`store/retention.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from alertrouter.ingest.touches import TouchBuffer
from alertrouter.model import utcnow
from alertrouter.process.loops import LoopHealth
from alertrouter.store import STORE_ERRORS, Database, retention
from alertrouter.store import alerts as store

__all__ = ["Maintenance"]

log = logging.getLogger(__name__)
LOOP = "maintenance"  # its name in LoopHealth and the loop metrics


class Maintenance:
    """A background loop in `serve`: flush refreshes, then expire, then prune (that order matters:
    an alert must get its pending `endsAt` extension before it is judged expired)."""

    def __init__(
        self,
        db: Database,
        touches: TouchBuffer,
        *,
        interval: timedelta,
        retention: timedelta,
        clock: Callable[[], datetime] = utcnow,
        on_expired: Callable[[int], None] | None = None,
        loops: LoopHealth | None = None,
    ) -> None:
        self._db = db
        self._loops = loops or LoopHealth()
        self.touches = touches
        self._interval = interval
        self._retention = retention
        self._clock = clock
        self._on_expired = on_expired
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._last_prune: datetime | None = None

    async def flush(self) -> None:
        seen, extended = self.touches.take()
        if not seen and not extended:
            return
        try:
            async with self._db.write() as session:
                await store.touch_alerts(session, seen, extended)
                await session.commit()
        except BaseException:
            self.touches.put_back(seen, extended)
            raise

    async def run_once(self) -> None:
        await self.flush()
        now = self._clock()
        async with self._db.write() as session:
            expired = await store.expire_alerts(session, now)
            await session.commit()
        if expired:
            log.info("resolved %d alerts whose endsAt passed without a refresh", len(expired))
            if self._on_expired:
                self._on_expired(len(expired))
        if self._last_prune is None or now - self._last_prune >= timedelta(hours=1):
            before = now - self._retention
            pruned = await retention.prune_raw_log(self._db, before=before)
            self._last_prune = now
            if pruned:
                log.info("pruned %d raw events older than the retention", pruned)

    async def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._interval.total_seconds())
            if self._stop.is_set():
                break
            try:
                await self.run_once()
            except STORE_ERRORS as exc:
                log.warning("maintenance pass failed, will retry: %s", exc)
            except Exception as exc:  # supervised: the next pass tries again
                self._loops.failed(LOOP, exc)
            else:
                self._loops.passed(LOOP)

    def start(self) -> None:
        self._loops.register(LOOP, interval=self._interval.total_seconds())
        self._task = asyncio.create_task(self._loop(), name="alertrouter-maintenance")

    async def stop(self) -> None:
        if self._task is not None:
            self._stop.set()  # a pass in flight finishes: cancelling it mid-transaction strands its connection
            await self._task
        try:
            await self.flush()
        except STORE_ERRORS as exc:
            log.warning("could not flush %d pending refreshes on shutdown: %s", len(self.touches), exc)
