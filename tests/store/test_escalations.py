"""The escalation chains in the store (SQLite and PostgreSQL): a step is recorded once, a stop once, the
week's counts per step for the digest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.pipeline.escalation import Chain
from alertrouter.store import Database
from alertrouter.store import escalations as store

T0 = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
M = timedelta(minutes=1)


def chain(key: str, step: int = 0, at: datetime = T0) -> Chain:
    return Chain(key, "crit", at, step, at + (step + 1) * 10 * M)


async def test_a_step_is_recorded_once_and_a_chain_stopped_once(db: Database) -> None:
    async with db.write() as s:
        await store.start_chains(s, [chain("a"), chain("b")], {"crit": 3}, T0)
        await s.commit()
    async with db.write() as s:
        assert await store.save_step(s, chain("a"), chain("a", 1), {"event": "step", "step": 1}, T0 + 10 * M)
        # a second holder that still thinks step 1 is next records nothing
        assert not await store.save_step(s, chain("a"), chain("a", 1), {"event": "step", "step": 1}, T0 + 10 * M)
        await store.stop_chain(s, "b", "acknowledged", "ana", T0 + 5 * M)
        await store.stop_chain(s, "b", "resolved", None, T0 + 6 * M)  # already stopped: unchanged
        await s.commit()
    async with db.read() as s:
        active = await store.load_active(s)
        assert list(active) == ["a"]
        assert active["a"].next_step == 1
        assert active["a"].next_at == T0 + 20 * M
        b = await store.load_escalation(s, "b")
        assert b is not None
        assert (b.stopped, b.stopped_by, b.stopped_at) == ("acknowledged", "ana", T0 + 5 * M)
        assert [h["event"] for h in b.history] == ["started", "acknowledged"]
        a = await store.load_escalation(s, "a")
        assert a is not None
        assert [h["event"] for h in a.history] == ["started", "step"]
        assert await store.count_active(s) == 1


async def test_a_new_occurrence_starts_a_new_chain_and_the_old_one_is_kept(db: Database) -> None:
    async with db.write() as s:
        await store.start_chains(s, [chain("a")], {"crit": 3}, T0)
        await store.stop_chain(s, "a", "resolved", None, T0 + M)
        await store.start_chains(s, [chain("a", at=T0 + 2 * M)], {"crit": 3}, T0 + 2 * M)
        await store.start_chains(s, [chain("a", at=T0 + 3 * M)], {"crit": 3}, T0 + 3 * M)  # supersedes
        await s.commit()
    async with db.read() as s:
        row = await store.load_escalation(s, "a")
        assert row is not None
        assert (row.started_at, row.stopped, row.next_step) == (T0 + 3 * M, None, 0)
        assert list(await store.load_active(s)) == ["a"]
        counts = await store.step_counts(s, since=T0, until=T0 + timedelta(days=1))
    assert counts == {0: 3}


async def test_the_weeks_counts_per_step(db: Database) -> None:
    async with db.write() as s:
        await store.start_chains(s, [chain(k) for k in "abcd"], {"crit": 3}, T0)
        await store.start_chains(s, [chain("old", at=T0 - timedelta(days=8))], {"crit": 3}, T0)
        for key, steps in (("a", 1), ("b", 2), ("c", 2)):
            for step in range(steps):
                assert await store.save_step(s, chain(key, step), chain(key, step + 1), {"step": step + 1}, T0)
        await s.commit()
    async with db.read() as s:
        counts = await store.step_counts(s, since=T0 - timedelta(days=1), until=T0 + timedelta(days=6))
    assert counts == {0: 4, 1: 3, 2: 2}  # four started; three reached step 1; two step 2
