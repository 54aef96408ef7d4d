"""Scheduled jobs inside `serve` (APScheduler 3, asyncio): weekly digests and hourly housekeeping.

Every job run first takes or renews the `scheduler` lease, so one replica (the leader) does the
work; then it claims its period in `scheduled_runs`, so even two replicas that both believe they
lead (a lease that expired mid-run) cannot both send one digest. A tick every minute, first run at
start, sends any digest whose send time has passed and that is not done: the catch-up after
downtime (only the latest due week, once, and never a week that ended before the store was first used:
a fresh install sends no empty digest), and the retry of a failed or crashed run. APScheduler's
own misfire handling is off (`misfire_grace_time=None`, `coalesce=True`): the store, not the
scheduler's memory, says what was done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from alertrouter.digest.period import due_period, week_bounds
from alertrouter.digest.send import DigestRunner, DigestTarget
from alertrouter.metrics import Metrics
from alertrouter.model import RunResult, RunStatus, utcnow
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.process.loops import LoopHealth
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.schedule import DAYS
from alertrouter.settings import Settings
from alertrouter.store import STORE_ERRORS, Database, describe_error, retention
from alertrouter.store.leases import hold_lease, new_holder, release_lease
from alertrouter.store.runs import claim_run, finish_run, installed_at

__all__ = ["LEASE", "Scheduler", "build_scheduler"]

log = logging.getLogger(__name__)

LEASE = "scheduler"
HOUSEKEEPING = "housekeeping"
STOP_GRACE = timedelta(seconds=10)
LOOP = "scheduler"  # its name in LoopHealth and the loop metrics


class Scheduler:
    def __init__(
        self,
        db: Database,
        digests: DigestRunner,
        *,
        metrics: Metrics | None = None,
        history_retention: timedelta = timedelta(days=90),
        learned_alias_ttl: timedelta = timedelta(days=7),
        clock: Callable[[], datetime] = utcnow,
        holder: str | None = None,
        tick: timedelta = timedelta(minutes=1),
        housekeeping_every: timedelta = timedelta(hours=1),
        loops: LoopHealth | None = None,
    ) -> None:
        self._db = db
        self._loops = loops or LoopHealth(metrics)
        self.digests = digests
        self._metrics = metrics
        self._retention = history_retention
        self._alias_ttl = learned_alias_ttl
        self._clock = clock
        self.holder = holder or new_holder()
        self._tick = tick
        self._lease_ttl = tick * 3
        self._housekeeping_every = housekeeping_every
        self._scheduler: AsyncIOScheduler | None = None
        self._inflight: set[asyncio.Task[Any]] = set()
        self._leader = False
        self.ticked = asyncio.Event()  # set after each tick (tests wait for the catch-up with it)
        self._installed: datetime | None = None  # when the first scheduler ran on this store
        self._before_install: set[tuple[str, str]] = set()  # (job, week) skipped and said so

    def start(self) -> None:
        """Add the jobs and start; must be called with the event loop running."""
        if logging.getLogger().getEffectiveLevel() >= logging.INFO:  # APScheduler logs every run at INFO
            logging.getLogger("apscheduler").setLevel(logging.WARNING)
        self._loops.register(LOOP, interval=self._tick.total_seconds())
        scheduler = AsyncIOScheduler(timezone=UTC)
        defaults: dict[str, Any] = {"misfire_grace_time": None, "coalesce": True, "max_instances": 1}
        now = datetime.now(UTC)
        for target in self.digests.targets.values():
            s = target.schedule
            trigger = CronTrigger(day_of_week=DAYS[s.weekday], hour=s.hour, minute=s.minute, timezone=target.tz)
            scheduler.add_job(self._guarded, trigger, args=[self._digest_job, target], id=target.job, **defaults)
            log.info("digest %s scheduled %s %s, via %s", target.receiver, s, target.tz.key, target.channel_name)
        scheduler.add_job(
            self._guarded,
            IntervalTrigger(seconds=self._tick.total_seconds()),
            args=[self.tick],
            id="tick",
            next_run_time=now,
            **defaults,
        )
        scheduler.add_job(
            self._guarded,
            IntervalTrigger(seconds=self._housekeeping_every.total_seconds()),
            args=[self.housekeeping],
            id=HOUSEKEEPING,
            next_run_time=now + self._tick,
            **defaults,
        )
        scheduler.start()
        self._scheduler = scheduler

    def next_runs(self) -> dict[str, datetime]:
        """Job id -> next run time (UTC), while started."""
        if self._scheduler is None:
            return {}
        return {job.id: job.next_run_time for job in self._scheduler.get_jobs() if job.next_run_time is not None}

    async def stop(self) -> None:
        """No new runs; a run in flight gets a grace period (its claim expires if it is cut short)."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        if self._inflight:
            _, late = await asyncio.wait(set(self._inflight), timeout=STOP_GRACE.total_seconds())
            for task in late:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*late, return_exceptions=True)
        if self._leader:
            try:
                async with self._db.write() as session:
                    await release_lease(session, name=LEASE, holder=self.holder, now=self._clock())
                    await session.commit()
            except STORE_ERRORS as exc:
                log.warning("could not release the scheduler lease: %s", describe_error(exc))
            self._leader = False

    async def _guarded(self, job: Callable[..., Awaitable[None]], *args: Any) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            await job(*args)
        except STORE_ERRORS as exc:
            log.warning("scheduled job failed, will retry: %s", describe_error(exc))
        except Exception as exc:  # supervised: the job runs again at its next time
            self._loops.failed(LOOP, exc, what=f"job {getattr(job, '__name__', job)}")
        else:
            self._loops.passed(LOOP)
        finally:
            if task is not None:
                self._inflight.discard(task)

    def _count(self, job: str, result: RunResult) -> None:
        if self._metrics is not None:
            self._metrics.scheduled_runs.labels(job=job, result=result).inc()

    async def lead(self) -> bool:
        """Take or renew the scheduler lease; False (and nothing to do) while another replica has it."""
        now = self._clock()
        async with self._db.write() as session:
            held = await hold_lease(session, name=LEASE, holder=self.holder, now=now, until=now + self._lease_ttl)
            await session.commit()
        if held != self._leader:
            log.info("scheduler lease %s by %s", "taken" if held else "lost", self.holder)
            self._leader = held
        if self._metrics is not None:
            self._metrics.scheduler_leader.set(1 if held else 0)
        return held

    async def tick(self) -> None:
        """Leader only: every digest whose latest due week is not done is run now (catch-up, retries)."""
        try:
            if await self.lead():
                for target in self.digests.targets.values():
                    await self.run_due(target)
        finally:
            self.ticked.set()

    async def _digest_job(self, target: DigestTarget) -> None:
        if await self.lead():
            await self.run_due(target)
        else:
            self._count(target.job, RunResult.NOT_LEADER)

    async def run_due(self, target: DigestTarget) -> None:
        period = due_period(self._clock(), target.schedule, target.tz)
        if not await self.digests.pending(target, period):
            return
        installed = await self._installed_at()
        if week_bounds(period, target.tz)[1] <= installed:
            # A new install (or a new store) has nothing to say about a week that was over before it
            # started: the first digest is the first week it saw.
            if (target.job, period) not in self._before_install:
                self._before_install.add((target.job, period))
                log.info("digest %s: week %s ended before this store was first used, not sent", target.receiver, period)
            return
        log.info("digest %s: week %s is due, running", target.receiver, period)
        outcome = await self.digests.run(target, period)
        self._count(target.job, outcome.result)

    async def _installed_at(self) -> datetime:
        if self._installed is None:
            async with self._db.write() as session:
                self._installed = await installed_at(session, holder=self.holder, now=self._clock())
                await session.commit()
        return self._installed

    async def housekeeping(self) -> None:
        """Leader only, once per hour whatever the replicas: the history's retention (`store/retention.py`)."""
        if not await self.lead():
            return
        now = self._clock()
        period = now.strftime("%Y-%m-%dT%H")
        async with self._db.write() as session:
            claimed = await claim_run(
                session,
                job=HOUSEKEEPING,
                period=period,
                holder=self.holder,
                now=now,
                until=now + timedelta(minutes=30),
                max_attempts=3,
            )
            await session.commit()
        if not claimed:
            self._count(HOUSEKEEPING, RunResult.CLAIMED)
            return
        before = now - self._retention
        events = await retention.prune_events(self._db, before=before)
        async with self._db.write() as session:
            rest = await retention.prune_rest(session, before=before, now=now, aliases_before=now - self._alias_ttl)
            pruned = {"alert_events": events, **rest}
            await finish_run(
                session,
                job=HOUSEKEEPING,
                period=period,
                holder=self.holder,
                now=now,
                status=RunStatus.DONE,
                detail=pruned,
            )
            await session.commit()
        self._count(HOUSEKEEPING, RunResult.DONE)
        if any(pruned.values()):
            log.info("housekeeping: pruned %s", ", ".join(f"{n} {name}" for name, n in pruned.items() if n))


def build_scheduler(
    settings: Settings,
    ruleset: Ruleset,
    db: Database,
    pipeline: CompiledRules,
    metrics: Metrics,
    loops: LoopHealth | None = None,
) -> Scheduler | None:
    """The scheduler `serve` runs, or None with ALERTROUTER_SCHEDULER=false."""
    if not settings.scheduler:
        return None
    holder = new_holder()
    digests = DigestRunner(db, ruleset, pipeline, templates=Templates(settings.templates_dir), holder=holder)
    return Scheduler(
        db,
        digests,
        metrics=metrics,
        history_retention=settings.history_retention,
        learned_alias_ttl=pipeline.nodes.learned_ttl,
        holder=holder,
        loops=loops,
    )
