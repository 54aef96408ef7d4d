"""`EngineLease` on a real store: one holder at a time, read only when it may have gone elsewhere,
given up at shutdown; the `alertrouter_engine_leader` gauge follows it."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.engine.lease import EngineLease
from alertrouter.metrics import Metrics
from alertrouter.store import Database
from support.scenario import T0

S = timedelta(seconds=1)
TTL = 15 * S


async def held_by_other(db: Database, lease: EngineLease, now: object) -> bool:
    async with db.read() as session:
        return await lease.held_by_other(session, now)  # type: ignore[arg-type]


async def test_one_holder_at_a_time_until_it_runs_out_or_is_given_up(db: Database) -> None:
    metrics = Metrics()
    a = EngineLease(db, holder="replica-a", ttl=TTL, metrics=metrics)
    b = EngineLease(db, holder="replica-b", ttl=TTL)
    done: list[str] = []

    async def work(session: object) -> None:
        done.append("a")

    assert await a.under(T0, work)
    a.taken()
    assert done == ["a"]
    assert metrics.registry.get_sample_value("alertrouter_engine_leader") == 1
    assert not await b.under(T0 + 5 * S, None)
    assert await held_by_other(db, b, T0 + 5 * S)
    assert not await b.under(T0 + 14 * S, None)  # still a's, for its 15 s
    assert await b.under(T0 + 15 * S, None)  # run out: b takes it
    assert not await a.under(T0 + 16 * S, None)
    assert not a.leader
    assert metrics.registry.get_sample_value("alertrouter_engine_leader") == 0
    b.taken()
    await b.release(T0 + 17 * S)
    assert await a.under(T0 + 17 * S, None)  # given up: no wait for it to run out


async def test_fresh_for_a_third_of_its_time_since_renewed_here(db: Database) -> None:
    a = EngineLease(db, holder="replica-a", ttl=TTL)
    assert not a.fresh(T0)
    assert a.renewal_due(T0)
    assert await a.under(T0, None)
    assert not a.fresh(T0)  # renewed, but not yet known to be the leader's: no pass committed under it
    a.taken()
    assert a.fresh(T0 + 4 * S)
    assert not a.renewal_due(T0 + 4 * S)
    assert not a.fresh(T0 + 5 * S)  # a third of 15 s
    assert a.renewal_due(T0 + 5 * S)
    assert not a.fresh(T0 - 1 * S)  # a clock stepped back proves nothing
    a.doubt()  # a pass failed: read it again before the next one's work
    assert not a.fresh(T0 + 1 * S)
    assert not await held_by_other(db, a, T0 + 1 * S)  # read, and it is still a's own
