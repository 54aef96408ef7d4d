"""The delivery loop inside `serve`: expand the outbox, then work each channel with something due: its
lease, failover of critical messages while it is blocked or failing, and its due batches within the
rate budget, each sent by `delivery.batch` (claim, send, record, retry).

Each channel is worked by one replica at a time (a lease row in `channel_state`), so its rate budget,
counted from the attempts every replica records, is exact. Every attempt is written before the request
and completed after it: a delivery is `sent` only when the vendor said so, and a worker killed mid-send
leaves a claim that expires and is retried (the one message that may arrive twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import Callable, Mapping
from datetime import datetime

from alertrouter.channels.base import Channel
from alertrouter.channels.registry import secret_values
from alertrouter.delivery.batch import LEASE_TTL, BatchSender, Next
from alertrouter.delivery.expand import ActionLinks, failover_row
from alertrouter.delivery.outbox import expand_outbox
from alertrouter.delivery.plan import plan_batches
from alertrouter.delivery.policy import Unexpected, masked_exception
from alertrouter.delivery.record import Recorder, count_result
from alertrouter.metrics import Metrics
from alertrouter.model import DeliveryStatus, utcnow
from alertrouter.process.loops import LoopHealth
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.ruleset.oncall import build_rota
from alertrouter.store import STORE_ERRORS, Database, describe_error
from alertrouter.store import delivery as store
from alertrouter.store.leases import new_holder
from alertrouter.store.tables import ChannelStateRow

__all__ = ["DeliveryWorker"]

log = logging.getLogger(__name__)

BATCH = 200  # deliveries looked at per channel and pass
FAILOVER_AFTER = 3  # consecutive failures before critical messages go to the failover robot
STOP_GRACE = 15.0
LOOP = "delivery"  # its name in LoopHealth and the loop metrics
_REMEMBERED = 256  # distinct unexpected errors whose traceback was logged


class DeliveryWorker:
    def __init__(
        self,
        db: Database,
        ruleset: Ruleset,
        channels: Mapping[str, Channel],
        *,
        metrics: Metrics | None = None,
        external_url: str | None = None,
        interval: float = 1.0,
        concurrency: int = 8,
        clock: Callable[[], datetime] = utcnow,
        holder: str | None = None,
        rng: random.Random | None = None,
        actions: ActionLinks | None = None,
        loops: LoopHealth | None = None,
    ) -> None:
        self._db = db
        self._loops = loops or LoopHealth(metrics)
        self.ruleset = ruleset
        self._rota = build_rota(ruleset.oncall)  # whoever is on call, for receivers that name a schedule
        self.channels = dict(channels)
        self.configs: dict[str, ChannelConfig] = {c.name: c for c in ruleset.channels}
        self.receivers = {r.name: r for r in ruleset.receivers}
        self.unconfigured = sorted(unconfigured_channels(ruleset))
        self._secrets = secret_values(ruleset)
        self._logged: dict[str, None] = {}  # signatures of unexpected errors logged with their traceback
        self._metrics = metrics
        self._interval = interval
        self._slots = asyncio.Semaphore(concurrency)
        self._clock = clock
        self.holder = holder or new_holder()
        self._sender = BatchSender(
            db,
            ruleset,
            recorder=Recorder(db, metrics=metrics, clock=clock, rng=rng or random.Random()),
            holder=self.holder,
            clock=clock,
            metrics=metrics,
            unexpected=self._unexpected,
            base_url=(external_url or ruleset.global_.external_url or "").rstrip("/"),
            actions=actions,
        )
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    # -- the loop ------------------------------------------------------------------------------
    def nudge(self) -> None:
        """New outbox rows were committed: work them now rather than at the next tick."""
        self._wake.set()

    def start(self) -> None:
        self._loops.register(LOOP, interval=self._interval)
        self._task = asyncio.create_task(self._loop(), name="alertrouter-delivery")

    async def stop(self) -> None:
        """Let sends in flight finish and be recorded (a cancelled send would be retried, maybe twice)."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(self._task, STOP_GRACE)
        except TimeoutError:
            log.warning(
                "delivery still running at shutdown after %ss; in-flight sends are retried on start", STOP_GRACE
            )

    async def _loop(self) -> None:
        """At every nudge and tick: expand the outbox and start work on every channel with something
        due. A channel still being worked (a vendor slow to answer, a long backlog) holds back no
        other channel's messages; one that became due again meanwhile is looked at once it is free."""
        working: dict[str, asyncio.Task[None]] = {}
        again: set[str] = set()

        def freed(name: str, task: asyncio.Task[None]) -> None:
            if working.get(name) is task:
                del working[name]
            if name in again:
                again.discard(name)
                self._wake.set()

        while not self._stopping:
            try:
                due = await self._due()
            except STORE_ERRORS as exc:
                log.warning("delivery pass failed, will retry: %s", describe_error(exc))
                if self._metrics is not None:
                    self._metrics.db_errors.labels(operation="delivery").inc()
            except Exception as exc:  # supervised: a bug in one pass must not end delivery
                self._loops.failed(LOOP, exc)
            else:
                self._loops.passed(LOOP)
                for name in due:
                    if name in working:
                        again.add(name)
                        continue
                    task = asyncio.create_task(self._guarded(name), name=f"alertrouter-delivery-{name}")
                    working[name] = task
                    task.add_done_callback(functools.partial(freed, name))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._interval)
            self._wake.clear()
        await asyncio.gather(*working.values())  # sends in flight finish and are recorded

    async def run_once(self) -> None:
        """Expand new outbox rows, recover stale claims, and work every channel with something due."""
        due = await self._due()
        await asyncio.gather(*(self._guarded(name) for name in due))

    async def _due(self) -> list[str]:
        """Expand new outbox rows, recover stale claims; the channels with something due."""
        await self.expand()
        now = self._clock()
        async with self._db.write() as session:
            recovered = await store.recover_stale(session, now=now)
            await session.commit()
        if recovered:
            log.warning("%d deliveries were in flight when a worker stopped; retrying them", recovered)
        async with self._db.read() as session:
            return await store.due_channels(session, now=now)

    async def expand(self) -> int:
        """Turn pending outbox rows into deliveries; returns how many deliveries were created. An outbox
        row whose expansion raises is quarantined (see `delivery.outbox`), the others are expanded."""
        done = await expand_outbox(
            self._db,
            receivers=self.receivers,
            channels=self.configs,
            severities=self.ruleset.global_.severities,
            unconfigured=self.unconfigured,
            secrets=self._secrets,
            now=self._clock(),
            rota=self._rota,
        )
        for outbox_id, exc in done.quarantined.items():
            self._unexpected(exc, f"expansion of outbox row {outbox_id} (quarantined)")
        for row in done.rows:
            if row["status"] == DeliveryStatus.UNCONFIGURED:
                count_result(self._metrics, row["channel"], DeliveryStatus.UNCONFIGURED)
        return len(done.rows)

    @property
    def actions(self) -> ActionLinks | None:
        """Signed acknowledge/silence links in messages; None: no links."""
        return self._sender.actions

    @actions.setter
    def actions(self, links: ActionLinks | None) -> None:
        self._sender.actions = links

    # -- one channel ---------------------------------------------------------------------------
    async def _guarded(self, name: str) -> None:
        async with self._slots:
            try:
                await self.work_channel(name)
            except STORE_ERRORS as exc:
                log.warning("delivery through %s interrupted by the store: %s", name, describe_error(exc))
            except Exception as exc:  # contained to this channel; the others are worked
                self._unexpected(exc, f"work on channel {name}")

    async def work_channel(self, name: str) -> None:
        config, channel = self.configs.get(name), self.channels.get(name)
        now = self._clock()
        if config is None or channel is None:
            await self._park_unknown(name, now)
            return
        async with self._db.write() as session:
            if not await store.take_channel(session, name=name, holder=self.holder, now=now, until=now + LEASE_TTL):
                await session.rollback()
                return  # another replica is working it
            state = (await store.channel_states(session, [name]))[name]
            await session.commit()
        try:
            await self._work(config, channel, state, now)
        finally:
            async with self._db.write() as session:
                await store.release_channel(session, name=name, holder=self.holder)
                await session.commit()

    async def _work(self, config: ChannelConfig, channel: Channel, state: ChannelStateRow, now: datetime) -> None:
        name = config.name
        blocked = state.blocked_until is not None and state.blocked_until > now
        failing = state.retry_at is not None and state.retry_at > now
        if blocked or (failing and state.consecutive_failures >= FAILOVER_AFTER):
            await self._fail_over(config, now)
        if blocked or failing:
            return
        if state.coalesce_backlog:
            async with self._db.write() as session:
                await store.update_channel(session, name, coalesce_backlog=False)
                await session.commit()
        if await self._send_due(config, channel, now, coalesce_backlog=bool(state.coalesce_backlog)):
            # a combined message failed unexpectedly: its messages are due again, each alone, in this pass
            await self._send_due(config, channel, self._clock(), coalesce_backlog=False)

    async def _send_due(
        self, config: ChannelConfig, channel: Channel, now: datetime, *, coalesce_backlog: bool
    ) -> bool:
        """Send what is due within the budget; whether a combined message split (its messages are due again)."""
        name = config.name
        async with self._db.read() as session:
            budget = None
            if config.rate_limit is not None:
                used = await store.attempts_since(session, channel=name, since=now - config.rate_limit.per)
                budget = config.rate_limit.messages - used
            pending = await store.due_deliveries(session, channel=name, now=now, limit=BATCH)
        alone = {p.id for p in pending if p.unexpected_failures}
        batches = plan_batches([p.id for p in pending], budget=budget, coalesce_backlog=coalesce_backlog, alone=alone)
        if pending and not batches and self._metrics is not None:
            self._metrics.rate_limited.labels(channel=name, by="budget").inc()
        split = False
        for batch in batches:
            if self._stopping:
                break
            step = await self._sender.send(config, channel, batch)
            if step is Next.STOP:
                return False  # the vendor is unhappy: stop here, the channel's retry/block state says when to resume
            split = split or step is Next.SPLIT
        return split

    def _unexpected(self, exc: BaseException, what: str) -> Unexpected:
        """Log and count an exception contained to one message, outbox row or channel: with its
        traceback the first time this worker sees it, as one line after that; secrets masked."""
        failure = Unexpected.of(exc, self._secrets)
        signature = str(failure)
        if signature not in self._logged:
            if len(self._logged) >= _REMEMBERED:
                self._logged.pop(next(iter(self._logged)))
            self._logged[signature] = None
            self._loops.failed(LOOP, masked_exception(exc, self._secrets), what=what)
        else:
            log.warning("%s %s failed again: %s", LOOP, what, signature)
            if self._metrics is not None:
                self._metrics.loop_errors.labels(loop=LOOP).inc()
        return failure

    # -- helpers -------------------------------------------------------------------------------
    async def _fail_over(self, config: ChannelConfig, now: datetime) -> None:
        """While a robot is blocked or failing, its critical messages go to the failover robot of the
        same group (once: a delivery already moved is not moved again)."""
        if config.failover is None or config.failover not in self.channels:
            return
        worst = 0  # rank of the worst severity (critical in the shipped rules)
        async with self._db.write() as session:
            rows = await store.due_deliveries(session, channel=config.name, now=None, limit=BATCH, critical_rank=worst)
            rows = [r for r in rows if not r.message.get("failed_over_from")]
            if not rows:
                await session.rollback()
                return
            copies = [failover_row(r, config.failover, now) for r in rows]
            new_ids = await store.insert_deliveries(session, copies)
            for r, new_id in zip(rows, new_ids, strict=True):
                await store.update_deliveries(
                    session,
                    [r.id],
                    only_status=DeliveryStatus.PENDING,
                    status=DeliveryStatus.FAILED_OVER,
                    parent_id=new_id,
                )
            await session.commit()
        log.warning("%s unavailable: %d critical messages moved to %s", config.name, len(rows), config.failover)
        count_result(self._metrics, config.name, DeliveryStatus.FAILED_OVER, len(rows))
        self.nudge()

    async def _park_unknown(self, name: str, now: datetime) -> None:
        """Deliveries for a channel no longer in the rules (removed, or its credentials emptied)."""
        async with self._db.write() as session:
            rows = await store.due_deliveries(session, channel=name, now=now, limit=BATCH)
            status = DeliveryStatus.UNCONFIGURED if name in self.configs else DeliveryStatus.DEAD
            error = "the channel has no credentials" if name in self.configs else "the channel is no longer configured"
            await store.update_deliveries(
                session, [r.id for r in rows], only_status=DeliveryStatus.PENDING, status=status, last_error=error
            )
            await session.commit()
        if rows:
            log.warning("%d deliveries for channel %s parked: %s", len(rows), name, error)
