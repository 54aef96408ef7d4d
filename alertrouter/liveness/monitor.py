"""The heartbeat loop inside `serve`: records sightings, and on the replica holding the `heartbeats`
lease raises alertrouter's own alert for a silent source and resolves it when the source is back.

The raised alert goes through ingest like any received one (`Ingestor.ingest`): stored, deduplicated,
routed, repeated, shown in the console and counted in the digest as any alert is, and the engine is
woken by that commit. Ingesting it twice (a retry, another replica) changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from alertrouter.ingest.batch import IngestBatch, IngestResult
from alertrouter.liveness import watch
from alertrouter.liveness.watch import Step
from alertrouter.message.i18n import Locale
from alertrouter.metrics import Metrics
from alertrouter.model import utcnow
from alertrouter.process.loops import LoopHealth
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.store import STORE_ERRORS, Database, describe_error, leases
from alertrouter.store import heartbeats as store
from alertrouter.store.heartbeats import HeartbeatRecord
from alertrouter.transitions import IncomingAlert

__all__ = ["HeartbeatMonitor", "HeartbeatState", "HeartbeatStatus"]

log = logging.getLogger(__name__)

LEASE = "heartbeats"
LOOP = "heartbeats"  # its name in LoopHealth and the loop metrics
INTERVAL_MIN, INTERVAL_MAX = timedelta(seconds=1), timedelta(seconds=15)
HeartbeatState = Literal["ok", "missing", "waiting"]


@dataclass(frozen=True, slots=True)
class HeartbeatStatus:
    """One configured heartbeat as the console and the API show it."""

    config: HeartbeatConfig
    record: HeartbeatRecord
    # lost at this time unless heard from before; never heard from: when `warn_if_never_heard` warns, or None
    deadline: datetime | None

    @property
    def state(self) -> HeartbeatState:
        """`missing` ("monitoring is blind" raised), `waiting` (never heard from, whether or not its
        never-heard warning is raised) or `ok`."""
        record = self.record
        if record.missing_since is None or watch.never_heard_raised(record):
            return "waiting" if record.last_seen is None else "ok"
        return "missing"

    @property
    def missing(self) -> bool:
        return self.state == "missing"

    @property
    def waiting(self) -> bool:
        return self.state == "waiting"


def check_interval(configs: Sequence[HeartbeatConfig]) -> timedelta:
    """A fifth of the shortest timeout, within 1s-15s: a loss is raised at most that late."""
    if not configs:
        return INTERVAL_MAX
    return min(INTERVAL_MAX, max(INTERVAL_MIN, min(c.timeout for c in configs) / 5))


class HeartbeatMonitor:
    def __init__(
        self,
        db: Database,
        configs: Sequence[HeartbeatConfig],
        ingest: Callable[[IngestBatch], Awaitable[IngestResult]],
        *,
        locale: Locale,
        metrics: Metrics | None = None,
        loops: LoopHealth | None = None,
        clock: Callable[[], datetime] = utcnow,
        interval: timedelta | None = None,
        lease_ttl: timedelta = timedelta(seconds=30),
        holder: str | None = None,
    ) -> None:
        self._db = db
        self.configs = {c.name: c for c in configs}
        self._ingest = ingest
        self._locale = locale
        self._metrics = metrics
        self._loops = loops or LoopHealth(metrics)
        self._clock = clock
        self.interval = interval or check_interval(configs)
        self._lease_ttl = max(lease_ttl, 3 * self.interval)
        self.holder = holder or leases.new_holder()
        # When this process started watching: no timeout runs out sooner than one after it (`watch`).
        self.started = clock()
        self._watching = False
        self._waiting: set[str] = set()  # told (logged) as never heard from, by this process
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def heard(self, alerts: Sequence[IncomingAlert]) -> watch.Heard:
        """A payload's alerts sorted out: the heartbeats they refresh, the alerts that are no heartbeat's."""
        if not self.configs:
            return watch.Heard(frozenset(), list(alerts), 0)
        return watch.heard(list(self.configs.values()), alerts)

    async def seen(self, names: Collection[str], *, via: str) -> None:
        """`names` were heard from now (committed before this returns); a lost one is resolved at once."""
        now = self._clock()
        async with self._db.write() as session:
            await store.record_seen(session, names, now, via=via)
            await session.commit()
        if self._metrics is not None:
            for name in names:
                self._metrics.heartbeat_last_seen.labels(heartbeat=name).set(now.timestamp())
        self._wake.set()

    async def statuses(self) -> list[HeartbeatStatus]:
        """Every configured heartbeat with what the store says of it, in the order of the rules."""
        async with self._db.read() as session:
            records = await store.load_heartbeats(session)
        out = []
        for name, config in self.configs.items():
            record = records.get(name) or HeartbeatRecord(name, self.started)
            out.append(HeartbeatStatus(config, record, watch.deadline(record, config, self.started)))
        return out

    async def check_once(self) -> dict[str, Step]:
        """One check: every replica reads the store (for its metrics); the lease holder raises and
        resolves. The steps taken, by heartbeat (empty when another replica holds the lease)."""
        now = self._clock()
        async with self._db.write() as session:
            if not self._watching:
                await store.watch_heartbeats(session, self.configs, now)
            leader = await leases.hold_lease(
                session, name=LEASE, holder=self.holder, now=now, until=now + self._lease_ttl
            )
            records = await store.load_heartbeats(session)
            await session.commit()
        self._watching = True
        steps: dict[str, Step] = {}
        self._tell_waiting(records)
        if leader:
            for name, record in records.items():
                config = self.configs.get(name)
                taken = await (self._orphan(record, now) if config is None else self._step(config, record, now))
                if taken is not Step.NONE:
                    steps[name] = taken
        self._observe(records, steps)
        return steps

    async def _step(self, config: HeartbeatConfig, record: HeartbeatRecord, now: datetime) -> Step:
        taken = watch.step(record, config, started=self.started, now=now)
        never = record.last_seen is None
        labels = watch.never_heard_labels(config) if never else watch.blind_labels(config)
        if taken is Step.RAISE:
            since = watch.silent_since(record)
            # Ingested first: a failure before the mark only means the next check raises it again.
            await self._ingest(watch.blind_alert(labels, since, locale=self._locale, description=config.description))
            await self._mark(config.name, since, labels)
            if never:
                log.warning("heartbeat %s never heard from since %s: warning raised", config.name, since)
            else:
                log.warning("heartbeat %s silent since %s (timeout %s): raised", config.name, since, config.timeout)
        elif taken is Step.KEEP and record.missing_since is not None:
            batch = watch.blind_alert(
                record.alert_labels or labels, record.missing_since, locale=self._locale, description=config.description
            )
            await self._ingest(batch)
        elif taken is Step.RESOLVE and record.missing_since is not None:
            await self._resolve(record, record.alert_labels or labels, record.last_seen or now)
            log.warning("heartbeat %s heard at %s: resolved", config.name, record.last_seen or now)
        return taken

    async def _orphan(self, record: HeartbeatRecord, now: datetime) -> Step:
        """A heartbeat no longer in the rules whose alert is still raised: resolved now."""
        if record.missing_since is None or record.alert_labels is None:
            return Step.NONE
        await self._resolve(record, record.alert_labels, now)
        log.info("heartbeat %s left the rules: its raised alert is resolved", record.name)
        return Step.RESOLVE

    async def _resolve(self, record: HeartbeatRecord, labels: dict[str, str], at: datetime) -> None:
        assert record.missing_since is not None
        since = record.missing_since
        await self._ingest(watch.blind_alert(labels, since, locale=self._locale, resolved_at=max(at, since)))
        await self._mark(record.name, None, None)

    async def _mark(self, name: str, since: datetime | None, labels: dict[str, str] | None) -> None:
        async with self._db.write() as session:
            await store.mark_missing(session, name, since, labels)
            await session.commit()

    def _tell_waiting(self, records: dict[str, HeartbeatRecord]) -> None:
        """Logs once per process each heartbeat never heard from, with how to make its source send,
        and once more when it is first heard."""
        for name, config in self.configs.items():
            record = records.get(name)
            if record is None:
                continue
            if record.last_seen is None and name not in self._waiting:
                self._waiting.add(name)
                log.warning(
                    "heartbeat %s: never heard from yet, waiting (nothing is raised until it is first heard): %s",
                    name,
                    watch.how_to_be_heard(config),
                )
            elif record.last_seen is not None and name in self._waiting:
                self._waiting.discard(name)
                log.info(
                    "heartbeat %s heard from for the first time (via %s): watched from now on", name, record.seen_via
                )

    def _observe(self, records: dict[str, HeartbeatRecord], steps: dict[str, Step]) -> None:
        m = self._metrics
        if m is None:
            return
        for name in self.configs:
            record = records.get(name)
            if record is None:
                continue
            if record.last_seen is not None:
                m.heartbeat_last_seen.labels(heartbeat=name).set(record.last_seen.timestamp())
            # 1 while "monitoring is blind" is raised: never for a source never heard from
            missing = record.last_seen is not None and (record.missing_since is not None or name in steps)
            taken = steps.get(name)
            if taken is Step.RESOLVE:
                missing = False
            m.heartbeat_missing.labels(heartbeat=name).set(1 if missing else 0)

    async def _loop(self) -> None:
        while not self._stop.is_set():
            # Cleared before the check, not after it: a stop (or a nudge) while it runs is kept, and the
            # wait below ends at once instead of after a whole interval.
            self._wake.clear()
            try:
                await self.check_once()
            except STORE_ERRORS as exc:
                log.warning("heartbeat check failed, will retry: %s", describe_error(exc))
            except Exception as exc:  # supervised: a bug must never end the watch
                self._loops.failed(LOOP, exc)
            else:
                self._loops.passed(LOOP)
                if not self.configs:
                    return  # the one check resolved what heartbeats removed from the rules left raised
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval.total_seconds())

    def start(self) -> None:
        if self.configs:
            self._loops.register(LOOP, interval=self.interval.total_seconds())
        self._task = asyncio.create_task(self._loop(), name="alertrouter-heartbeats")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stop.set()
        self._wake.set()
        await self._task  # a check in flight finishes: cancelling it mid-transaction strands its connection
        with contextlib.suppress(*STORE_ERRORS):
            async with self._db.write() as session:
                await leases.release_lease(session, name=LEASE, holder=self.holder, now=self._clock())
                await session.commit()
