"""Runs engine passes inside `serve`: after ingests and on timers, on the replica that holds the lease.

Here: when a pass runs (nudges, timers, the ingest cadence), the decisions written after it, the
quarantine of alerts that fail on their own, the pass's metrics and the loop's supervision. What one
pass reads, decides and writes under the lease, and what the passes hold between them, is
`engine.passes`; a restart picks up from the store where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from alertrouter.engine.cadence import INGEST_QUIET, Cadence, after_ingest_burst, firing, hold_back
from alertrouter.engine.decisions import Poisoned
from alertrouter.engine.jobs import JobWatch
from alertrouter.engine.lease import EngineLease
from alertrouter.engine.passes import Passes
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule
from alertrouter.metrics import Metrics
from alertrouter.model import utcnow
from alertrouter.pipeline.nodes import Discovered
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.types import Decision, EvalResult, LiveAlert
from alertrouter.process.loops import LoopHealth
from alertrouter.store import STORE_ERRORS, Database, describe_error, is_outage
from alertrouter.store import incidents as store
from alertrouter.store.jobs import HitChange
from alertrouter.store.leases import new_holder

__all__ = ["EngineRunner"]

# What may leave waiting decisions unwritten at shutdown: the store, or one alert's row.
UNWRITTEN: tuple[type[Exception], ...] = (*STORE_ERRORS, Poisoned)

log = logging.getLogger(__name__)

LOOP_NAME = "engine"  # its name in LoopHealth and the loop metrics
STOP_GRACE = timedelta(seconds=10)
QUARANTINE_ROUNDS = 5  # a pass is retried after quarantining at most this often, then fails as it may
FULL_EVERY = timedelta(minutes=10)  # a full pass this often, whatever changed: the incremental ones' safety net
# live alerts more than at the last freeze of what the process holds (`heap.freeze_held`): freeze again
FREEZE_GROWTH = 10_000
# A newly firing alert's pass leaves the wake-ups that have come to the pass right behind it (`Cadence.due`)
# when there are more than this many (a storm's hold-downs ending together, its repeats).
URGENT_DUE_MAX = 64


class EngineRunner:
    def __init__(
        self,
        db: Database,
        pipeline: CompiledRules,
        metrics: Metrics | None = None,
        *,
        clock: Callable[[], datetime] = utcnow,
        interval: timedelta = timedelta(seconds=1),
        min_gap: timedelta = timedelta(milliseconds=50),
        lease_ttl: timedelta = timedelta(seconds=15),
        holder: str | None = None,
        on_intents: Callable[[], None] | None = None,
        ingest_quiet: Callable[[], float] | None = None,
        loops: LoopHealth | None = None,
        discovered: Callable[[], Discovered] | None = None,
        incremental: bool = True,
        full_every: timedelta = FULL_EVERY,
        freeze_after_full: bool = False,
        freeze_growth: int = FREEZE_GROWTH,
        urgent_due_max: int = URGENT_DUE_MAX,
        rma: Sequence[RmaRule] = DEFAULT_RULES,
        jobs: JobWatch | None = None,
    ) -> None:
        self._db = db
        self._loops = loops or LoopHealth(metrics)
        self._metrics = metrics
        self._clock = clock
        self._interval = interval
        self._cadence = Cadence(interval=interval.total_seconds(), min_gap=min_gap.total_seconds(), quiet=INGEST_QUIET)
        # One pass, and what the passes hold between them (engine/passes.py).
        self._passes = Passes(
            db,
            pipeline,
            metrics,
            clock=clock,
            lease=EngineLease(db, holder=holder or new_holder(), ttl=lease_ttl, metrics=metrics),
            on_intents=on_intents,
            discovered=discovered,
            incremental=incremental,
            full_every=full_every,
            freeze_after_full=freeze_after_full,
            freeze_growth=freeze_growth,
            urgent_due_max=urgent_due_max,
            rma=rma,
        )
        # The jobs the live alerts hit, kept in `job_hits` after each pass (engine/jobs.py); None: no `jobs:` rules.
        self._jobs = jobs
        self._on_intents = on_intents
        self.job_changes: list[HitChange] | None = None  # what the last pass's jobs step changed
        self._nudged = asyncio.Event()
        self._pass_lock = asyncio.Lock()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        # Seconds since this process's ingest last stored a payload (0 while it is storing one).
        self.ingest_quiet = ingest_quiet

    @property
    def holder(self) -> str:
        """This replica's name in the engine lease."""
        return self._passes.lease.holder

    @property
    def pipeline(self) -> CompiledRules:
        """The rules the passes decide by."""
        return self._passes.pipeline

    @property
    def wake_at(self) -> datetime | None:
        """When a timer of the last pass (a hold-down ending, a repeat, an alias expiring) wants the next."""
        return self._passes.wake_at

    @property
    def passing(self) -> bool:
        """A pass is running (or waiting for its write)."""
        return self._pass_lock.locked()

    def live_alerts(self) -> dict[str, LiveAlert]:
        """The alerts the last pass looked at (a copy)."""
        return dict(self._passes.live.alerts)

    def committed(self, inserted: Sequence[Mapping[str, Any]]) -> None:
        """This process's ingest committed a change, with these new alert rows: hand them over (the next
        pass takes them instead of reading them back) and look soon; at once if one of them is firing (see
        `engine.cadence`)."""
        if inserted:
            self._passes.live.inserted(inserted)
        self._cadence.committed(new_firing=firing(inserted))
        self.nudge()

    def nudge(self, *, force: bool = False) -> None:
        """Something was stored: run a pass soon rather than at the next tick. `force` for changes the
        engine cannot see in the alerts (an acknowledgement, a silence)."""
        self._passes.force = self._passes.force or force
        self._nudged.set()

    async def run_once(self, *, urgent: bool = False) -> EvalResult | None:
        """One pass; None when another replica holds the lease. Passes of this runner never overlap
        (the loop and a direct caller would otherwise both write the same decision changes).

        `urgent`: the pass is for a newly firing alert, which someone waits for. When more than
        `urgent_due_max` wake-ups have come, it takes none of them: a thousand node incidents whose
        hold-down ends together are hundreds of milliseconds of evaluation, and that alert's message
        would wait for them. It is decided as if it had come just before they were due, which it
        would have been had the pass for them not been waiting for the engine's tick. They stay due
        (`EvalResult.deferred`), and the loop's next pass takes them all as soon as the cadence lets a
        newly firing alert's pass start; that pass takes them even if it is urgent too, so a stream
        of newly firing alerts never holds wake-ups back for more than one pass."""
        async with self._pass_lock:
            for _ in range(QUARANTINE_ROUNDS):
                try:
                    return await self._pass_and_write(urgent)
                except Poisoned as poisoned:
                    await self._quarantine(poisoned.errors)
            return await self._pass_and_write(urgent)

    async def _pass_and_write(self, urgent: bool) -> EvalResult | None:
        """A pass, then the decisions waiting to be written (a storm's, of this pass or an earlier one),
        until a newly firing alert stored since the pass started is waiting for a pass: that one goes
        first, and writes the rest after it."""
        started = time.perf_counter()
        cadence = self._cadence
        before = cadence.firing_commits
        result, full = await self._passes.run(urgent)
        if result is None:
            return None
        if self._jobs is not None and (full is not None or self._jobs.pods_changed()):
            self.job_changes = await self._jobs.step(
                self._passes.live.alerts, self._passes.node_of, result.decisions, self._passes.lease, self._clock()
            )
            if self._jobs.intents and self._on_intents is not None:
                self._on_intents()
            if self._metrics is not None and self.job_changes is not None:
                self._metrics.jobs_hit.set(self._jobs.hit_now)
        if full is not None:
            cadence.due = result.deferred
        passes = self._passes
        await passes.pending.drain(self._db, passes.live.written, until=lambda: cadence.firing_commits != before)
        if full is not None:
            # The pass's figure includes the decisions written after it (all of them, unless a newly
            # firing alert's pass took the rest), as it did when it wrote them itself.
            self._observe(result, time.perf_counter() - started, full=full)
        return result

    async def _quarantine(self, errors: Mapping[str, str]) -> None:
        """Leave alerts that failed on their own out of every later pass, and start again from the
        store (the failed pass may have left the evaluator half-updated)."""
        now = self._clock()
        async with self._db.write() as session:
            await store.quarantine_alerts(session, errors, now)
            await session.commit()
        for fp, error in errors.items():
            log.error("alert %s quarantined: processing it failed on its own: %s", fp, error)
        if self._metrics is not None:
            self._metrics.loop_errors.labels(loop=LOOP_NAME).inc()
        self._passes.forget()

    def _observe(self, result: EvalResult, seconds: float, *, full: bool) -> None:
        m = self._metrics
        if m is None:
            return
        m.engine_pass.observe(seconds)
        m.engine_passes.labels(scope="full" if full else "incremental").inc()
        m.engine_evaluated.inc(len(result.evaluated))
        for intent in result.intents:
            m.intended.labels(receiver=intent.receiver, reason=intent.reason.value).inc()
        for name in Decision:
            m.decisions.labels(decision=name.value).set(result.counts.get(name.value, 0))
        m.alerts_stale.set(result.counts.get(Decision.STALE.value, 0))

    def _is_stopping(self) -> bool:
        return self._stopping

    async def _loop(self) -> None:
        """A pass every `interval`, or sooner when nudged or a timer is due: at once for a newly firing
        alert, else never two passes closer than `interval` apart, so that during an ingest burst one
        pass covers many webhooks (`engine.cadence` says when)."""
        cadence = self._cadence
        while not self._stopping:
            timeout = self._interval.total_seconds()
            if self.wake_at is not None:
                timeout = min(timeout, max(0.0, (self.wake_at - self._clock()).total_seconds()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudged.wait(), timeout)
            woke = time.monotonic()
            await hold_back(cadence, self._nudged, stopping=self._is_stopping)
            held = time.monotonic()
            if self.ingest_quiet is not None:
                await after_ingest_burst(cadence, self.ingest_quiet, stopping=self._is_stopping)
            self._nudged.clear()
            if self._stopping:
                break
            paused = time.monotonic()
            urgent = cadence.start()
            try:
                result = await self.run_once(urgent=urgent)
            except STORE_ERRORS as exc:
                if is_outage(exc):
                    log.warning("engine pass failed, will retry: %s", describe_error(exc))
                else:  # refused on values no single item was found to cause: counted, and seen by /readyz
                    self._loops.failed(LOOP_NAME, exc)
                self._passes.forget()  # the transaction rolled back; what we remembered may not have been stored
            except Exception as exc:  # supervised: a bug must never end the engine (nothing would be decided)
                self._loops.failed(LOOP_NAME, exc)
                self._passes.forget()
            else:
                self._loops.passed(LOOP_NAME)
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "engine pass%s: held back %.1f ms by the cadence, %.1f ms for ingest to pause; "
                        "took %.1f ms, %d intents%s",
                        " (new firing alert)" if urgent else "",
                        (held - woke) * 1000,
                        (paused - held) * 1000,
                        (time.monotonic() - paused) * 1000,
                        len(result.intents) if result is not None else 0,
                        "; the wake-ups that had come left for the next pass"
                        if result is not None and result.deferred
                        else "",
                    )
            finally:
                cadence.end()

    def start(self) -> None:
        self._loops.register(LOOP_NAME, interval=self._interval.total_seconds())
        self._task = asyncio.create_task(self._loop(), name="alertrouter-engine")

    async def stop(self) -> None:
        """Let a pass in flight finish (cancelling it mid-transaction would strand its connection)."""
        if self._task is None:
            return
        self._stopping = True
        self._nudged.set()
        try:
            await asyncio.wait_for(self._task, STOP_GRACE.total_seconds())
        except TimeoutError:
            log.warning("engine pass still running at shutdown after %s; abandoned", STOP_GRACE)
        else:
            await self._write_pending()
        await self._passes.lease.release(self._clock())  # another replica takes over at its next pass

    async def _write_pending(self) -> None:
        """At shutdown, the decisions a newly firing alert's pass left waiting (else the next leader works
        them out again: they are derived, and only their trail events would be later)."""
        passes = self._passes
        if not passes.pending or not passes.lease.leader:
            return
        try:
            await passes.pending.drain(self._db, passes.live.written)
        except UNWRITTEN as exc:
            log.warning("decisions left unwritten at shutdown (the next pass writes them): %s", describe_error(exc))
