"""`after_attempt`, the pure decision after one attempt: the vendor's failures hold the channel back,
unexpected ones only their message, and those end in a dead letter after `MAX_UNEXPECTED`."""

from __future__ import annotations

import random
import traceback
from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.channels.base import ChannelError
from alertrouter.delivery.policy import (
    MAX_UNEXPECTED,
    ChannelEffect,
    Outcome,
    Unexpected,
    after_attempt,
    masked_exception,
)
from alertrouter.ruleset.channels import RetryConfig

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
RETRY = RetryConfig(initial=timedelta(seconds=10), max=timedelta(minutes=5), give_up_after=timedelta(hours=24))
BOOM = Unexpected("ValueError", "invalid literal for int() with base 10: '²'")


def decide(failure: ChannelError | Unexpected | None, unexpected: int = 1, *, combined: bool = False) -> Outcome:
    return after_attempt(
        failure, attempts=unexpected, unexpected=unexpected, created_at=NOW - timedelta(minutes=1), now=NOW,
        retry=RETRY, block=timedelta(minutes=10), rng=random.Random(0), combined=combined,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("failure", "result", "status", "effect"),
    [
        (None, "sent", "sent", ChannelEffect.OK),
        (ChannelError("HTTP 502"), "retry", "pending", ChannelEffect.FAILING),
        (ChannelError("sign mismatch", permanent=True), "dead", "dead", ChannelEffect.BROKEN),
        (ChannelError("130101", rate_limited=True), "rate_limited", "pending", ChannelEffect.BLOCKED),
        (BOOM, "error", "pending", ChannelEffect.POISONED),
    ],
)
def test_outcome_by_failure(
    failure: ChannelError | Unexpected | None, result: str, status: str, effect: ChannelEffect
) -> None:
    outcome = decide(failure)
    assert (outcome.result, outcome.status, outcome.channel) == (result, status, effect)


def test_unexpected_failures_back_off_alone_then_end_in_a_dead_letter_saying_why() -> None:
    waits = []
    for n in range(1, MAX_UNEXPECTED):
        outcome = decide(BOOM, n)
        assert outcome.status == "pending"
        assert outcome.until is None  # the channel is not held back
        assert outcome.next_attempt_at is not None
        waits.append(outcome.next_attempt_at - NOW)
    assert waits == sorted(waits)
    assert waits[0] > timedelta(0)
    last = decide(BOOM, MAX_UNEXPECTED)
    assert last.status == "dead"
    assert last.error == f"dead letter after {MAX_UNEXPECTED} unexpected failures: {BOOM}"


def test_members_of_a_failed_combined_message_are_due_at_once() -> None:
    outcome = decide(BOOM, combined=True)
    assert (outcome.status, outcome.next_attempt_at) == ("pending", NOW)


def _chained(secret: str) -> RuntimeError:
    try:
        try:
            raise OSError(f"connect to /send?access_token={secret}")
        except OSError as inner:
            raise RuntimeError(f"bad {secret}") from inner
    except RuntimeError as exc:
        return exc
    raise AssertionError("unreachable")


def test_secrets_are_masked_in_the_text_and_the_logged_exception() -> None:
    secret = "dt-token-5b1f9e0c7a"
    exc = _chained(secret)
    assert str(Unexpected.of(exc, [secret])) == "RuntimeError: bad ***"
    shown = masked_exception(exc, [secret])
    assert shown.__traceback__ is exc.__traceback__
    assert secret not in "".join(traceback.format_exception(shown))
    assert masked_exception(exc, ["unrelated-secret"]) is exc
