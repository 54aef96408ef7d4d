"""Path and query parameters that cannot be read answer a 400 naming the parameter, shaped as the API's
own 400s (FastAPI's default was a 422), a page on the console; U+0000 in any of them is such a 400 on
both stores, where PostgreSQL's lookup failed as a store error (a 503, an outage logged)."""

from __future__ import annotations

import logging

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
    ("url", "detail"),
    [
        (
            "/api/v1/incidents?offset=ten",
            "offset: Input should be a valid integer, unable to parse string as an integer",
        ),
        ("/api/v1/incidents?limit=1.5", "limit: Input should be a valid integer, unable to parse string as an integer"),
        ("/api/v1/incidents?status=open", "status: String should match pattern '^(firing|resolved)$'"),
        ("/api/v1/alerts?status=bogus", "status: String should match pattern '^(firing|resolved)$'"),
        (
            "/api/v1/incidents/seven",
            "incident_id: Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            "/api/v1/raw-events?before_id=x",
            "before_id: Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            "/api/v1/notifications?incident=x",
            "incident: Input should be a valid integer, unable to parse string as an integer",
        ),
        ("/api/v1/silences?expired=maybe", "expired: Input should be a valid boolean, unable to interpret input"),
    ],
)
async def test_a_parameter_that_cannot_be_read_is_a_400_shaped_like_the_apis_own(
    app: App, url: str, detail: str
) -> None:
    r = await app.client.get(url, headers=TOKEN)
    assert r.status_code == 400, r.text  # FastAPI's default was a 422 with a list of pydantic errors
    assert r.json() == {"detail": detail}


async def test_a_console_parameter_that_cannot_be_read_is_a_400_page(app: App) -> None:
    await app.login()
    for url, named in [("/incidents?status=bogus", "status"), ("/incidents/seven", "incident_id")]:
        r = await app.client.get(url)
        assert r.status_code == 400, (url, r.text)
        assert r.headers["content-type"].startswith("text/html")
        assert f"The address could not be read: {named}:" in r.text


@pytest.mark.parametrize(
    ("method", "url", "named"),
    [
        ("GET", "/api/v1/alerts/%00", "fingerprint"),
        ("GET", "/api/v1/alerts/gpu%00node", "fingerprint"),
        ("GET", "/api/v1/notifications?channel=%00", "channel"),
        ("GET", "/api/v1/notifications?receiver=oncall%00", "receiver"),
        ("GET", "/api/v1/alerts?filter=node%3D%22%00%22", "filter"),
        ("GET", "/api/v1/incidents?x%00y=1", "'x\\x00y'"),
        ("DELETE", "/api/v1/silences/%00", "silence_id"),
        ("POST", "/api/v1/deliveries/1/retry%00", "action"),
    ],
)
async def test_nul_in_an_api_parameter_is_a_400_naming_it_and_no_outage(
    app: App, method: str, url: str, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    r = await app.client.request(method, url, headers=TOKEN)
    assert r.status_code == 400, r.text
    assert r.json() == {"detail": f"{named}: {NUL}"}
    assert _store_errors(app) == 0
    assert "store unavailable" not in caplog.text


async def test_nul_in_a_console_parameter_is_a_400_page_and_no_outage(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    csrf = await app.login()
    for url, named in [
        ("/incidents?node=%00", "node"),
        ("/incidents?severity=critical%00", "severity"),
        ("/incidents?region=%00north", "region"),
    ]:
        r = await app.client.get(url)
        assert r.status_code == 400, (url, r.text)
        assert r.headers["content-type"].startswith("text/html")
        assert f"The address could not be read: {named}: {NUL}" in r.text
    expire = await app.client.post("/silences/%00/expire", data={"csrf": csrf})
    assert expire.status_code == 400, expire.text
    assert f"silence_id: {NUL}" in expire.text
    assert _store_errors(app) == 0
    assert "store unavailable" not in caplog.text
    assert (await app.client.get("/incidents?node=gpu-node-07")).status_code == 200
