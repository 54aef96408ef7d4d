"""Learned aliases as a book of rows: new claims, re-confirmation, expiry and conflicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.pipeline.aliases import LearnedAlias, Sighting, active, learn, next_expiry, refresh_every
from alertrouter.pipeline.nodes import NodeClaim

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
H = timedelta(hours=1)
TTL = timedelta(days=7)


def seen(address: str, node: str, fp: str, at: datetime = T0, alertname: str = "GPUXidError") -> Sighting:
    return Sighting(NodeClaim(address, node), fp, alertname, at)


def book_of(rows: list[LearnedAlias]) -> dict[str, LearnedAlias]:
    return {r.address: r for r in rows}


def test_a_claim_is_learned_once_and_written_again_only_when_refresh_is_due() -> None:
    claims = [seen("10.0.0.100", "gpu-node-100", f"fp{g}") for g in range(8)]
    (row,) = learn({}, claims, now=T0, refresh=H, ttl=TTL)
    assert (row.address, row.node, row.first_seen, row.last_seen) == ("10.0.0.100", "gpu-node-100", T0, T0)
    book = book_of([row])
    assert learn(book, claims, now=T0 + 10 * timedelta(minutes=1), refresh=H, ttl=TTL) == []
    (again,) = learn(book, claims, now=T0 + H, refresh=H, ttl=TTL)
    assert (again.first_seen, again.last_seen) == (T0, T0 + H)


def test_aliases_expire_when_not_seen_for_the_ttl() -> None:
    book = book_of(learn({}, [seen("10.0.0.100", "gpu-node-100", "a")], now=T0, refresh=H, ttl=TTL))
    assert active(book, now=T0 + TTL - timedelta(seconds=1), ttl=TTL) == {"10.0.0.100": "gpu-node-100"}
    assert active(book, now=T0 + TTL, ttl=TTL) == {}
    assert next_expiry(book, now=T0, ttl=TTL) == T0 + TTL
    assert next_expiry(book, now=T0 + TTL, ttl=TTL) is None


def test_a_conflict_goes_to_the_alert_that_fired_last_and_keeps_the_previous_name() -> None:
    book = book_of(learn({}, [seen("10.0.0.100", "gpu-node-100", "old")], now=T0, refresh=H, ttl=TTL))
    # the address was given to another machine: its alerts (two GPUs) fired later
    later = T0 + 2 * H
    claims = [
        seen("10.0.0.100", "gpu-node-100", "old"),
        seen("10.0.0.100", "gpu-node-200", "new0", at=later),
        seen("10.0.0.100", "gpu-node-200", "new1", at=later),
    ]
    (row,) = learn(book, claims, now=later, refresh=H, ttl=TTL)
    assert (row.node, row.previous_node, row.changed_at, row.fingerprint, row.held) == (
        "gpu-node-200",
        "gpu-node-100",
        later,
        "new1",
        None,
    )
    book = book_of([row])
    # the same claims again change nothing: no flip back and forth between passes
    assert learn(book, list(reversed(claims)), now=later + timedelta(minutes=1), refresh=H, ttl=TTL) == []


def test_refresh_is_a_tenth_of_the_ttl_at_most_an_hour() -> None:
    assert refresh_every(TTL) == H
    assert refresh_every(timedelta(minutes=30)) == timedelta(minutes=3)
