"""What the engine runner tests share: a clock the test moves, a runner and an ingestor on a fresh SQLite
store, a table's rows, passes over simulated time, and a count of the passes a started runner's loop makes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.types import EvalResult
from alertrouter.store import Database
from alertrouter.store.migrate import upgrade
from support.scenario import shipped_pipeline

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


class Clock:
    """The runner's clock: `clock.now += 5 * S` moves it."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@asynccontextmanager
async def on_sqlite(path: Path, **runner: Any) -> AsyncIterator[tuple[Database, Clock, Ingestor, EngineRunner]]:
    """A migrated SQLite store at `path`, with an ingestor and a runner on the shipped rules (`runner`: more
    of its arguments), on one test clock."""
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url)
    db = Database(url)
    try:
        clock = Clock()
        yield (
            db,
            clock,
            Ingestor(db, TouchBuffer(), clock=clock),
            EngineRunner(db, shipped_pipeline(), clock=clock, **runner),
        )
    finally:
        await db.dispose()


async def rows(db: Database, model: type[Any]) -> list[Any]:
    async with db.read() as s:
        return list((await s.scalars(select(model))).all())


async def run_for(
    runner: EngineRunner, clock: Clock, duration: timedelta, every: timedelta = timedelta(seconds=5)
) -> None:
    """A pass every `every` of simulated time, for `duration`."""
    end = clock.now + duration
    while clock.now <= end:
        await runner.run_once()
        clock.now += every


class Passes:
    """Counts the passes a started runner's loop makes; `note`, if given, is called as each starts and
    what it returns kept in `notes`."""

    def __init__(self, runner: EngineRunner, note: Callable[[], object] | None = None) -> None:
        self.count = 0
        self.notes: list[object] = []
        self._note = note
        self._changed = asyncio.Condition()
        self._run_once = runner.run_once
        runner.run_once = self._counted  # type: ignore[method-assign]

    async def _counted(self, *, urgent: bool = False) -> EvalResult | None:
        async with self._changed:
            if self._note is not None:
                self.notes.append(self._note())
            self.count += 1
            self._changed.notify_all()
        return await self._run_once(urgent=urgent)

    async def wait(self, minimum: int = 1, limit: float = 10.0) -> None:
        async with asyncio.timeout(limit), self._changed:
            await self._changed.wait_for(lambda: self.count >= minimum)
