"""One engine pass, and what the passes hold between them (the live alerts, the incident records, the
learned aliases' claims, escalation chains, decisions waiting to be written) under the engine lease.

A pass reads what changed since the last one, evaluates it (`pipeline.evaluate`), and writes incidents,
notify state, decisions and the outbox in one transaction under the lease, so two replicas never decide
(or notify) the same thing twice; `engine.runner` says when a pass runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.engine.claims import Claims, Learning
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
from alertrouter.engine.gpus import with_gpu_history
from alertrouter.engine.lease import EngineLease
from alertrouter.engine.live import RECENT, LiveAlerts
from alertrouter.engine.mutes import Mutes, read_mutes
from alertrouter.engine.records import RecordBook
from alertrouter.engine.unwritable import raise_unwritable
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule
from alertrouter.metrics import Metrics
from alertrouter.pipeline import aliases
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.nodes import Discovered
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.types import (
    EvalResult,
    IncidentRecord,
    IncidentState,
    LiveAlert,
    RecordsAfter,
    record_changes,
)
from alertrouter.process.courtesy import Courtesy
from alertrouter.process.heap import freeze_held
from alertrouter.store import Database, is_outage
from alertrouter.store import incidents as store
from alertrouter.store import nodes as node_store
from alertrouter.store.reads_now import quick_reads

__all__ = ["Passes"]


@dataclass(slots=True)
class _Read:
    """What a pass read: the alerts that changed and the stored incident each was last decided under, the
    alerts let go, the silences and maintenance windows, what the node lookup found, and the incident records."""

    fresh: list[LiveAlert]
    placed_before: dict[str, str]
    evicted: list[str]
    mutes: Mutes
    discovered: Discovered | None
    records: dict[str, IncidentRecord]


class Passes:
    """The engine's passes on this replica; the caller (`EngineRunner`) never runs two at once."""

    def __init__(
        self,
        db: Database,
        pipeline: CompiledRules,
        metrics: Metrics | None,
        *,
        clock: Callable[[], datetime],
        lease: EngineLease,
        on_intents: Callable[[], None] | None,
        discovered: Callable[[], Discovered] | None,
        incremental: bool,
        full_every: timedelta,
        freeze_after_full: bool,
        freeze_growth: int,
        urgent_due_max: int,
        rma: Sequence[RmaRule] = DEFAULT_RULES,
    ) -> None:
        self._db = db
        self.rma = rma  # the rules a message's GPUs are told RMA candidates by (`engine.gpus`)
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
        self._on_intents = on_intents
        self.pipeline = pipeline
        self._metrics = metrics
        self._clock = clock
        self.lease = lease
        # Passes (and working out a big pass's decision changes) let the event loop in (`process.courtesy`).
        self._courtesy = Courtesy()
        self._evaluator = Evaluator(pipeline, courtesy=self._courtesy)
        # The live alerts and the incident records as stored, kept in step with what each pass reads and
        # writes (engine/live.py, engine/records.py).
        self.live = LiveAlerts()
        self._book = RecordBook()
        self._mutes = Mutes()
        # Learned node aliases as stored (None: read them at the next pass), the claims of the live
        # alerts, and when the next alias in force expires (a pass is due then, to re-key its alerts).
        self._claims = Claims(pipeline.nodes.learned_ttl, metrics)
        # Escalation chains of unacknowledged incidents, stepped under the lease (engine/escalation.py).
        self._escalator = Escalator(pipeline, metrics)
        self._escalated = EscalationWork()
        self._folded = False  # the last pass's transaction wrote its changed decisions (`fold_decisions`)
        self.pending = PendingDecisions()  # a storm's changed decisions, written after its pass
        self._last: EvalResult | None = None
        self.force = False  # someone asked for a pass that is not idle (`EngineRunner.nudge(force=True)`)
        self.wake_at: datetime | None = None

    def forget(self) -> None:
        """Lost (or never had) the lease: reload everything when it comes back."""
        self.live = LiveAlerts()
        self.pending = PendingDecisions()
        self._book = RecordBook()
        self._full_at = None
        self._mutes = Mutes()
        self._claims = Claims(self.pipeline.nodes.learned_ttl, self._metrics)
        self._discovered_seen = None
        self._last = None
        self.lease.doubt()
        self._evaluator = Evaluator(self.pipeline, courtesy=self._courtesy)
        self._escalator.forget()

    async def run(self, urgent: bool = False) -> tuple[EvalResult | None, bool | None]:
        """One pass: its result (None when another replica holds the lease) and whether it evaluated
        everything (None: it evaluated nothing, being idle or lease-less). `urgent`: see `EngineRunner.run_once`."""
        now = self._clock()
        read = await self._read(now)
        if not isinstance(read, _Read):
            return read, None
        # Learn from the live alerts' claims, and evaluate with what is in force after that: an alert
        # stored before the alias was learned is re-keyed in the very pass that learns it.
        # A move away from an alias in force waits for a second alert or the lookup (`Claims.written` logs it).
        learning = self._claims.learn(now, read.discovered)
        full = not self._incremental or self._full_at is None or now >= self._full_at
        result = await self._evaluate(read, learning, now, full=full, urgent=urgent)
        self._book.evaluated()
        if full:
            self._full_at = now + self._full_every
        if self._freeze_after_full and (full or len(self.live) >= self._frozen_live + self._freeze_growth):
            freeze_held()
            self._frozen_live = len(self.live)
        # A pass that decided more alerts than one chunk holds writes its decisions after its commit
        # (`PendingDecisions`): they are worked out after it too, so that what the pass intends to send
        # (a new critical alert's message among a storm's ten thousand decisions) goes out first.
        changes = self._decision_changes(result, now) if folds(result.decided) else None
        records = read.records
        if folds(result.evaluated):
            rewritten = record_changes(records, result)
        else:  # a full pass's every incident: building and comparing records takes long, beside the loop
            rewritten = await asyncio.to_thread(record_changes, records, result, courtesy=self._courtesy)
        after = RecordsAfter(records, rewritten)
        # Only the incidents whose record changed are written: `updated_at` is when one last changed.
        written = [result.incidents[k] for k, r in sorted(rewritten.written.items()) if r is not records.get(k)]
        if not await self._write(result, written, learning.learnt, now, after, changes):
            return None, None
        self._book.written(rewritten, [state.key for state in written], now)
        await self._committed(result, learning, read.discovered, changes, now)
        return result, full

    async def _read(self, now: datetime) -> _Read | EvalResult | None:
        """What changed since the last pass; an idle pass's result (the lease kept) when nothing did, or
        None when another replica holds the lease."""
        # Read and evaluate outside any write transaction (on SQLite that would stall ingest for the
        # whole pass); only the short final write takes the lease, and commits only while holding it.
        # An incremental pass's reads go outside the session (`store.reads_now`): on PostgreSQL the
        # session then opens no transaction at all, unless the lease must be read.
        async with self._db.read() as session, quick_reads(self._db) as quick:
            if await self.lease.held_by_other(session, now):
                self.lease.lost()
                self.forget()
                return None
            try:
                fresh, placed_before = await self.live.read(session, now, quick)
            except Exception as exc:
                if not is_outage(exc):
                    await self._find_unreadable(exc, now)
                raise
            mutes = await read_mutes(session, quick, now)
            discovered = self._discovered() if self._discovered is not None else None
            if self._idle(fresh, now) and mutes == self._mutes and discovered is self._discovered_seen:
                return await self._keep_lease(now)
            self._mutes = mutes
            if self._claims.book is None:  # first pass, or the lease was just taken: what the leader learned
                self._claims.book = await node_store.load_node_aliases(session)
            nodes = self.pipeline.nodes
            for live in fresh:
                if (seen := aliases.sighting(nodes, live)) is not None:
                    self._claims.claim(live.fingerprint, seen)
            evicted = self.live.evict(now, self.pending.previous(self.live.decisions))
            for fp in evicted:
                self._claims.claim(fp, None)
            records = await self._book.read(session, now, RECENT, self._evaluator.holds, quick)
        return _Read(fresh, placed_before, evicted, mutes, discovered, records)

    async def _evaluate(
        self, read: _Read, learning: Learning, now: datetime, *, full: bool, urgent: bool
    ) -> EvalResult:
        """Evaluate what was read; when that fails, raise `Poisoned` with the alerts that fail on their own."""
        # Pure CPU work: in a worker thread, so the event loop keeps answering webhooks during a big pass.
        try:
            return await asyncio.to_thread(
                self._evaluator.evaluate_changes,
                read.fresh,
                read.evicted,
                read.records,
                now=now,
                silences=read.mutes.silences,
                maintenance=read.mutes.windows,
                learned=learning.learned,
                placed_before=read.placed_before,
                discovered=read.discovered,
                full=full,
                records_changed=self._book.touched,
                # none left twice in a row (see `run_once`)
                due_max=self._urgent_due_max if urgent and not (self._last and self._last.deferred) else None,
            )
        except Exception as exc:
            alerts = list(self.live.alerts.values())
            culprits = await asyncio.to_thread(
                find_culprits, self.pipeline, alerts, read.records, now, read.mutes.silences
            )
            if culprits:
                raise Poisoned(culprits) from exc
            raise

    async def _write(
        self,
        result: EvalResult,
        written: Sequence[IncidentState],
        learnt: Sequence[aliases.LearnedAlias],
        now: datetime,
        after: Mapping[str, IncidentRecord],
        changes: DecisionChanges | None,
    ) -> bool:
        """Commit the pass under the lease (`_persist`); False if another replica holds it. A write refused
        on its values raises `Poisoned` with the alerts of the items refused alone."""
        try:
            return await self._under_lease(
                now, lambda session: self._persist(session, result, written, learnt, now, after, changes)
            )
        except Exception as exc:
            if is_outage(exc):
                raise
            self._escalated = EscalationWork()  # the work of a write that did not commit
            await raise_unwritable(exc, self._db, result, written, learnt, now, self._evaluator.alerts_of)
            raise

    async def _committed(
        self,
        result: EvalResult,
        learning: Learning,
        discovered: Discovered | None,
        changes: DecisionChanges | None,
        now: datetime,
    ) -> None:
        """After the pass's commit: hand its intents to delivery, keep what it wrote, and work out (or
        keep for later) the decisions it changed."""
        self._escalator.committed(self._escalated)
        # A chain started or stepped on a storm's incident is a trail event per alert: in the pass's
        # transaction they held the SQLite write lock, and the webhooks behind it, as a storm's decisions
        # did. Not held either until the next pass that writes (8 MiB at 108,000 live alerts).
        self.pending.add_trail(self._escalated.events)
        self._escalated = EscalationWork()
        if result.intents and self._on_intents is not None:
            self._on_intents()  # committed: the delivery loop can take them now, while decisions are written
        self._claims.written(learning, now)
        self._discovered_seen = discovered
        if changes is None:
            # A full pass decides every live alert again (comparing each with what is stored takes long,
            # which the event loop would wait out): beside it, pausing as the evaluation does.
            # The pass lock keeps everything it reads as it is meanwhile (the handoff from ingest goes elsewhere).
            changes = await asyncio.to_thread(self._decision_changes, result, now, self._courtesy)
        if self._folded:
            self.pending.supersede(changes.stored)
            self.live.decisions.update(changes.stored)
        else:
            self.pending.add(changes)  # written by `EngineRunner` after the pass
        if self._metrics is not None:
            for rule, count in changes.inhibited.items():
                self._metrics.inhibited.labels(rule=rule).inc(count)
            for reason, count in changes.stale.items():
                self._metrics.stale.labels(reason=reason).inc(count)
        self._last = result
        self.force = False
        self.lease.taken()
        self.wake_at = result.wake_at
        for due in (self._claims.expiry, self._escalator.wake_at):
            if due is not None and (self.wake_at is None or due < self.wake_at):
                self.wake_at = due

    async def _find_unreadable(self, exc: Exception, now: datetime) -> None:
        """After a read of the live alerts failed: raise `Poisoned` with the rows that cannot be read
        alone, if that is what failed (a fresh session: the failed one may be unusable)."""
        async with self._db.read() as session:
            bad = await store.unreadable_alerts(session, resolved_since=now - RECENT)
        if bad:
            raise Poisoned(bad) from exc

    def _idle(self, changed: list[LiveAlert], now: datetime) -> bool:
        """Nothing to decide: no alert changed since what we hold, no timer is due, and no one asked for
        a full pass (`nudge(force=True)`)."""
        if self._last is None or self.force or (self.wake_at is not None and now >= self.wake_at):
            return False
        if self._claims.expiry is not None and now >= self._claims.expiry:
            return False
        return not changed

    async def _keep_lease(self, now: datetime) -> EvalResult | None:
        """An idle pass: renew the lease when it gets old, decide nothing."""
        assert self._last is not None
        if self.lease.renewal_due(now) and not await self._under_lease(now, None):
            return None
        return EvalResult(decisions=self._last.decisions, incidents=self._last.incidents, wake_at=self._last.wake_at)

    async def _under_lease(self, now: datetime, work: Callable[[AsyncSession], Awaitable[None]] | None) -> bool:
        """Take or renew the lease and do `work` in the same transaction; False (nothing written, and
        everything held forgotten) if another replica holds it."""
        if await self.lease.under(now, work):
            return True
        self.forget()
        return False

    def _decision_changes(
        self, result: EvalResult, now: datetime, courtesy: Callable[[], None] | None = None
    ) -> DecisionChanges:
        return decision_changes(
            result,
            result.decided,
            now,
            previous=self.pending.previous(self.live.decisions),
            alerts=self.live.alerts,
            node_of=self.node_of,
            rekeyed=self._evaluator.rekeyed,
            courtesy=courtesy,
        )

    def node_of(self, fingerprint: str) -> str | None:
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
        alerts_of = alerts_index(self._evaluator.alerts_of, self.live.alerts)
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
        follow_ons = self.pipeline.follow_ons
        repeats = follow_ons.triage if follow_ons.enabled else None
        result.intents = await with_gpu_history(session, result.intents, self.rma, repeats)
        await store.insert_intents(session, result.intents, now)
        self._folded = changes is not None and await fold_decisions(session, changes)
