"""`gpus` and `gpu_events` on both stores: a GPU's latest sighting wins, what a later alert lacks is kept,
and an alert episode is one event however often it is recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from alertrouter.store import Database
from alertrouter.store import gpus as store

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


def _gpu(node: str, slot: str, seen: datetime, **extra: Any) -> dict[str, Any]:
    row = {"uuid": "GPU-1", "serial": None, "model": None, "node": node, "slot": slot, "pci_bus_id": None}
    return {**row, "first_seen": seen, "last_seen": seen, **extra}


def _event(at: datetime, fingerprint: str = "a1b2c3d4e5f60718", xid: int | None = 48) -> dict[str, Any]:
    return {
        "uuid": "GPU-1",
        "alertname": "GPUXidError",
        "xid": xid,
        "at": at,
        "node": "gpu-node-07",
        "slot": "3",
        "fingerprint": fingerprint,
    }


async def _record(db: Database, gpus: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    async with db.write() as session:
        await store.record_gpus(session, gpus, events)
        await session.commit()


async def test_latest_sighting_wins_and_known_values_stay(db: Database) -> None:
    first = _gpu("gpu-node-07", "3", T0, serial="1654922007563", model="NVIDIA H100 80GB HBM3", pci_bus_id="0:1B")
    await _record(db, [first], [_event(T0 - timedelta(days=11))])
    later = T0 + timedelta(days=1)
    await _record(db, [_gpu("gpu-node-12", "0", later)], [_event(T0 - timedelta(days=11)), _event(T0)])
    async with db.read() as session:
        row = await store.get_gpu(session, "GPU-1")
        events = await store.events_of(session, ["GPU-1", "GPU-none"])
    assert row is not None
    assert (row.node, row.slot, row.serial, row.model, row.pci_bus_id) == (
        "gpu-node-12",
        "0",
        "1654922007563",
        "NVIDIA H100 80GB HBM3",
        "0:1B",
    )
    assert (row.first_seen, row.last_seen) == (T0, later)
    assert [e.at for e in events["GPU-1"]] == [T0 - timedelta(days=11), T0]  # the re-recorded one is one event
    assert "GPU-none" not in events


async def test_read_gpus_filters_on_the_events(db: Database) -> None:
    await _record(db, [_gpu("gpu-node-07", "3", T0)], [_event(T0, xid=13), _event(T0, "0f0e0d0c0b0a0908", xid=None)])
    async with db.read() as session:
        rows, events, total = await store.read_gpus(session, limit=10, offset=0)
        assert ([r.uuid for r in rows], len(events["GPU-1"]), total) == (["GPU-1"], 2, 1)
        assert await store.matching_uuids(session, xids={48}, alertnames=set()) == set()
        assert await store.matching_uuids(session, xids={13}, alertnames=set()) == {"GPU-1"}
        assert await store.matching_uuids(session, xids=set(), alertnames={"GPUXidError"}) == {"GPU-1"}
        only = store.GpuFilter(xids=frozenset({13}), alertnames=frozenset(), keep=lambda ev: len(ev) > 2)
        assert await store.read_gpus(session, limit=10, offset=0, only=only) == ([], {}, 0)
        keep = store.GpuFilter(xids=frozenset({13}), alertnames=frozenset(), keep=lambda ev: len(ev) == 2)
        rows, _, total = await store.read_gpus(session, limit=10, offset=0, only=keep)
        assert ([r.uuid for r in rows], total) == (["GPU-1"], 1)


async def test_a_fleet_wide_burst_in_one_commit(db: Database) -> None:
    # An Xid on every GPU of 40 nodes at once: more GPUs than one multi-row VALUES may bind on older SQLite.
    gpus = [_gpu(f"gpu-node-{n:02d}", str(g), T0) | {"uuid": f"GPU-{n}-{g}"} for n in range(40) for g in range(8)]
    events = [_event(T0) | {"uuid": row["uuid"]} for row in gpus]
    await _record(db, gpus, events)
    async with db.read() as session:
        assert await store.count_gpus(session) == 320
        assert sum(len(e) for e in (await store.events_of(session, [r["uuid"] for r in gpus])).values()) == 320
