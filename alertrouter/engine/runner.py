"""Runs engine passes inside `serve`: after ingests and on timers, on the replica that holds the lease.

One pass reads what changed since the last one, evaluates everything live, and writes incidents,
notify state, decisions and the outbox in one transaction under the lease, so two replicas never
decide (or notify) the same thing twice, and a restart picks up from the store where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.courtesy import Courtesy
from alertrouter.engine.cadence import INGEST_QUIET, Cadence, after_ingest_burst, firing, hold_back
from alertrouter.engine.claims import Claims
from alertrouter.engine.decisions import (
    DecisionChanges,
    PendingDecisions,
    Poisoned,
    decision_changes,
    find_culprits,
    fold_decisions,
    folds,
)
from alertrouter.engine.escalation import EscalationWork, Escalator, alerts_index, write_events
from alertrouter.engine.lease import EngineLease
from alertrouter.engine.live import RECENT, LiveAlerts
from alertrouter.engine.records import RecordBook
from alertrouter.engine.unwritable import find_unwritable
from alertrouter.heap import freeze_held
from alertrouter.loops import LoopHealth
from alertrouter.metrics import Metrics
from alertrouter.model import utcnow
from alertrouter.pipeline import aliases
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.nodes import Discovered
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import (
    Decision,
    EvalResult,
    IncidentRecord,
    IncidentState,
    LiveAlert,
    RecordsAfter,
    record_changes,
)
from alertrouter.store import STORE_ERRORS, Database, describe_error, is_outage
from alertrouter.store import incidents as store
from alertrouter.store import nodes as node_store
from alertrouter.store.leases import new_holder
from alertrouter.store.reads_now import quick_reads

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
    ) -> None:
        self._db = db
        self._urgent_due_max = urgent_due_max
        # Incremental passes evaluate what changed (`Evaluator.evaluate_changes`); a full one every
        # `full_every` is the safety net. `incremental=False`: every pass full (the tests' oracle).
        self._incremental = incremental
        self._full_every = full_every
        # `serve`: after each full pass, and after a pass that holds `freeze_growth` more live alerts than
        # the last freeze, what the process holds is frozen out of the cyclic garbage collector's sight
        # (`heap.freeze_held`): a load between two full passes (ten minutes) would otherwise be walked by
        # every full collection. Off by default: a test process would keep the cyclic garbage of every test.
        self._freeze_after_full = freeze_after_full
        self._freeze_growth = freeze_growth
        self._frozen_live = 0  # live alerts at the last freeze
        self._full_at: datetime | None = None
        # What the node lookup (topology.prometheus) found: read at every pass, a new snapshot makes
        # the pass a full one (the lookup nudges the engine when it has one).
        self._discovered = discovered
        self._discovered_seen: Discovered | None = None
        self._loops = loops or LoopHealth(metrics)
        self._on_intents = on_intents
        self.pipeline = pipeline
        self._metrics = metrics
        self._clock = clock
        self._interval = interval
        self._cadence = Cadence(interval=interval.total_seconds(), min_gap=min_gap.total_seconds(), quiet=INGEST_QUIET)
        self._lease = EngineLease(db, holder=holder or new_holder(), ttl=lease_ttl, metrics=metrics)
        # Passes run in a worker thread that lets the event loop in every 2 ms (`alertrouter.courtesy`), and so
        # does working out a big pass's decision changes.
        self._courtesy = Courtesy()
        self._evaluator = Evaluator(pipeline, courtesy=self._courtesy)
        # The live alerts and the incident records as stored, kept in step with what each pass reads and
        # writes (engine/live.py, engine/records.py).
        self._live = LiveAlerts()
        self._book = RecordBook()
        self._silences: list[Silence] = []
        # Learned node aliases as stored (None: read them at the next pass), the claims of the live
        # alerts, and when the next alias in force expires (a pass is due then, to re-key its alerts).
        self._claims = Claims(pipeline.nodes.learned_ttl, metrics)
        # Escalation chains of unacknowledged incidents, stepped under the lease (engine/escalation.py).
        self._escalator = Escalator(pipeline, metrics)
        self._escalated = EscalationWork()
        self._folded = False  # the last pass's transaction wrote its changed decisions (`fold_decisions`)
        self._pending = PendingDecisions()  # a storm's changed decisions, written after its pass
        self._evaluated: bool | None = None  # the last `_pass` evaluated: whether it was a full one
        self._nudged = asyncio.Event()
        self._pass_lock = asyncio.Lock()
        self._stopping = False
        self._last: EvalResult | None = None
        self._force = False
        self._task: asyncio.Task[None] | None = None
        self.wake_at: datetime | None = None
        # Seconds since this process's ingest last stored a payload (0 while it is storing one).
        self.ingest_quiet = ingest_quiet

    @property
    def holder(self) -> str:
        """This replica's name in the engine lease."""
        return self._lease.holder

    @property
    def passing(self) -> bool:
        """A pass is running (or waiting for its write)."""
        return self._pass_lock.locked()

    def live_alerts(self) -> dict[str, LiveAlert]:
        """The alerts the last pass looked at (a copy)."""
        return dict(self._live.alerts)

    def committed(self, inserted: Sequence[Mapping[str, Any]]) -> None:
        """This process's ingest committed a change, with these new alert rows: hand them over (the next
        pass takes them instead of reading them back) and look soon; at once if one of them is firing (see
        `engine.cadence`)."""
        if inserted:
            self._live.inserted(inserted)
        self._cadence.committed(new_firing=firing(inserted))
        self.nudge()

    def nudge(self, *, force: bool = False) -> None:
        """Something was stored: run a pass soon rather than at the next tick. `force` for changes the
        engine cannot see in the alerts (an acknowledgement, a silence)."""
        self._force = self._force or force
        self._nudged.set()

    def _forget(self) -> None:
        """Lost (or never had) the lease: reload everything when it comes back."""
        self._live = LiveAlerts()
        self._pending = PendingDecisions()
        self._book = RecordBook()
        self._full_at = None
        self._silences = []
        self._claims = Claims(self.pipeline.nodes.learned_ttl, self._metrics)
        self._discovered_seen = None
        self._last = None
        self._lease.doubt()
        self._evaluator = Evaluator(self.pipeline, courtesy=self._courtesy)
        self._escalator.forget()

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
        self._evaluated = None
        cadence = self._cadence
        before = cadence.firing_commits
        result = await self._pass(urgent)
        if result is None:
            return None
        await self._pending.drain(self._db, self._live.written, until=lambda: cadence.firing_commits != before)
        if self._evaluated is not None:
            # The pass's figure includes the decisions written after it (all of them, unless a newly
            # firing alert's pass took the rest), as it did when it wrote them itself.
            self._observe(result, time.perf_counter() - started, full=self._evaluated)
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
        self._forget()

    async def _pass(self, urgent: bool = False) -> EvalResult | None:
        now = self._clock()
        # Read and evaluate outside any write transaction (on SQLite that would stall ingest for the
        # whole pass); only the short final write takes the lease, and commits only while holding it.
        # An incremental pass's reads go outside the session (`store.reads_now`): on PostgreSQL the
        # session then opens no transaction at all, unless the lease must be read.
        async with self._db.read() as session, quick_reads(self._db) as quick:
            if await self._lease.held_by_other(session, now):
                self._lost()
                return None
            try:
                fresh, placed_before = await self._live.read(session, now, quick)
            except Exception as exc:
                if not is_outage(exc):
                    await self._find_unreadable(exc, now)
                raise
            silences = await quick.silences(now=now)
            if silences is None:
                silences = await store.load_silences(session, now=now)
            discovered = self._discovered() if self._discovered is not None else None
            if self._idle(fresh, now) and silences == self._silences and discovered is self._discovered_seen:
                return await self._keep_lease(now)
            self._silences = silences
            if self._claims.book is None:  # first pass, or the lease was just taken: what the leader learned
                self._claims.book = await node_store.load_node_aliases(session)
            nodes = self.pipeline.nodes
            for live in fresh:
                if (seen := aliases.sighting(nodes, live)) is not None:
                    self._claims.claim(live.fingerprint, seen)
            evicted = self._live.evict(now, self._pending.previous(self._live.decisions))
            for fp in evicted:
                self._claims.claim(fp, None)
            records = await self._book.read(session, now, RECENT, self._evaluator.holds, quick)
        # Learn from the live alerts' claims, and evaluate with what is in force after that: an alert
        # stored before the alias was learned is re-keyed in the very pass that learns it.
        # A move away from an alias in force waits for a second alert or the lookup (`Claims.written` logs it).
        learning = self._claims.learn(now, discovered)
        learnt = learning.learnt
        # Pure CPU work: in a worker thread, so the event loop keeps answering webhooks during a big pass.
        full = not self._incremental or self._full_at is None or now >= self._full_at
        try:
            result = await asyncio.to_thread(
                self._evaluator.evaluate_changes,
                fresh,
                evicted,
                records,
                now=now,
                silences=silences,
                learned=learning.learned,
                placed_before=placed_before,
                discovered=discovered,
                full=full,
                records_changed=self._book.touched,
                # none left twice in a row (see `run_once`)
                due_max=self._urgent_due_max if urgent and not (self._last and self._last.deferred) else None,
            )
        except Exception as exc:
            alerts = list(self._live.alerts.values())
            culprits = await asyncio.to_thread(find_culprits, self.pipeline, alerts, records, now, silences)
            if culprits:
                raise Poisoned(culprits) from exc
            raise
        self._book.evaluated()
        if full:
            self._full_at = now + self._full_every
        if self._freeze_after_full and (full or len(self._live) >= self._frozen_live + self._freeze_growth):
            freeze_held()
            self._frozen_live = len(self._live)
        # A pass that decided more alerts than one chunk holds writes its decisions after its commit
        # (`PendingDecisions`): they are worked out after it too, so that what the pass intends to send
        # (a new critical alert's message among a storm's ten thousand decisions) goes out first.
        changes = self._decision_changes(result, now) if folds(result.decided) else None
        if folds(result.evaluated):
            rewritten = record_changes(records, result)
        else:  # a full pass's 30,000 incidents: 70 ms of building and comparing records, beside the loop
            rewritten = await asyncio.to_thread(record_changes, records, result, courtesy=self._courtesy)
        after = RecordsAfter(records, rewritten)
        # Only the incidents whose record changed are written: `updated_at` is when one last changed.
        written = [result.incidents[k] for k, r in sorted(rewritten.written.items()) if r is not records.get(k)]
        try:
            if not await self._under_lease(
                now, lambda session: self._persist(session, result, written, learnt, now, after, changes)
            ):
                return None
        except Exception as exc:
            if is_outage(exc):
                raise
            await self._find_unwritable(exc, result, written, learnt, now)
            raise
        self._escalator.committed(self._escalated)
        # A chain started or stepped on a storm's incident is a trail event per alert: in the pass's
        # transaction they held the SQLite write lock, and the webhooks behind it, as a storm's decisions
        # did. Not held either until the next pass that writes (8 MiB at 108,000 live alerts).
        self._pending.add_trail(self._escalated.events)
        self._escalated = EscalationWork()
        self._book.written(rewritten, [state.key for state in written], now)
        if result.intents and self._on_intents is not None:
            self._on_intents()  # committed: the delivery loop can take them now, while decisions are written
        self._claims.written(learning, now)
        self._discovered_seen = discovered
        if changes is None:
            # A full pass decides every live alert again (108,000 of them: 280 ms to compare with what is
            # stored, which the event loop would wait out): beside it, pausing as the evaluation does.
            # The pass lock keeps everything it reads as it is meanwhile (the handoff from ingest goes elsewhere).
            changes = await asyncio.to_thread(self._decision_changes, result, now, self._courtesy)
        if self._folded:
            self._pending.supersede(changes.stored)
            self._live.decisions.update(changes.stored)
        else:
            self._pending.add(changes)  # written by `_pass_and_write`
        if self._metrics is not None:
            for rule, count in changes.inhibited.items():
                self._metrics.inhibited.labels(rule=rule).inc(count)
            for reason, count in changes.stale.items():
                self._metrics.stale.labels(reason=reason).inc(count)
        self._last = result
        self._force = False
        self._lease.taken()
        self.wake_at = result.wake_at
        self._cadence.due = result.deferred
        for due in (self._claims.expiry, self._escalator.wake_at):
            if due is not None and (self.wake_at is None or due < self.wake_at):
                self.wake_at = due
        self._evaluated = full
        return result

    async def _find_unreadable(self, exc: Exception, now: datetime) -> None:
        """After a read of the live alerts failed: raise `Poisoned` with the rows that cannot be read
        alone, if that is what failed (a fresh session: the failed one may be unusable)."""
        async with self._db.read() as session:
            bad = await store.unreadable_alerts(session, resolved_since=now - RECENT)
        if bad:
            raise Poisoned(bad) from exc

    async def _find_unwritable(
        self,
        exc: Exception,
        result: EvalResult,
        written: Sequence[IncidentState],
        learnt: Sequence[aliases.LearnedAlias],
        now: datetime,
    ) -> None:
        """After the pass's write was refused on its values: raise `Poisoned` with the alerts of the items
        refused alone (logged here once, with the store's traceback), so the rest commits without them."""
        self._escalated = EscalationWork()  # the work of a write that did not commit
        found = await find_unwritable(self._db, result, written, learnt, now, self._evaluator.alerts_of)
        culprits = {fp: f"{u.item} refused by the store: {u.error}" for u in found for fp in u.fingerprints}
        if not culprits:
            return
        for u in found:
            log.error("%s refused by the store; its %d alert(s) quarantined", u.item, len(u.fingerprints), exc_info=exc)
        raise Poisoned(culprits) from exc

    def _idle(self, changed: list[LiveAlert], now: datetime) -> bool:
        """Nothing to decide: no alert changed since what we hold, no timer is due, and no one asked for
        a full pass (`nudge(force=True)`)."""
        if self._last is None or self._force or (self.wake_at is not None and now >= self.wake_at):
            return False
        if self._claims.expiry is not None and now >= self._claims.expiry:
            return False
        return not changed

    async def _keep_lease(self, now: datetime) -> EvalResult | None:
        """An idle pass: renew the lease when it gets old, decide nothing."""
        assert self._last is not None
        if self._lease.renewal_due(now) and not await self._under_lease(now, None):
            return None
        return EvalResult(decisions=self._last.decisions, incidents=self._last.incidents, wake_at=self._last.wake_at)

    async def _under_lease(self, now: datetime, work: Callable[[AsyncSession], Awaitable[None]] | None) -> bool:
        """Take or renew the lease and do `work` in the same transaction; False (nothing written, and
        everything held forgotten) if another replica holds it."""
        if await self._lease.under(now, work):
            return True
        self._forget()
        return False

    def _lost(self) -> None:
        self._lease.lost()
        self._forget()

    def _decision_changes(
        self, result: EvalResult, now: datetime, courtesy: Callable[[], None] | None = None
    ) -> DecisionChanges:
        return decision_changes(
            result,
            result.decided,
            now,
            previous=self._pending.previous(self._live.decisions),
            alerts=self._live.alerts,
            node_of=self._node_of,
            rekeyed=self._evaluator.rekeyed,
            courtesy=courtesy,
        )

    def _node_of(self, fingerprint: str) -> str | None:
        return self._evaluator.label_of(fingerprint, self.pipeline.nodes.label)

    async def _persist(
        self,
        session: AsyncSession,
        result: EvalResult,
        written: Sequence[IncidentState],
        learnt: Sequence[aliases.LearnedAlias],
        now: datetime,
        after: Mapping[str, IncidentRecord],
        changes: DecisionChanges | None,
    ) -> None:
        """What must commit under the lease: learned aliases, the incidents that changed (those whose
        alerts moved to a learned name first), what each receiver was told, the outbox; and the changed
        decisions when they are few (`engine.decisions.fold_decisions`; None: not worked out yet)."""
        await node_store.save_node_aliases(session, learnt)
        await store.move_incidents(session, result.moved, now)
        await store.save_incidents(session, written, now)
        await store.clear_acknowledgements(session, [s.key for s in written if s.opened_at == now])
        await store.save_notify_states(session, result.notify_states, result.notify_reasons())
        alerts_of = alerts_index(self._evaluator.alerts_of, self._live.alerts)
        self._escalated = await self._escalator.work(session, result, after, now, alerts_of)
        if self._escalated.intents:
            # Each after its incident's own: a node's recovery, which the engine puts before its GPUs', goes to
            # the receivers its chain paged before the GPUs' too.
            first, last = {i.incident: n for n, i in reversed(list(enumerate(result.intents)))}, len(result.intents)
            result.intents.extend(self._escalated.intents)
            result.intents.sort(key=lambda i: first.get(i.incident, last))
        if folds(self._escalated.events):  # else written after the commit, as a storm's decisions are
            await write_events(session, self._escalated)
            self._escalated.events = []
        await store.insert_intents(session, result.intents, now)
        self._folded = changes is not None and await fold_decisions(session, changes)

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
                self._forget()  # the transaction rolled back; what we remembered may not have been stored
            except Exception as exc:  # supervised: a bug must never end the engine (nothing would be decided)
                self._loops.failed(LOOP_NAME, exc)
                self._forget()
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
        await self._lease.release(self._clock())  # another replica takes over at its next pass

    async def _write_pending(self) -> None:
        """At shutdown, the decisions a newly firing alert's pass left waiting (else the next leader works
        them out again: they are derived, and only their trail events would be later)."""
        if not self._pending or not self._lease.leader:
            return
        try:
            await self._pending.drain(self._db, self._live.written)
        except UNWRITTEN as exc:
            log.warning("decisions left unwritten at shutdown (the next pass writes them): %s", describe_error(exc))
