"""The engine's read of acknowledged incidents, made at every pass (acknowledgements come from people, on
any replica): the acknowledged ones among the incidents it holds (firing, or resolved since the given
time), on SQLite and PostgreSQL, and read from their own index rather than by scanning every firing
incident (a quarter of a pass's time with 30,000 of them)."""

from __future__ import annotations

from datetime import datetime, timedelta

from alertrouter.store import Database, bulk
from alertrouter.store.handles import incidents_t
from alertrouter.store.incidents import acknowledged_keys, load_acknowledged
from support.rows import T0, acknowledgement_cases, incident

SINCE = T0 - timedelta(hours=1)


async def test_the_acknowledged_among_the_firing_and_the_recently_resolved(db: Database) -> None:
    rows, found = acknowledgement_cases(SINCE)
    async with db.write() as s:
        await bulk.insert(s, incidents_t, rows)
        await s.commit()
    async with db.read() as s:
        acked = await load_acknowledged(s, resolved_since=SINCE)
    assert acked == found


async def test_the_read_uses_the_index_of_acknowledged_incidents_on_sqlite(db: Database) -> None:
    if db.dialect != "sqlite":
        return  # PostgreSQL's planner chooses by its statistics; SQLite's by the query's shape
    async with db.write() as s:  # with many firing incidents, none acknowledged, as in a storm
        await bulk.insert(s, incidents_t, [incident(f"n{i}", "firing", T0, False) for i in range(200)])
        await s.commit()
    compiled = acknowledged_keys(SINCE).compile(dialect=db.engine.dialect, compile_kwargs={"render_postcompile": True})
    async with db.read() as s:
        conn = await s.connection()
        values = [compiled.params[name] for name in compiled.positiontup or ()]
        params = tuple(str(v) if isinstance(v, datetime) else v for v in values)
        plan = (await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", params)).all()
    steps = [row[-1] for row in plan]
    assert any("USING INDEX ix_incidents_acknowledged" in step for step in steps), steps
