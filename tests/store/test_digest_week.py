"""The week the digest reads (`store.digest.read_week`), on SQLite and PostgreSQL: what overlaps the week
is in, what ended before it or began after it is not, and what happened in it is counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database
from alertrouter.store.digest import read_week
from support.digestweek import WeekDriver

REPO = Path(__file__).resolve().parents[2]
START = datetime(2026, 11, 16, tzinfo=UTC)
END = START + timedelta(days=7)


def key(node: str) -> str:
    """The incident key the shipped `gpu-by-node` rule gives a node's GPUHighTemp."""
    return f'gpu-by-node{{alertname="GPUHighTemp",node="{node}"}}'


def gpu(node: str) -> dict[str, str]:
    return {"alertname": "GPUHighTemp", "Hostname": node, "gpu": "0", "job": "dcgm", "severity": "warning"}


BEFORE, ACROSS, INSIDE, AFTER = gpu("node-before"), gpu("node-across"), gpu("node-inside"), gpu("node-after")


async def seed(db: Database) -> None:
    week = WeekDriver(db, compile_rules(load_ruleset(REPO / "rules", {})), START - timedelta(days=2))
    steps = [
        (START - timedelta(days=2), "fire", BEFORE),
        (START - timedelta(days=2, hours=-1), "resolve", BEFORE),  # over a day before the week
        (START - timedelta(hours=1), "fire", ACROSS),
        (START + timedelta(hours=1), "resolve", ACROSS),  # in the week
        (START + timedelta(days=2), "fire", INSIDE),  # still firing at the end
        (END + timedelta(hours=1), "fire", AFTER),
    ]
    for at, what, labels in steps:
        week.at(at)
        await (week.fire([labels]) if what == "fire" else week.resolve([labels]))
        await week.settle()


async def test_the_week_holds_what_overlaps_it(db: Database) -> None:
    await seed(db)
    async with db.read() as session:
        week = await read_week(session, start=START, end=END)

    nodes = {week.alerts[e.fingerprint][0]["Hostname"] for e in week.episodes}
    assert nodes == {"node-across", "node-inside"}
    assert {e.fingerprint for e in week.episodes} == set(week.alerts)
    assert [week.alerts[e.fingerprint][0] for e in week.episodes if e.closed_at is None] == [INSIDE]
    # two webhooks arrived in the week (ACROSS resolved, INSIDE fired), one alert each
    assert (week.payloads, week.payload_alerts) == (2, 2)
    assert {i.key for i in week.incidents} == {key("node-across"), key("node-inside")}
    # alert events in the week: ACROSS resolved, INSIDE fired
    assert week.changes == {"firing": 1, "resolved": 1}
    # ACROSS's first message went out before the week, its resolved one in it; BEFORE's and AFTER's not
    assert [(o.reason, o.incident_key) for o in week.outbox] == [
        ("resolved", key("node-across")),
        ("first", key("node-inside")),
    ]
    assert all(START <= o.created_at < END for o in week.outbox)
    assert [o.message["headline"] for o in week.outbox] == [
        "node-across: GPUHighTemp on 1/8 GPUs",
        "node-inside: GPUHighTemp on 1/8 GPUs",
    ]
    assert sum(week.deliveries.values()) == 0  # nothing was delivered: no worker ran


async def test_an_empty_week_reads_empty(db: Database) -> None:
    async with db.read() as session:
        week = await read_week(session, start=START, end=END)
    assert (week.episodes, week.alerts, week.outbox, week.incidents) == ([], {}, [], [])
    assert (week.payloads, week.payload_alerts, week.changes, week.escalations) == (0, 0, {}, {})
