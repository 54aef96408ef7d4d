"""JSON columns read back (alertrouter.store.db.json_loads): the values JSON holds, with the short string
values of an object shared between rows, through both drivers."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from sqlalchemy import insert, select

from alertrouter.store import Database
from alertrouter.store.db import SHARED_MAX, json_dumps, json_loads, shared_values
from alertrouter.store.handles import alerts_t
from support.rows import alert
from support.scenario import dcgm_labels

DOCUMENTS: list[Any] = [
    dcgm_labels("10.0.0.7", "gpu-node-07", 3),
    {"summary": {"units": ["0", "1"], "count": 2}, "inhibited_by": None, "n": 1.5, "ok": True},
    {"note": 'ünï "q"', "empty": "", "long": "x" * (SHARED_MAX + 1)},
    ["GPUHighTemp", "GPUHighTemp"],
    "GPUHighTemp",
    None,
    {},
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_reads_back_what_was_written(document: Any) -> None:
    text = json_dumps(document)
    assert json_loads(text) == orjson.loads(text) == document
    assert json_loads(text.encode()) == document


def test_short_values_of_separate_rows_are_one_string() -> None:
    node07 = [json_loads(json_dumps(dcgm_labels("10.0.0.7", "gpu-node-07", g))) for g in range(8)]
    first = node07[0]
    for other in node07[1:]:
        for name in ("modelName", "job", "severity", "Hostname", "instance", "DCGM_FI_DRIVER_VERSION"):
            assert other[name] is first[name]
    # what differs stays different
    assert {labels["UUID"] for labels in node07} == {f"GPU-gpu-node-07-{g}" for g in range(8)}


def test_long_values_and_nested_objects_are_kept_as_read() -> None:
    long = "y" * (SHARED_MAX + 1)
    a, b = (json_loads(json_dumps({"description": long, "summary": {"node": "gpu-node-07"}})) for _ in range(2))
    assert a == b
    assert a["description"] is not b["description"]
    assert a["summary"]["node"] is not b["summary"]["node"]


async def test_labels_read_from_the_store_share_their_values(db: Database) -> None:
    rows = [
        alert(f"{g:016x}", labels=dcgm_labels("10.0.0.7", "gpu-node-07", g), annotations={"summary": "hot"})
        for g in range(4)
    ]
    async with db.write() as s:
        await s.execute(insert(alerts_t), rows)
        await s.commit()
    async with db.read() as s:
        read = (
            await s.execute(select(alerts_t.c.labels, alerts_t.c.annotations).order_by(alerts_t.c.fingerprint))
        ).all()
    assert [labels for labels, _ in read] == [r["labels"] for r in rows]
    assert len({id(labels["modelName"]) for labels, _ in read}) == 1
    assert len({id(notes["summary"]) for _, notes in read}) == 1


def test_shared_values_keeps_every_label_and_shares_the_short_values() -> None:
    parsed = [orjson.loads(json_dumps(dcgm_labels("10.0.0.7", "gpu-node-07", g))) for g in range(2)]
    assert parsed[0]["modelName"] is not parsed[1]["modelName"]  # what a parser makes
    shared = [shared_values(labels) for labels in parsed]
    assert shared == parsed
    assert shared[0]["modelName"] is shared[1]["modelName"]
    assert shared_values({}) == {}
