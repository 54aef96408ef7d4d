"""Learned aliases under a conflict: a move away from an alias in force waits for a second alert (another
fingerprint) or the Prometheus lookup; an address nobody holds is still learned from one alert."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.pipeline.aliases import Held, LearnedAlias, Sighting, active, learn
from alertrouter.pipeline.nodes import NodeClaim

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
H = timedelta(hours=1)
TTL = timedelta(days=7)
SEVEN = LearnedAlias("10.0.0.7", "gpu-node-07", T0, T0, "GPUXidError", "dcgm07")
BOOK = {SEVEN.address: SEVEN}


def seen(node: str, fp: str, at: datetime, alertname: str = "NodeFilesystemSpaceFillingUp") -> Sighting:
    return Sighting(NodeClaim("10.0.0.7", node), fp, alertname, at)


def test_one_alert_claiming_another_node_is_held_not_applied() -> None:
    now = T0 + 10 * MIN
    (row,) = learn(BOOK, [seen("gpu-node-08", "attack", now)], now=now, refresh=H, ttl=TTL)
    assert (row.node, row.last_seen, row.previous_node, row.changed_at) == ("gpu-node-07", T0, None, None)
    assert row.held == Held("gpu-node-08", "NodeFilesystemSpaceFillingUp", "attack", now)
    assert active({row.address: row}, now=now, ttl=TTL) == {"10.0.0.7": "gpu-node-07"}
    # the next passes change nothing: held since the first, written once
    book = {row.address: row}
    assert learn(book, [seen("gpu-node-08", "attack", now)], now=now + 5 * MIN, refresh=H, ttl=TTL) == []


def test_a_second_alert_agreeing_moves_it() -> None:
    now = T0 + 10 * MIN
    (held,) = learn(BOOK, [seen("gpu-node-08", "attack", now)], now=now, refresh=H, ttl=TTL)
    later = now + 3 * MIN
    claims = [seen("gpu-node-08", "attack", now), seen("gpu-node-08", "dcgm08", later, "GPUXidError")]
    (row,) = learn({held.address: held}, claims, now=later, refresh=H, ttl=TTL)
    assert (row.node, row.previous_node, row.changed_at, row.held) == ("gpu-node-08", "gpu-node-07", later, None)
    assert (row.alertname, row.fingerprint, row.first_seen, row.last_seen) == ("GPUXidError", "dcgm08", T0, later)


def test_the_same_alert_twice_is_not_a_second_alert() -> None:
    now = T0 + 10 * MIN
    claims = [seen("gpu-node-08", "attack", now), seen("gpu-node-08", "attack", now)]
    (row,) = learn(BOOK, claims, now=now, refresh=H, ttl=TTL)
    assert (row.node, row.held is not None) == ("gpu-node-07", True)


def test_the_lookup_naming_the_same_node_moves_it_and_another_name_does_not() -> None:
    now = T0 + 10 * MIN
    claim = [seen("gpu-node-08", "attack", now)]
    (kept,) = learn(BOOK, claim, now=now, refresh=H, ttl=TTL, confirmed={"10.0.0.7": "gpu-node-09"})
    assert (kept.node, kept.held is not None) == ("gpu-node-07", True)
    (row,) = learn(BOOK, claim, now=now, refresh=H, ttl=TTL, confirmed={"10.0.0.7": "gpu-node-08"})
    assert (row.node, row.previous_node, row.held) == ("gpu-node-08", "gpu-node-07", None)


def test_an_address_nobody_holds_is_learned_from_one_alert() -> None:
    now = T0 + TTL  # gpu-node-07's alias expired: the address is nobody's
    (row,) = learn(BOOK, [seen("gpu-node-08", "attack", now)], now=now, refresh=H, ttl=TTL)
    assert (row.node, row.previous_node, row.changed_at, row.held) == ("gpu-node-08", "gpu-node-07", now, None)
    (new,) = learn({}, [seen("gpu-node-08", "attack", now)], now=now, refresh=H, ttl=TTL)
    assert (new.node, new.held) == ("gpu-node-08", None)


def test_a_held_move_is_let_go_when_its_alert_leaves_or_the_node_claims_it_again() -> None:
    now = T0 + 10 * MIN
    (held,) = learn(BOOK, [seen("gpu-node-08", "attack", now)], now=now, refresh=H, ttl=TTL)
    book = {held.address: held}
    # the attack alert is gone from the live alerts: no claim on the address at all
    (gone,) = learn(book, [], now=now + H, refresh=H, ttl=TTL, addresses=["10.0.0.7"])
    assert gone == SEVEN
    # gpu-node-07's own alert fires again, after the attack's: the latest claim is the name in force
    back = [seen("gpu-node-08", "attack", now), seen("gpu-node-07", "dcgm07", now + MIN, "GPUXidError")]
    (again,) = learn(book, back, now=now + MIN, refresh=H, ttl=TTL)
    assert (again.node, again.held, again.last_seen) == ("gpu-node-07", None, T0)


def test_while_held_the_name_in_force_is_re_confirmed_by_its_own_alerts() -> None:
    """Else one alert, kept firing for the TTL, would outlive the alias and be learned from alone."""
    now = T0 + 10 * MIN
    claims = [seen("gpu-node-07", "dcgm07", T0, "GPUXidError"), seen("gpu-node-08", "attack", now)]
    (held,) = learn(BOOK, claims, now=now, refresh=H, ttl=TTL)
    assert (held.last_seen, held.held is not None) == (T0, True)
    (row,) = learn({held.address: held}, claims, now=T0 + 2 * H, refresh=H, ttl=TTL)
    assert (row.node, row.last_seen, row.fingerprint) == ("gpu-node-07", T0 + 2 * H, "dcgm07")
    assert row.held == held.held  # still held, since the first time
