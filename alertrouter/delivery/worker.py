"""The delivery loop inside `serve`: expand the outbox, then per channel claim, send, record, retry.

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
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.channels.base import Channel, ChannelError
from alertrouter.channels.registry import secret_values
from alertrouter.delivery.expand import ActionLinks, coalesced_row, failover_row, notification_of
from alertrouter.delivery.outbox import expand_outbox
from alertrouter.delivery.plan import Batch, plan_batches
from alertrouter.delivery.policy import Unexpected, masked_exception
from alertrouter.delivery.record import Recorder
from alertrouter.loops import LoopHealth
from alertrouter.metrics import Metrics
from alertrouter.model import DeliveryStatus, utcnow
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.ruleset.oncall import build_rota
from alertrouter.store import STORE_ERRORS, Database, describe_error
from alertrouter.store import delivery as store
from alertrouter.store.leases import new_holder
from alertrouter.store.tables import ChannelStateRow, DeliveryRow

__all__ = ["DeliveryWorker"]

log = logging.getLogger(__name__)

BATCH = 200  # deliveries looked at per channel and pass
LEASE_TTL = timedelta(seconds=60)
FAILOVER_AFTER = 3  # consecutive failures before critical messages go to the failover robot
STOP_GRACE = 15.0
LOOP = "delivery"  # its name in LoopHealth and the loop metrics
_GOES_ON = frozenset({"sent", "skipped", "capped", "error", "split"})  # after these the channel's next batch is sent
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
        self._base = (external_url or ruleset.global_.external_url or "").rstrip("/")
        self.actions = actions  # signed acknowledge/silence links in messages; None: no links
        self._interval = interval
        self._slots = asyncio.Semaphore(concurrency)
        self._clock = clock
        self._rng = rng or random.Random()
        self._recorder = Recorder(db, metrics=metrics, clock=clock, rng=self._rng)
        self.holder = holder or new_holder()
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
        if self._metrics is not None:
            for row in done.rows:
                if row["status"] == DeliveryStatus.UNCONFIGURED:
                    self._metrics.notifications.labels(channel=row["channel"], result="unconfigured").inc()
        return len(done.rows)

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
        if await self._send_due(config, channel, now, coalesce_backlog=bool(state.coalesce_backlog)) == "split":
            # a combined message failed unexpectedly: its messages are due again, each alone, in this pass
            await self._send_due(config, channel, self._clock(), coalesce_backlog=False)

    async def _send_due(self, config: ChannelConfig, channel: Channel, now: datetime, *, coalesce_backlog: bool) -> str:
        """Send what is due within the budget; the last outcome ("split" if a combined message split)."""
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
        split = ""
        for batch in batches:
            if self._stopping:
                break
            outcome = await self._send(config, channel, batch)
            split = split or ("split" if outcome == "split" else "")
            if outcome not in _GOES_ON:
                return outcome  # the vendor is unhappy: stop here, the channel's retry/block state says when to resume
        return split

    async def _send(self, config: ChannelConfig, channel: Channel, batch: Batch) -> str:
        name = config.name
        now = self._clock()
        grace = config.timeout * 2 + timedelta(seconds=5)  # outlasts the send, which gives up after timeout + 5s
        try:
            async with self._db.write() as session:
                if not await store.take_channel(session, name=name, holder=self.holder, now=now, until=now + LEASE_TTL):
                    await session.rollback()
                    return "lost_lease"
                delivery_id = batch.ids[0]
                if batch.coalesced:
                    coalesced = await self._coalesce(session, batch.ids, now)
                    if coalesced is None:
                        await session.rollback()
                        return "skipped"
                    delivery_id = coalesced
                (row,) = await store.deliveries_by_id(session, [delivery_id])
                recipients, capped = await self._within_cap(session, config, row, now)
                if capped and not recipients:
                    await store.update_deliveries(
                        session,
                        [row.id],
                        only_status=DeliveryStatus.PENDING,
                        status=DeliveryStatus.CAPPED,
                        last_error=_capped(capped),
                    )
                    await session.commit()
                    self._count(name, "capped")
                    return "capped"
                attempt = await store.start_attempt(
                    session, delivery_id=row.id, channel=name, worker=self.holder, now=now, claimed_until=now + grace
                )
                await session.commit()
        except STORE_ERRORS:
            raise
        except Exception as exc:  # preparing these messages failed: they alone wait
            broken = self._unexpected(exc, f"preparing delivery {', '.join(map(str, batch.ids))} for {name}")
            await self._recorder.without_attempt(config, batch.ids, broken, combined=batch.coalesced)
            return "split" if batch.coalesced else "error"
        if attempt is None:
            return "skipped"
        log.debug("delivery %d through %s: claimed, sending", row.id, name)
        started = time.perf_counter()
        failure: ChannelError | Unexpected | None = None
        try:
            notification = notification_of(
                row,
                recipients,
                base_url=self._base,
                now=self._clock(),
                actions=self.actions,
                locale=self.ruleset.locale(row.receiver),
                runbook_hosts=self.ruleset.global_.runbook_hosts,
            )
            await asyncio.wait_for(channel.send(notification), timeout=config.timeout.total_seconds() + 5)
        except ChannelError as exc:
            failure = exc
        except TimeoutError:
            failure = ChannelError(f"{name}: no answer within {config.timeout}")
        except Exception as exc:  # a bug, or a message the channel cannot take: it alone waits
            failure = self._unexpected(exc, f"send of delivery {row.id} through {name}")
        seconds = time.perf_counter() - started
        log.debug("delivery %d through %s: answered in %.1f ms", row.id, name, seconds * 1000)
        note = _capped(capped) if capped else None
        return await self._recorder.attempt(config, row, attempt, failure, recipients, note, seconds)

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
    async def _coalesce(self, session: AsyncSession, ids: Sequence[int], now: datetime) -> int | None:
        """One delivery standing for several; the members point at it and are done when it is."""
        members = await store.deliveries_by_id(session, ids)
        if len(members) != len(ids):
            return None
        (new_id,) = await store.insert_deliveries(session, [coalesced_row(members, now)])
        moved = await store.update_deliveries(
            session, ids, only_status=DeliveryStatus.PENDING, status=DeliveryStatus.COALESCED, parent_id=new_id
        )
        if moved != len(ids):
            return None
        self._count(members[0].channel, "coalesced", len(ids))
        return new_id

    async def _within_cap(
        self, session: AsyncSession, config: ChannelConfig, row: DeliveryRow, now: datetime
    ) -> tuple[list[str], list[str]]:
        """(recipients to send to, recipients over their daily cap): an SMS or call storm cannot drain the
        quota, nor wake the same person all night."""
        recipients = list(row.message.get("recipients", []))
        if config.type not in ("sms", "voice") or not recipients:
            return recipients, []
        counts = await store.recipient_counts(
            session, channel=config.name, recipients=recipients, since=now - timedelta(days=1)
        )
        allowed = [r for r in recipients if counts.get(r, 0) < config.daily_cap_per_number]
        capped = [r for r in recipients if r not in allowed]
        if config.type == "voice" and capped and not row.attempts and self._metrics is not None:
            self._metrics.voice_calls_capped.labels(channel=config.name).inc(len(capped))
        return allowed, capped

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
        self._count(config.name, "failed_over", len(rows))
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

    def _count(self, channel: str, result: str, n: int = 1) -> None:
        if self._metrics is not None:
            self._metrics.notifications.labels(channel=channel, result=result).inc(n)


def _capped(numbers: Sequence[str]) -> str:
    return f"daily cap reached, not sent to {len(numbers)} number(s)"
