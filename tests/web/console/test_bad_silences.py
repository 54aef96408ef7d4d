"""Silences the stores or Python's datetime cannot hold (U+0000, a duration past year 9999, a time
without a zone): a 400 naming the field, from the API and the console's form, on both stores, and no
outage logged."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from .conftest import TOKEN, App

NUL = "contains U+0000 (NUL), which is not allowed"


def _store_errors(app: App) -> float:
    return sum(
        sample.value
        for metric in app.runtime.metrics.db_errors.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"matchers": ['node="\x00"'], "duration": "1h"}, f"matchers: {NUL}"),
        ({"matchers": ['node="gpu-node-07\x00"'], "duration": "1h"}, f"matchers: {NUL}"),
        ({"matchers": ['{"no\x00de"="gpu-node-07"}'], "duration": "1h"}, f"matchers: {NUL}"),
        ({"matchers": ['node="gpu-node-07"'], "duration": "1h", "comment": "swap\x00"}, f"comment: {NUL}"),
        (
            {"matchers": ['node="gpu-node-07"'], "duration": "1h", "created_by": "\x00"},
            "created_by: Extra inputs are not permitted",
        ),
        ({"matchers": ['node="gpu-node-07"'], "duration": "1000000000h"}, "duration: at most 90 days"),
        ({"matchers": ['node="gpu-node-07"'], "duration": "99999999999999999999d"}, "duration: at most 90 days"),
        (
            {"matchers": ['node="gpu-node-07"'], "duration": "2h", "starts_at": "2030-01-01T00:00:00"},
            "starts_at: timestamp without a time zone (RFC 3339 needs Z or an offset)",
        ),
        (
            {"matchers": ['node="gpu-node-07"'], "ends_at": "2030-01-01T00:00:00"},
            "ends_at: timestamp without a time zone (RFC 3339 needs Z or an offset)",
        ),
        (
            {"matchers": ['node="gpu-node-07"'], "starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-01-02T00:00:00"},
            "ends_at: timestamp without a time zone (RFC 3339 needs Z or an offset)",
        ),
        (
            {"matchers": ['node="gpu-node-07"'], "duration": "2h", "starts_at": "9999-12-31T23:00:00Z"},
            "starts_at: out of range (timestamps must be from 1970-01-01 to before 9000-01-01 UTC)",
        ),
    ],
)
async def test_a_silence_the_stores_cannot_hold_is_a_400_naming_the_field(
    app: App, body: dict[str, Any], detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    r = await app.client.post("/api/v1/silences", json=body, headers=TOKEN)
    assert r.status_code == 400, r.text
    assert r.json() == {"detail": detail}
    assert (await app.client.get("/api/v1/silences?expired=true", headers=TOKEN)).json() == []
    assert _store_errors(app) == 0
    assert "store unavailable" not in caplog.text


async def test_a_silence_with_a_zone_and_a_start_ahead_is_still_made(app: App) -> None:
    body = {"matchers": ['node="gpu-node-07"'], "starts_at": "2030-01-01T08:00:00+08:00", "duration": "90d"}
    r = await app.client.post("/api/v1/silences", json=body, headers=TOKEN)
    assert r.status_code == 201, r.text
    assert datetime.fromisoformat(r.json()["starts_at"]) == datetime(2030, 1, 1, tzinfo=UTC)
    assert r.json()["state"] == "pending"


@pytest.mark.parametrize(
    ("form", "shown"),
    [
        ({"matchers": 'node="gpu-node-07"', "duration": "1000000000h"}, "duration: at most 90 days"),
        ({"matchers": 'node="gpu-node-07"', "duration": "99999999999999999999d"}, "99999999999999999999d"),
        ({"matchers": 'node="\x00"', "duration": "1h"}, f"matchers: {NUL}"),
        ({"matchers": 'node="gpu-node-07"', "duration": "1h", "comment": "\x00"}, f"comment: {NUL}"),
    ],
)
async def test_the_console_form_refuses_them_too(
    app: App, form: dict[str, str], shown: str, caplog: pytest.LogCaptureFixture
) -> None:
    csrf = await app.login()
    r = await app.client.post("/silences", data={"csrf": csrf, **form})
    assert r.status_code == 400, r.text
    assert shown in r.text
    assert "/silences?created=" not in r.headers.get("location", "")
    assert (await app.client.get("/api/v1/silences?expired=true", headers=TOKEN)).json() == []
    assert _store_errors(app) == 0
    assert "store unavailable" not in caplog.text
