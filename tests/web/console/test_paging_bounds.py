"""Paging parameters past what the stores hold: `offset` of 2^63 and more (asyncpg refused it, a 503 and
an outage logged on PostgreSQL; SQLite's driver overflowed, a 500) and `limit` out of its range answer a
400 naming the parameter and its range, on both stores and every paged list of the API."""

from __future__ import annotations

import pytest

from .conftest import TOKEN, App

MAX_OFFSET = 2**63 - 1  # the largest OFFSET both stores take (PostgreSQL BIGINT, SQLite INTEGER)
OFFSET_RANGE = f"offset: must be an integer from 0 to {MAX_OFFSET}"
LIMIT_RANGE = "limit: must be an integer from 1 to 1000"
PAGED = ["/api/v1/alerts", "/api/v1/incidents", "/api/v1/nodes", "/api/v1/notifications"]
LIMITED = [*PAGED, "/api/v1/raw-events", "/api/v1/outbox/quarantined"]


def _store_errors(app: App) -> float:
    return sum(
        sample.value
        for metric in app.runtime.metrics.db_errors.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


@pytest.mark.parametrize("path", PAGED)
async def test_an_offset_past_what_the_stores_hold_is_a_400_naming_its_range(
    app: App, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    for value in (2**63, 2**64, 10**22, -1):
        r = await app.client.get(f"{path}?offset={value}", headers=TOKEN)
        assert r.status_code == 400, (value, r.status_code, r.text)
        assert r.json() == {"detail": OFFSET_RANGE}
    largest = await app.client.get(f"{path}?offset={MAX_OFFSET}", headers=TOKEN)
    assert largest.status_code == 200, largest.text  # the largest offset both stores take: an empty page
    assert largest.json()["offset"] == MAX_OFFSET
    assert _store_errors(app) == 0
    assert "store unavailable" not in caplog.text


@pytest.mark.parametrize("path", LIMITED)
async def test_a_limit_out_of_range_is_a_400_naming_its_range(app: App, path: str) -> None:
    for value in (0, 1001, 2**63, 10**22):
        r = await app.client.get(f"{path}?limit={value}", headers=TOKEN)
        assert r.status_code == 400, (value, r.status_code, r.text)
        assert r.json() == {"detail": LIMIT_RANGE}
    assert (await app.client.get(f"{path}?limit=1000", headers=TOKEN)).status_code == 200
    assert _store_errors(app) == 0
