"""One batch through one channel: claimed (a coalesced batch made one combined message, numbers over
their daily cap held back), its attempt written before the request, sent, and recorded; and what the
channel's pass does next."""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.channels.base import Channel, ChannelError
from alertrouter.delivery.expand import ActionLinks, coalesced_row, notification_of
from alertrouter.delivery.plan import Batch
from alertrouter.delivery.policy import Outcome, Unexpected
from alertrouter.delivery.record import Recorder, count_result
from alertrouter.metrics import Metrics
from alertrouter.model import DeliveryStatus
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.store import STORE_ERRORS, Database
from alertrouter.store import delivery as store
from alertrouter.store.tables import DeliveryRow

__all__ = ["LEASE_TTL", "BatchSender", "Next", "capped_note"]

log = logging.getLogger("alertrouter.delivery.worker")  # one logger for the delivery loop's lines

LEASE_TTL = timedelta(seconds=60)  # a channel's lease, taken again before each batch


class Next(enum.Enum):
    """What the channel's pass does after one batch."""

    GO_ON = enum.auto()  # sent, taken by another worker, over its cap, or failed on its own: the next batch
    SPLIT = enum.auto()  # a combined message failed unexpectedly: go on, then send its messages, each alone
    STOP = enum.auto()  # the vendor or the network failed, or the lease is lost: the channel's state says when


@dataclass(frozen=True, slots=True)
class _Claim:
    """A delivery claimed for one attempt (written, `in_flight`): who it goes to, who is over their cap."""

    row: DeliveryRow
    attempt: int
    recipients: list[str]
    capped: list[str]


class BatchSender:
    def __init__(
        self,
        db: Database,
        ruleset: Ruleset,
        *,
        recorder: Recorder,
        holder: str,
        clock: Callable[[], datetime],
        metrics: Metrics | None,
        unexpected: Callable[[BaseException, str], Unexpected],
        base_url: str,
        actions: ActionLinks | None,
    ) -> None:
        self._db = db
        self._ruleset = ruleset
        self._recorder = recorder
        self._holder = holder
        self._clock = clock
        self._metrics = metrics
        self._unexpected = unexpected  # logs and counts an exception contained to one message
        self._base = base_url
        self.actions = actions  # signed acknowledge/silence links in messages; None: no links

    async def send(self, config: ChannelConfig, channel: Channel, batch: Batch) -> Next:
        try:
            claim = await self._claim(config, batch)
        except STORE_ERRORS:
            raise
        except Exception as exc:  # preparing these messages failed: they alone wait
            broken = self._unexpected(exc, f"preparing delivery {', '.join(map(str, batch.ids))} for {config.name}")
            await self._recorder.without_attempt(config, batch.ids, broken, combined=batch.coalesced)
            return Next.SPLIT if batch.coalesced else Next.GO_ON
        if isinstance(claim, Next):
            return claim
        outcome = await self._attempt(config, channel, claim)
        if outcome.status is DeliveryStatus.SPLIT:
            return Next.SPLIT
        return Next.STOP if outcome.channel.holds_back else Next.GO_ON

    async def _claim(self, config: ChannelConfig, batch: Batch) -> _Claim | Next:
        """Hold the channel's lease, make a coalesced batch one combined message, and write the attempt;
        what the pass does next when there is nothing to send (a capped message is done here)."""
        name, now = config.name, self._clock()
        grace = config.timeout * 2 + timedelta(seconds=5)  # outlasts the send, which gives up after timeout + 5s
        async with self._db.write() as session:
            if not await store.take_channel(session, name=name, holder=self._holder, now=now, until=now + LEASE_TTL):
                await session.rollback()
                return Next.STOP  # another replica works the channel now
            delivery_id = batch.ids[0]
            if batch.coalesced:
                coalesced = await self._coalesce(session, batch.ids, now)
                if coalesced is None:
                    await session.rollback()
                    return Next.GO_ON  # one of them was taken meanwhile
                delivery_id = coalesced
            (row,) = await store.deliveries_by_id(session, [delivery_id])
            recipients, capped = await self._within_cap(session, config, row, now)
            if capped and not recipients:
                await store.update_deliveries(
                    session,
                    [row.id],
                    only_status=DeliveryStatus.PENDING,
                    status=DeliveryStatus.CAPPED,
                    last_error=capped_note(capped),
                )
                await session.commit()
                count_result(self._metrics, name, DeliveryStatus.CAPPED)
                return Next.GO_ON
            attempt = await store.start_attempt(
                session, delivery_id=row.id, channel=name, worker=self._holder, now=now, claimed_until=now + grace
            )
            await session.commit()
        if attempt is None:
            return Next.GO_ON  # another worker claimed it first
        return _Claim(row, attempt, recipients, capped)

    async def _attempt(self, config: ChannelConfig, channel: Channel, claim: _Claim) -> Outcome:
        """Send the claimed delivery and record what the vendor said, or that it said nothing in time."""
        name, row = config.name, claim.row
        log.debug("delivery %d through %s: claimed, sending", row.id, name)
        started = time.perf_counter()
        failure: ChannelError | Unexpected | None = None
        try:
            notification = notification_of(
                row,
                claim.recipients,
                base_url=self._base,
                now=self._clock(),
                actions=self.actions,
                locale=self._ruleset.locale(row.receiver),
                runbook_hosts=self._ruleset.global_.runbook_hosts,
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
        note = capped_note(claim.capped) if claim.capped else None
        return await self._recorder.attempt(config, row, claim.attempt, failure, claim.recipients, note, seconds)

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
        count_result(self._metrics, members[0].channel, DeliveryStatus.COALESCED, len(ids))
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


def capped_note(numbers: Sequence[str]) -> str:
    """The stored error of a message held back from numbers over their daily cap (the console translates it)."""
    return f"daily cap reached, not sent to {len(numbers)} number(s)"
