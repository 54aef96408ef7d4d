"""Ids beyond the stores' INTEGER (2^31 on PostgreSQL, 2^63 on SQLite): the same 404 or 400 on both
stores, for every route with an integer id, and never a store error (503, or a 500 on SQLite)."""

from __future__ import annotations

from typing import Literal

import pytest

from alertrouter.web.ids import MAX_ID

from .conftest import TOKEN, App

OUT_OF_RANGE = [2**31, 2**63, 10**22, -(2**31) - 1, 0]

Method = Literal["GET", "POST"]
# (method, path with {id}, by: "token" (API) or "session" (console form), status, what the answer names)
ROUTES: list[tuple[Method, str, str, int, str]] = [
    ("GET", "/api/v1/incidents/{id}", "token", 404, "no incident {id}"),
    ("POST", "/api/v1/incidents/{id}/ack", "token", 404, "no incident {id}"),
    ("GET", "/api/v1/raw-events/{id}", "token", 404, "no raw event {id}"),
    ("GET", "/api/v1/raw-events?before_id={id}", "token", 400, "before_id"),
    ("GET", "/api/v1/notifications/{id}", "token", 404, "no notification {id}"),
    ("GET", "/api/v1/notifications?incident={id}", "token", 400, "incident"),
    ("POST", "/api/v1/deliveries/{id}/retry", "token", 404, "no delivery {id}"),
    ("POST", "/api/v1/deliveries/{id}/discard", "token", 404, "no delivery {id}"),
    ("GET", "/incidents/{id}", "session", 404, "There is no incident {id}."),
    ("POST", "/incidents/{id}/ack", "session", 404, "There is no incident {id}."),
    ("POST", "/deliveries/{id}/retry", "session", 404, "There is no delivery {id}."),
]


@pytest.mark.parametrize(("method", "path", "by", "status", "names"), ROUTES, ids=[f"{m} {p}" for m, p, *_ in ROUTES])
async def test_an_id_out_of_range_is_not_found_or_a_bad_request_on_both_stores(
    app: App, method: Method, path: str, by: str, status: int, names: str
) -> None:
    csrf = await app.login() if by == "session" else ""
    headers = TOKEN if by == "token" else {}
    errors_before = _store_errors(app)
    for value in [*OUT_OF_RANGE, MAX_ID]:
        url = path.format(id=value)
        if method == "GET":
            r = await app.client.get(url, headers=headers)
        else:
            r = await app.client.post(url, headers=headers, data={"csrf": csrf} if csrf else None)
        if value == MAX_ID:  # the largest id both stores hold: an ordinary lookup that finds nothing
            assert r.status_code in (200, 404, 409), (url, r.status_code, r.text)
            continue
        assert r.status_code == status, (url, r.status_code, r.text)
        assert names.format(id=value) in r.text, (url, r.text)
        if by == "session":
            assert r.headers["content-type"].startswith("text/html")  # the console's page, not JSON
    assert _store_errors(app) == errors_before  # nothing reached the store as a bad parameter


def _store_errors(app: App) -> float:
    return sum(
        sample.value
        for metric in app.runtime.metrics.db_errors.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )
