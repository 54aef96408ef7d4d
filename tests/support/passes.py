"""What the engine runner tests share: a clock the test moves, a table's rows, passes over simulated time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from alertrouter.engine.runner import EngineRunner
from alertrouter.store import Database

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


class Clock:
    """The runner's clock: `clock.now += 5 * S` moves it."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


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
