"""The ingest writer: plans every alert's transition (`ingest/plan.py`) for a group of payloads and
commits them together, answering each caller only once its payload is committed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.ingest.activity import IngestActivity
from alertrouter.ingest.batch import IngestBatch, IngestResult, body_digest
from alertrouter.ingest.gpus import GpuRecorder
from alertrouter.ingest.plan import Plan, plan_alerts, plan_group, raw_row
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.model import utcnow
from alertrouter.store import Database, describe_error, is_outage
from alertrouter.store import alerts as store
from alertrouter.store.gpus import record_gpus

__all__ = ["Ingestor"]

log = logging.getLogger(__name__)


GROUP_WAIT = 0.010  # seconds a single writer waits for a fuller group (see Ingestor._gather)
RECENT_GROUPS = 8  # the commits whose sizes say what a full group is ...
RECENT_GROUP_AGE = 1.0  # ... if they are at most this many seconds old
FRESH_PAUSE = 1.0  # seconds without trying new alerts on their own after a try found stored ones


class _InsertRace(Exception):
    """Another transaction inserted one of our new fingerprints first; redo with its row locked."""


class Ingestor:
    """Stores batches so that a 2xx is only ever answered for committed data.

    Identical payloads committed by this process (Alertmanager re-sends every group each
    `group_interval`) are recognised by digest and cost no database round trip at all.

    Group commit: payloads that arrive while a transaction is being written wait and go together
    into the next one (in arrival order, up to `max_group_alerts`), so a burst of webhooks costs one
    fsync and one round of statements instead of one each. Every caller still gets its own result,
    and only after the commit that holds its payload.

    On SQLite one writer drains the queue (the database has one writer anyway); under concurrent
    load it waits up to `group_wait` for a group as full as the recent ones. On PostgreSQL up to
    `writers` transactions run at once, so one group is planned while another waits for its
    commit; row locks taken in fingerprint order keep them apart, and the transitions are
    order-robust (a firing copy of an alert already resolved by its sender is stale, whichever
    commits first).
    """

    def __init__(
        self,
        db: Database,
        touches: TouchBuffer,
        *,
        clock: Callable[[], datetime] = utcnow,
        recent_digests: int = 8192,
        known_fingerprints: int = 65536,
        max_group_alerts: int = 2000,
        writers: int | None = None,
        activity: IngestActivity | None = None,
        on_committed: Callable[[Sequence[Mapping[str, Any]]], None] | None = None,
        group_wait: float | None = None,
        gpus: GpuRecorder | None = None,
    ) -> None:
        self._db = db
        self._touches = touches
        # What a commit records about GPUs (`ingest.gpus`): the events of alerts naming a GPU's UUID.
        self._gpus = gpus if gpus is not None else GpuRecorder()
        self._clock = clock
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._recent_max = recent_digests
        # sha256 of a committed webhook's exact bytes -> (its digest, its fingerprints packed 8 bytes each)
        self._bodies: OrderedDict[bytes, tuple[str, bytes]] = OrderedDict()
        self._known: dict[str, None] = {}  # fingerprints this process found or put in the store
        self._known_max = known_fingerprints
        self._max_group = max_group_alerts
        self._max_writers = writers if writers is not None else (1 if db.is_sqlite else 4)
        self._pending: deque[tuple[IngestBatch, asyncio.Future[IngestResult]]] = deque()
        self._writers: set[asyncio.Task[None]] = set()
        # Told after each commit that wrote something, with the alert rows it inserted (the engine's handoff).
        self._on_committed = on_committed
        self.activity = activity or IngestActivity()
        self._recent_groups: deque[tuple[float, int]] = deque(maxlen=RECENT_GROUPS)  # (when, payloads)
        self._arrived = asyncio.Event()
        self._fresh_paused_until = 0.0  # time.monotonic(); see _may_be_fresh
        self._inserting: set[str] = set()  # the fingerprints of the one-statement inserts under way here
        # Only for a single writer: PostgreSQL's concurrent writers already overlap their commits.
        self.group_wait = group_wait if group_wait is not None else (GROUP_WAIT if self._max_writers == 1 else 0.0)

    def _seen_recently(self, digest: str) -> bool:
        if digest in self._recent:
            self._recent.move_to_end(digest)
            return True
        return False

    def _remember(self, digest: str) -> None:
        self._recent[digest] = None
        if len(self._recent) > self._recent_max:
            self._recent.popitem(last=False)

    def _remember_body(self, batch: IngestBatch) -> None:
        if batch.body_digest is None:
            return
        self._bodies[batch.body_digest] = (batch.digest, bytes.fromhex("".join(a.fingerprint for a in batch.alerts)))
        self._bodies.move_to_end(batch.body_digest)
        if len(self._bodies) > self._recent_max:
            self._bodies.popitem(last=False)

    def repeat_body(self, body: bytes, key: bytes | None = None) -> int | None:
        """A webhook whose exact bytes (`key`: their `body_digest`, if the caller has it) this process
        committed (or recognised) and still remembers: its alerts' `last_seen` is refreshed and their number returned,
        without parsing it again. None for anything else, which goes through `parse_webhook` and `ingest`
        (a repeat by digest is still recognised there).

        Alertmanager re-sends every group each `group_interval` byte for byte (the same alerts, times and
        order), and parsing was nine tenths of the cost of recognising one."""
        if not self._bodies:
            return None
        if key is None:
            key = body_digest(body)
        known = self._bodies.get(key)
        if known is None:
            return None
        digest, packed = known
        if not self._seen_recently(digest):
            del self._bodies[key]
            return None
        self._bodies.move_to_end(key)
        with self.activity.storing():
            hexed = packed.hex()
            self._touches.seen_many((hexed[i : i + 16] for i in range(0, len(hexed), 16)), self._clock())
        return len(packed) // 8

    def _know(self, batches: Sequence[IngestBatch]) -> None:
        known = self._known
        for batch in batches:
            for alert in batch.alerts:
                known[alert.fingerprint] = None
        while len(known) > self._known_max:
            del known[next(iter(known))]

    def quiet_for(self) -> float:
        """Seconds since a payload was last being stored here; 0 while one is."""
        return self.activity.quiet_for()

    async def ingest(self, batch: IngestBatch) -> IngestResult:
        with self.activity.storing():
            return await self._ingest(batch)

    async def _ingest(self, batch: IngestBatch) -> IngestResult:
        if batch.always_logged and self._seen_recently(batch.digest):
            self._touches.seen_many((a.fingerprint for a in batch.alerts), self._clock())
            self._remember_body(batch)  # e.g. the twin Alertmanager's copy (another externalURL)
            return IngestResult(repeat=True)
        # A push with an alert this process never stored nor found cannot be a mere confirmation:
        # straight to the writer, without the read (the writer's own read decides all the same).
        if (
            not batch.always_logged
            and all(a.fingerprint in self._known for a in batch.alerts)
            and (confirmed := await self._confirmed(batch)) is not None
        ):
            return confirmed
        future: asyncio.Future[IngestResult] = asyncio.get_running_loop().create_future()
        self._pending.append((batch, future))
        self._arrived.set()
        # A finished writer may not have run its done callbacks yet: count the running ones only.
        self._writers = {w for w in self._writers if not w.done()}
        if len(self._writers) < self._max_writers:
            self._writers.add(asyncio.create_task(self._drain(), name="alertrouter-ingest-writer"))
        return await future

    async def _confirmed(self, batch: IngestBatch) -> IngestResult | None:
        """The result of a payload that only confirms what is stored, found with a plain read outside the
        writer queue (`store.read_states`: on SQLite on the event loop itself, on PostgreSQL on the driver's
        connection); None when it changes something and must go through a transaction.

        Prometheus re-sends every firing alert each evaluation interval, and such a push changes at most
        `last_seen` and `endsAt` (batched by the touch buffer). Reading without the queue lets those
        pushes be answered concurrently and without a transaction. Deciding "nothing to write" against
        a state a concurrent commit is about to change is the same as having arrived just before it.
        """
        now = self._clock()
        states = await store.read_states(self._db, list({a.fingerprint for a in batch.alerts}))
        plan = Plan()
        plan_alerts(plan, states, batch.alerts, now)
        if any(kind.writes for kind in plan.transitions):
            return None
        self._touches.add(plan.seen, plan.extended)
        return IngestResult(transitions=plan.transitions)

    async def _gather(self) -> None:
        """Under concurrent load, wait a moment (at most `group_wait`) before a commit until as many
        payloads are queued as the largest commit of the last second held, as PostgreSQL's
        `commit_delay` does: the senders just answered are about to send again, and one commit for
        all of them costs one fsync and one round of statements instead of two.

        Without it, four busy senders fell into a rhythm of three payloads, then the one that had
        arrived meanwhile alone, then three again (the A/B is in tests/bench/results/history/ingest.md).
        A lone sender never waits."""
        now = time.monotonic()
        target = max((n for at, n in self._recent_groups if now - at <= RECENT_GROUP_AGE), default=0)
        if target < 2 or self.group_wait <= 0:
            return
        deadline = now + self.group_wait
        while len(self._pending) < target and (left := deadline - time.monotonic()) > 0:
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)

    async def _drain(self) -> None:
        while self._pending:
            await self._gather()
            group = [self._pending.popleft()]
            size = len(group[0][0].alerts)
            while self._pending and size + len(self._pending[0][0].alerts) <= self._max_group:
                size += len(self._pending[0][0].alerts)
                group.append(self._pending.popleft())
            self._recent_groups.append((time.monotonic(), len(group)))
            try:
                results = await self._commit([batch for batch, _ in group])
            except Exception as exc:
                if is_outage(exc):  # the store failed: every caller answers 503 and is retried
                    _settle(group, exc)
                elif len(group) == 1:
                    log.error("could not store a %s payload", group[0][0].source, exc_info=exc)
                    _settle(group, exc)
                else:  # one payload's own fault must not fail the others that shared its commit
                    await self._commit_alone(group)
                continue
            _settle(group, results)

    async def _commit_alone(self, group: list[tuple[IngestBatch, asyncio.Future[IngestResult]]]) -> None:
        """After a group commit failed for a reason other than the store: each payload in its own
        transaction, so only the one that caused it fails."""
        for batch, future in group:
            try:
                results = await self._commit([batch])
            except Exception as exc:
                if not is_outage(exc):
                    log.error("could not store a %s payload", batch.source, exc_info=exc)
                _settle([(batch, future)], exc)
            else:
                _settle([(batch, future)], results)

    async def _commit(self, batches: list[IngestBatch]) -> list[IngestResult]:
        now = self._clock()
        if self._may_be_fresh(batches) and (fresh := await self._commit_fresh(batches, now)) is not None:
            results, plan = fresh
            self._committed(batches, results, plan)
            return results
        for _attempt in range(3):
            try:
                async with self._db.write() as session:
                    results, plan = await self._apply(session, batches, now)
                    if any(r.written or r.raw_event_id is not None for r in results):
                        await session.commit()
                    else:
                        await session.rollback()
            except _InsertRace:
                continue
            self._committed(batches, results, plan)
            return results
        raise RuntimeError("gave up after repeated concurrent inserts of the same alerts")

    def _committed(self, batches: Sequence[IngestBatch], results: Sequence[IngestResult], plan: Plan) -> None:
        for batch in batches:
            if batch.always_logged:
                self._remember(batch.digest)
                self._remember_body(batch)
        self._know(batches)
        self._touches.add(plan.seen, plan.extended)
        if self._on_committed is not None and any(r.written for r in results):
            self._on_committed(list(plan.new_alerts.values()))

    def _may_be_fresh(self, batches: Sequence[IngestBatch]) -> bool:
        """PostgreSQL: whether the group's alerts may all be new to the store: none of them is one this
        process stored or found, and no fingerprint comes twice (a second copy is planned against the
        first, which only the transaction's way does), nor one an insert under way here holds (an HA
        twin of the webhook: racing it, the statement would wait for it and be undone; the transaction's
        way waits without an error in PostgreSQL's log). Not for `FRESH_PAUSE` seconds after a group
        found stored alerts: after a restart, or past `known_fingerprints` live alerts, the alerts this
        process does not know are mostly stored ones, and each such try is a round trip more."""
        if self._db.is_sqlite or time.monotonic() < self._fresh_paused_until:
            return False
        known = self._known
        seen: set[str] = set()
        for batch in batches:
            for alert in batch.alerts:
                if alert.fingerprint in known or alert.fingerprint in seen or alert.fingerprint in self._inserting:
                    return False
                seen.add(alert.fingerprint)
        return bool(seen)

    async def _commit_fresh(self, batches: list[IngestBatch], now: datetime) -> tuple[list[IngestResult], Plan] | None:
        """The group in one statement that commits on its own (`store.insert_fresh`), when none of its
        alerts is stored: each is planned as new, and a new alert only inserts rows. None when one of
        them is stored after all (or the statement was refused for one payload's values): nothing was
        written, and the group goes the transaction's way, which reads the states and isolates a payload
        at fault; likewise a group with GPU events to record (`ingest.gpus`: rare, and one more table).
        A new alert's first webhook waits for one round trip to PostgreSQL instead of five (A/B through
        `serve`: tests/bench/results/history/ingest.md)."""
        plan, results, event_slices = plan_group(batches, {}, now)
        if self._gpus.rows(batches, plan, now):
            return None  # GPU events go in the transaction's way, with the alerts that carry them
        for batch, (start, end) in zip(batches, event_slices, strict=True):
            for event in plan.events[start:end]:
                event["raw_digest"] = batch.digest
        # One payload per digest: equal payloads hold the same fingerprints, which _may_be_fresh refused.
        raws = sorted((raw_row(batch, now) for batch in batches), key=itemgetter("digest"))
        new_alerts = [plan.new_alerts[fp] for fp in sorted(plan.new_alerts)]
        self._inserting.update(plan.new_alerts)
        try:
            ids = await store.insert_fresh(self._db, raws, new_alerts, plan.new_episodes, plan.events)
        except Exception as exc:
            if is_outage(exc):
                raise
            # Not a race (insert_fresh answers None for one): a value the store refuses, which the
            # transaction's way meets again and pins on its payload, or a fault of this statement.
            log.warning(
                "%d new alerts not inserted in one statement (%s): in a transaction instead",
                len(new_alerts),
                describe_error(exc),
            )
            return None
        finally:
            self._inserting.difference_update(plan.new_alerts)
        if ids is None:
            self._fresh_paused_until = time.monotonic() + FRESH_PAUSE
            return None
        for batch, result in zip(batches, results, strict=True):
            result.raw_event_id = ids.get(batch.digest)
        return results, plan

    async def _apply(
        self, session: AsyncSession, batches: list[IngestBatch], now: datetime
    ) -> tuple[list[IngestResult], Plan]:
        """Plan every batch in order against one view of the state, then write it all at once."""
        states = await store.load_states(session, list({a.fingerprint for b in batches for a in b.alerts}))
        plan, results, event_slices = plan_group(batches, states, now)
        logged: dict[str, int] = {}  # digest -> the first batch (by position) that logs it
        for i, (batch, result) in enumerate(zip(batches, results, strict=True)):
            if batch.always_logged or result.written:
                logged.setdefault(batch.digest, i)
        ids = await store.insert_raw_events(session, [raw_row(batches[i], now) for i in logged.values()])
        first = {i: digest for digest, i in logged.items()}  # of identical payloads in one group, the first is logged
        for i, (result, (start, end)) in enumerate(zip(results, event_slices, strict=True)):
            if i in first:
                result.raw_event_id = ids.get(first[i])
            for event in plan.events[start:end]:
                event["raw_event_id"] = result.raw_event_id
        if not any(r.written for r in results):
            return results, plan
        # Rows are written in fingerprint order, the order load_states locks in: concurrent batches never deadlock.
        # New rows of the three tables go together (one round trip on PostgreSQL); episodes are closed
        # or reopened after, since an alert new in this group may already be resolved in it.
        new_alerts = [plan.new_alerts[fp] for fp in sorted(plan.new_alerts)]
        inserted = await store.insert_new(session, new_alerts, plan.new_episodes, plan.events)
        if inserted != len(plan.new_alerts):
            await session.rollback()
            raise _InsertRace
        if gpus := self._gpus.rows(batches, plan, now):
            await record_gpus(session, gpus.gpus, gpus.events)
        await store.update_alerts(session, [plan.updates[fp] for fp in sorted(plan.updates)])
        await store.close_episodes(session, plan.closed_episodes)
        await store.reopen_episodes(session, plan.reopened_episodes)
        return results, plan


def _settle(
    group: Sequence[tuple[IngestBatch, asyncio.Future[IngestResult]]], outcome: Sequence[IngestResult] | Exception
) -> None:
    """Answer every caller of a group; one whose request timed out is gone (its data is stored all the same)."""
    for i, (_, future) in enumerate(group):
        if future.done():
            continue
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome[i])
