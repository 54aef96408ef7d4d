"""What an attempt did, written down: the attempt row, the delivery's next status and attempt, the
channel's state, the metrics and the log line; the decisions themselves are `delivery.policy`'s."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.channels.base import ChannelError, MessageKind
from alertrouter.delivery.policy import ChannelEffect, Outcome, Unexpected, after_attempt
from alertrouter.metrics import Metrics
from alertrouter.model import AttemptOutcome, DeliveryStatus
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.store import Database
from alertrouter.store import delivery as store
from alertrouter.store.tables import DeliveryRow

__all__ = ["Recorder", "count_result"]

log = logging.getLogger("alertrouter.delivery.worker")  # one logger for the delivery loop's lines

Failure = ChannelError | Unexpected | None
_CAPPED_TYPES = ("sms", "voice")  # channels with a daily cap per recipient (`daily_cap_per_number`)


class Recorder:
    def __init__(
        self, db: Database, *, metrics: Metrics | None, clock: Callable[[], datetime], rng: random.Random
    ) -> None:
        self._db = db
        self._metrics = metrics
        self._clock = clock
        self._rng = rng

    def decide(
        self, config: ChannelConfig, row: DeliveryRow, failure: Failure, *, attempts: int, combined: bool
    ) -> Outcome:
        block = config.rate_limit.block if config.rate_limit else timedelta(minutes=10)
        unexpected = row.unexpected_failures + (1 if isinstance(failure, Unexpected) else 0)
        return after_attempt(
            failure, attempts=attempts, unexpected=unexpected, created_at=row.created_at, now=self._clock(),
            retry=config.retry, block=block, rng=self._rng, combined=combined,
        )  # fmt: skip

    async def attempt(
        self, config: ChannelConfig, row: DeliveryRow, attempt: int, failure: Failure, recipients: Sequence[str],
        capped: str | None, seconds: float,
    ) -> Outcome:  # fmt: skip
        """Record one attempt; what was recorded (its status `split` when a combined message failed
        unexpectedly and its messages are due again, each to be sent alone)."""
        name, now = config.name, self._clock()
        outcome = self.decide(config, row, failure, attempts=row.attempts + 1, combined=False)
        members: list[int] = list(row.message.get("members", [])) if row.kind == MessageKind.COALESCED else []
        split = isinstance(failure, Unexpected) and bool(members)
        if split:
            why = f"split, its messages are sent alone: {failure}"
            outcome = Outcome(AttemptOutcome.ERROR, DeliveryStatus.SPLIT, now, why, outcome.channel)
        error = capped if failure is None else outcome.error
        values: dict[str, Any] = {"status": outcome.status, "claimed_until": None, "last_error": error}
        if failure is None:
            values["sent_at"] = now
        else:
            values["next_attempt_at"] = outcome.next_attempt_at
        if isinstance(failure, Unexpected):
            values["unexpected_failures"] = row.unexpected_failures + 1
        reached = list(recipients) if failure is None else [r for r in _reached(failure) if r in recipients]
        if failure is not None and reached:  # a retry leaves out who was already reached (a voice call)
            left = [r for r in row.message.get("recipients", []) if r not in reached]
            values["message"] = {**row.message, "recipients": left}
        async with self._db.write() as session:
            await store.finish_attempt(session, attempt_id=attempt, outcome=outcome.result, error=error, now=now)
            await store.update_deliveries(session, [row.id], only_status=None, **values)
            if reached and config.type in _CAPPED_TYPES:
                await store.record_recipient_sends(session, channel=name, recipients=reached, now=now)
            await self._channel(session, config, outcome, now)
            await session.commit()
        self._tell(name, row.id, failure, outcome)
        if self._metrics is not None:
            if outcome.result is AttemptOutcome.SENT:
                self._metrics.delivery_latency.labels(channel=name).observe((now - row.created_at).total_seconds())
            if outcome.result is AttemptOutcome.RATE_LIMITED:
                self._metrics.rate_limited.labels(channel=name, by="vendor").inc()
            self._metrics.send_duration.labels(channel=name).observe(seconds)
            if config.type == "voice" and reached:
                self._metrics.voice_calls.labels(channel=name).inc(len(reached))
        if split and isinstance(failure, Unexpected):
            await self.without_attempt(config, members, failure, combined=True)
        return outcome

    async def without_attempt(
        self, config: ChannelConfig, ids: Sequence[int], failure: Unexpected, *, combined: bool
    ) -> None:
        """Deliveries that failed unexpectedly without an attempt of their own (preparing them raised, or
        the combined message they were in did): each gets its own next attempt, as a message alone."""
        now = self._clock()
        told: list[tuple[int, Outcome]] = []
        async with self._db.write() as session:
            for row in await store.deliveries_by_id(session, ids):
                if row.status not in (DeliveryStatus.PENDING, DeliveryStatus.COALESCED):
                    continue
                outcome = self.decide(config, row, failure, attempts=row.attempts, combined=combined)
                await store.update_deliveries(
                    session, [row.id], only_status=DeliveryStatus(row.status), status=outcome.status, parent_id=None,
                    next_attempt_at=outcome.next_attempt_at, last_error=outcome.error,
                    unexpected_failures=row.unexpected_failures + 1,
                )  # fmt: skip
                told.append((row.id, outcome))
            if told:
                await self._channel(session, config, told[0][1], now)
            await session.commit()
        for delivery_id, outcome in told:
            self._tell(config.name, delivery_id, failure, outcome)

    async def _channel(self, session: AsyncSession, config: ChannelConfig, outcome: Outcome, now: datetime) -> None:
        """The channel's state after an attempt (the health rule is in `delivery.policy`)."""
        name, effect = config.name, outcome.channel
        if effect is ChannelEffect.OK:
            healthy = not await store.failing_deliveries(session, channel=name)
            await store.update_channel(
                session, name, healthy=healthy, consecutive_failures=0, retry_at=None, last_ok_at=now
            )
        elif effect is ChannelEffect.BLOCKED:
            await store.update_channel(
                session, name, blocked_until=outcome.until, coalesce_backlog=True, last_error=outcome.error,
                last_failure_at=now,
            )  # fmt: skip
        elif effect is ChannelEffect.POISONED:  # this message's own: the channel is not held back
            await store.update_channel(session, name, healthy=False, last_error=outcome.error, last_failure_at=now)
        else:
            await store.channel_failed(
                session, name, error=outcome.error or "", now=now, retry_at=outcome.until or now,
                unhealthy=effect is ChannelEffect.BROKEN,
            )  # fmt: skip

    def _tell(self, name: str, delivery_id: int, failure: Failure, outcome: Outcome) -> None:
        """Count the outcome (an unexpected failure as `error`, and `dead` too when it was the last) and
        log a failure's line."""
        if isinstance(failure, Unexpected) and outcome.result is not AttemptOutcome.ERROR:
            count_result(self._metrics, name, AttemptOutcome.ERROR)
        count_result(self._metrics, name, outcome.result)
        if failure is None:
            return
        if outcome.result is AttemptOutcome.RATE_LIMITED:
            until = outcome.until.isoformat() if outcome.until else "?"
            log.warning("%s: the vendor refused for its rate limit; blocked until %s", name, until)
            return
        level = logging.ERROR if outcome.status is DeliveryStatus.DEAD else logging.WARNING
        done = outcome.status if outcome.status in (DeliveryStatus.DEAD, DeliveryStatus.SPLIT) else "will retry"
        log.log(level, "%s: delivery %d %s: %s", name, delivery_id, done, outcome.error)


def _reached(failure: Failure) -> tuple[str, ...]:
    return failure.reached if isinstance(failure, ChannelError) else ()


def count_result(metrics: Metrics | None, channel: str, result: AttemptOutcome | DeliveryStatus, n: int = 1) -> None:
    """`alertrouter_notifications_total`: an attempt's outcome, or the status a delivery was parked in
    without one (coalesced, failed over, capped, unconfigured)."""
    if metrics is not None:
        metrics.notifications.labels(channel=channel, result=result).inc(n)
