"""The console's incident list (alertrouter.store.console.list_incidents), read part by part: every page
must be the page of the whole list in its documented order (firing first, storms first among them,
then the most recently changed, newest id first on a tie), with its filters and total, on both stores."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select

from alertrouter.store import Database
from alertrouter.store.console import FilterChoices, IncidentFilter, list_incidents
from alertrouter.store.handles import incidents_t
from support.rows import T0


def incident(i: int, *, status: str, kind: str, minutes: int, region: str) -> dict[str, Any]:
    node = f"gpu-node-{i:03d}"
    return {
        "key": f"{kind}:{i}",
        "kind": kind,
        "rule": "gpu-by-node",
        "status": status,
        "severity": "critical" if i % 3 == 0 else "warning",
        "headline": f"GPUHighTemp on {node}",
        "labels": {"alertname": "GPUHighTemp", "node": node, "region": region},
        "summary": {},
        "parent_key": None,
        "opened_at": T0,
        "active_since": T0,
        "updated_at": T0 + timedelta(minutes=minutes),
        "resolved_at": None if status == "firing" else T0 + timedelta(minutes=minutes),
        "acknowledged_at": None,
        "acknowledged_by": None,
    }


# 40 incidents: both statuses and kinds, several changed in the same minute (the id breaks the tie)
ROWS = [
    incident(
        i,
        status="firing" if i % 4 else "resolved",
        kind="cluster" if i % 7 == 0 else "node",
        minutes=i % 9,
        region="north" if i % 2 else "south",
    )
    for i in range(40)
]


def expected(rows: list[dict[str, Any]]) -> list[str]:
    """The documented order, worked out here from the rows and their ids."""
    ordered = sorted(
        rows,
        key=lambda r: (r["status"] != "firing", r["kind"] != "cluster", -r["updated_at"].timestamp(), -r["id"]),
    )
    return [r["key"] for r in ordered]


@pytest.fixture
async def stored(db: Database) -> list[dict[str, Any]]:
    async with db.write() as s:
        await s.execute(insert(incidents_t), ROWS)
        await s.commit()
        ids = dict((await s.execute(select(incidents_t.c.key, incidents_t.c.id))).all())
    return [{**r, "id": ids[r["key"]]} for r in ROWS]


FILTERS = [
    IncidentFilter(),
    IncidentFilter(status="firing"),
    IncidentFilter(status="resolved"),
    IncidentFilter(kind="cluster"),
    IncidentFilter(region="north"),
    IncidentFilter(status="firing", severity="critical"),
    IncidentFilter(node="gpu-node-00*"),
    IncidentFilter(region="east"),
]


@pytest.mark.parametrize("f", FILTERS, ids=repr)
async def test_every_page_is_that_page_of_the_whole_list(
    db: Database, stored: list[dict[str, Any]], f: IncidentFilter
) -> None:
    def kept(r: dict[str, Any]) -> bool:
        node = r["labels"]["node"]
        return (
            (f.status is None or r["status"] == f.status)
            and (f.kind is None or r["kind"] == f.kind)
            and (f.severity is None or r["severity"] == f.severity)
            and (f.region is None or r["labels"]["region"] == f.region)
            and (f.node is None or node.startswith(f.node.rstrip("*")))
        )

    whole = expected([r for r in stored if kept(r)])
    async with db.read() as s:
        for limit in (1, 3, 7, 50):
            for offset in range(0, len(whole) + 2):
                rows, total = await list_incidents(s, f, limit=limit, offset=offset)
                assert total == len(whole)
                assert [r.key for r in rows] == whole[offset : offset + limit], (limit, offset)


async def test_a_status_or_kind_written_by_no_engine_yet_is_listed_with_the_others(db: Database) -> None:
    rows = [
        incident(1, status="firing", kind="node", minutes=1, region="north"),
        incident(2, status="silenced", kind="node", minutes=5, region="north"),  # neither firing ...
        incident(3, status="resolved", kind="rack", minutes=3, region="north"),  # ... nor a known kind
        incident(4, status="resolved", kind="node", minutes=4, region="north"),
        incident(5, status="firing", kind="cluster", minutes=0, region="north"),
    ]
    async with db.write() as s:
        await s.execute(insert(incidents_t), rows)
        await s.commit()
    async with db.read() as s:
        listed, total = await list_incidents(s, IncidentFilter(), limit=10, offset=0)
    assert total == 5
    assert [r.key for r in listed] == ["cluster:5", "node:1", "node:2", "node:4", "rack:3"]


async def test_filter_menus_are_read_again_only_after_their_ttl_and_meanwhile_answered_as_held(
    db: Database, stored: list[dict[str, Any]]
) -> None:
    now = [1000.0]
    menus = FilterChoices(ttl=30, clock=lambda: now[0])
    first = await menus.get(db)  # none held yet: this one waits for the read
    assert first == {"region": ["north", "south"], "severity": ["critical", "warning"]}
    east = incident(99, status="firing", kind="node", minutes=1, region="east")
    async with db.write() as s:
        await s.execute(insert(incidents_t), [east])
        await s.commit()
    now[0] += 29
    assert (await menus.get(db))["region"] == ["north", "south"]  # within the ttl: as read before
    await menus.settled()
    assert (await menus.get(db))["region"] == ["north", "south"]  # and nothing was read meanwhile
    now[0] += 2
    assert (await menus.get(db))["region"] == ["north", "south"]  # past it: answered as held, read again behind
    await menus.settled()
    assert (await menus.get(db))["region"] == ["east", "north", "south"]
    await menus.stop()


class _Down:
    """A store that is down: every read fails as an unreachable database does."""

    def read(self) -> Any:
        raise ConnectionRefusedError("connection refused")


async def test_filter_menus_held_stay_when_reading_them_again_fails(
    db: Database, stored: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    now = [1000.0]
    menus = FilterChoices(ttl=30, clock=lambda: now[0])
    held = await menus.get(db)
    now[0] += 31
    down: Any = _Down()
    assert await menus.get(down) == held  # the list still answers
    await menus.settled()  # the read behind failed, and said so
    assert "console filter menus not read again" in caplog.text
    east = incident(99, status="firing", kind="node", minutes=1, region="east")
    async with db.write() as s:
        await s.execute(insert(incidents_t), [east])
        await s.commit()
    assert await menus.get(db) == held  # still past the ttl: read again behind, from a store that answers
    await menus.settled()
    assert (await menus.get(db))["region"] == ["east", "north", "south"]
    await menus.stop()


async def test_filter_menus_read_from_a_store_without_incidents_are_not_held(db: Database) -> None:
    now = [1000.0]
    menus = FilterChoices(ttl=30, clock=lambda: now[0])
    assert await menus.read(db) == {"region": [], "severity": []}  # as `serve` reads them on a first start
    async with db.write() as s:
        await s.execute(insert(incidents_t), [incident(1, status="firing", kind="node", minutes=1, region="north")])
        await s.commit()
    now[0] += 1  # well within the ttl: the first incident's region is in the menus all the same
    assert (await menus.get(db))["region"] == ["north"]
    await menus.stop()
