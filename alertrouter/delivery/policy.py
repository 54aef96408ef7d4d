"""What a delivery and its channel become after one attempt, as a pure function (`after_attempt`), and
what an unexpected exception is recorded as (`Unexpected`, its text with every secret masked).

Two kinds of failure and two scopes:
- a `ChannelError` (or a timeout) is the vendor's or the network's: it holds the whole channel back
  (`retry_at`, the vendor's block) because the next message would meet the same answer;
- any other exception (`Unexpected`: a template that raises on one label value, a bug in a channel)
  belongs to the message: only that delivery waits (its own backoff), the channel goes on with the
  others, and after `MAX_UNEXPECTED` such failures the delivery is a dead letter saying why.

Channel health (`channel_state.healthy`, shown by `/api/v1/channels`, the console and the metric
`alertrouter_channel_healthy`): a channel is unhealthy from a permanent failure or an unexpected
failure of one of its messages, and healthy again at a successful send only when none of its messages
is still failing unexpectedly (pending or in flight with an unexpected failure on record). A message
that became a dead letter that way keeps the channel unhealthy until the next successful send.
"""

from __future__ import annotations

import enum
import random
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.channels.base import ChannelError
from alertrouter.delivery.plan import backoff
from alertrouter.model import AttemptOutcome, DeliveryStatus
from alertrouter.ruleset.channels import RetryConfig

__all__ = ["MAX_UNEXPECTED", "ChannelEffect", "Outcome", "Unexpected", "after_attempt", "mask", "masked_exception"]

MAX_UNEXPECTED = 5  # unexpected failures of one delivery before it is a dead letter
_MAX_ERROR = 500  # characters of an exception's text kept in a stored error


class ChannelEffect(enum.Enum):
    """What one attempt does to its channel's state."""

    OK = "ok"  # sent: healthy (unless a message still fails unexpectedly), failures reset
    BLOCKED = "blocked"  # the vendor's rate limit: blocked until `Outcome.until`, backlog coalesced after
    FAILING = "failing"  # transient: the channel waits until `Outcome.until`
    BROKEN = "broken"  # permanent: unhealthy, the channel waits until `Outcome.until`
    POISONED = "poisoned"  # unexpected, this message's own: unhealthy, the channel is not held back

    @property
    def holds_back(self) -> bool:
        """The channel's next messages wait (its retry or block state says until when): the vendor or
        the network failed, and the next message would meet the same answer."""
        return self in (ChannelEffect.BLOCKED, ChannelEffect.FAILING, ChannelEffect.BROKEN)


@dataclass(frozen=True, slots=True)
class Unexpected:
    """An exception that is not a `ChannelError`, as stored and shown: its type and its text, masked."""

    type: str
    text: str

    @classmethod
    def of(cls, exc: BaseException, secrets: Sequence[str]) -> Unexpected:
        try:
            text = str(exc)
        except Exception:  # a __str__ that raises: still recorded
            text = "(its text could not be read)"
        return cls(type(exc).__name__, mask(text, secrets)[:_MAX_ERROR])

    def __str__(self) -> str:
        return f"{self.type}: {self.text}" if self.text else self.type


@dataclass(frozen=True, slots=True)
class Outcome:
    """`result`: the attempt's outcome and the metric's result; `status`: the delivery's status after it
    (sent, pending, dead; split for a combined message whose members go alone); `until`: the channel's
    block or retry."""

    result: AttemptOutcome
    status: DeliveryStatus
    next_attempt_at: datetime | None
    error: str | None
    channel: ChannelEffect
    until: datetime | None = None


def after_attempt(
    failure: ChannelError | Unexpected | None,
    *,
    attempts: int,
    unexpected: int,
    created_at: datetime,
    now: datetime,
    retry: RetryConfig,
    block: timedelta,
    rng: random.Random | None = None,
    combined: bool = False,
) -> Outcome:
    """The decision after one attempt. `attempts` and `unexpected` count this attempt.

    `combined`: the failure happened to a message standing for several (coalesced); each of them is
    due again at once, to be sent alone, so the one that fails is found and the others go out.
    """
    if failure is None:
        return Outcome(AttemptOutcome.SENT, DeliveryStatus.SENT, None, None, ChannelEffect.OK)
    if isinstance(failure, Unexpected):
        reason = str(failure)
        if unexpected >= MAX_UNEXPECTED:
            error = f"dead letter after {unexpected} unexpected failures: {reason}"
            return Outcome(AttemptOutcome.DEAD, DeliveryStatus.DEAD, now, error, ChannelEffect.POISONED)
        if now - created_at >= retry.give_up_after:
            return Outcome(
                AttemptOutcome.DEAD,
                DeliveryStatus.DEAD,
                now,
                f"gave up after {retry.give_up_after}: {reason}",
                ChannelEffect.POISONED,
            )
        if combined:
            error = f"a combined message failed, sent alone now: {reason}"
            return Outcome(AttemptOutcome.ERROR, DeliveryStatus.PENDING, now, error, ChannelEffect.POISONED)
        wait = backoff(unexpected, initial=retry.initial, maximum=retry.max, rng=rng)
        error = f"unexpected failure {unexpected} of {MAX_UNEXPECTED}: {reason}"
        return Outcome(AttemptOutcome.ERROR, DeliveryStatus.PENDING, now + wait, error, ChannelEffect.POISONED)
    if failure.rate_limited:
        until = now + max(block, timedelta(seconds=failure.retry_after or 0))
        return Outcome(
            AttemptOutcome.RATE_LIMITED, DeliveryStatus.PENDING, until, failure.message, ChannelEffect.BLOCKED, until
        )
    give_up = failure.permanent or now - created_at >= retry.give_up_after
    delay = backoff(attempts, initial=retry.initial, maximum=retry.max, rng=rng)
    if failure.permanent:
        delay = retry.max  # probe a broken channel rarely: no retry storm against a bad token
    effect = ChannelEffect.BROKEN if failure.permanent else ChannelEffect.FAILING
    status = DeliveryStatus.DEAD if give_up else DeliveryStatus.PENDING
    result = AttemptOutcome.DEAD if give_up else AttemptOutcome.RETRY
    return Outcome(result, status, now + delay, failure.message, effect, now + delay)


def mask(text: str, secrets: Sequence[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    return text


class MaskedError(Exception):
    """Stands in for an exception whose text named a secret, in a log record's traceback."""


def masked_exception(exc: BaseException, secrets: Sequence[str]) -> BaseException:
    """`exc` itself when neither its text nor that of an exception it chains names a secret; else a
    stand-in with the text masked and the same frames (the chain left out), for a logged traceback."""
    rendered = "".join(traceback.format_exception(exc))
    if not any(s and s in rendered for s in secrets):
        return exc
    stand_in = MaskedError(str(Unexpected.of(exc, secrets)))
    stand_in.__suppress_context__ = True
    return stand_in.with_traceback(exc.__traceback__)
