"""What alertrouter promises Alertmanager, checked against real processes on SQLite and PostgreSQL.

- a 2xx means committed: `kill -9` right after it loses nothing;
- a store that is down or locked gives 503 with Retry-After (Alertmanager retries), never a 4xx;
- the same notification twice, concurrently, or from both members of an HA pair is stored once;
- input that can never be valid is a 4xx naming the field, and leaves the store unchanged.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from alertrouter.fingerprints import fingerprint
from e2e.harness import (
    AUTH,
    TOKEN,
    Router,
    Store,
    gpu_labels,
    launch_router,
    parse_time,
    postable_alert,
    wait_for,
    webhook,
    webhook_alert,
)
from support import pg
from support.need import need

pytestmark = pytest.mark.e2e

GPUS = range(8)
BASE = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


def node_webhook(node: int, *, starts_at: datetime, ends_at: datetime | None = None, **kw: Any) -> dict[str, Any]:
    """Alertmanager's notification for one node's group: all 8 GPUs too hot (or resolved)."""
    return webhook([webhook_alert(gpu_labels(node, g), starts_at=starts_at, ends_at=ends_at) for g in GPUS], **kw)


def retry_after(r: httpx.Response) -> int:
    value = r.headers.get("retry-after", "")
    assert value.isdigit(), f"Retry-After: {value!r}"
    assert int(value) > 0
    return int(value)


# --- kill -9 right after a 2xx --------------------------------------------------------------------


def test_kill9_after_2xx_loses_nothing(store: Store, start_router: Callable[..., Router]) -> None:
    """Three rounds of 20 webhooks back-to-back, each ended by kill -9 right after the last 2xx."""
    expected: dict[str, dict[str, Any]] = {}  # fingerprint -> what must be stored
    ended, refire = BASE + timedelta(hours=1), BASE + timedelta(hours=2)
    # One webhook per node: (node, startsAt, endsAt or None while firing, episodes afterwards).
    rounds: list[Sequence[tuple[int, datetime, datetime | None, int]]] = [
        [(n, BASE + timedelta(minutes=n), None, 1) for n in range(20)],  # new alerts only
        [(n, BASE + timedelta(minutes=n), ended, 1) for n in range(10)]  # resolves of earlier alerts,
        + [(n, BASE, None, 1) for n in range(20, 30)],  # mixed with new ones
        [(n, refire, None, 2) for n in range(10)]  # the resolved ones fire again: a second episode
        + [(n, BASE, None, 1) for n in range(30, 40)],
    ]

    router = start_router(store)
    for number, hooks in enumerate(rounds):
        for node, starts_at, ends_at, episodes in hooks:
            r = router.post_webhook(node_webhook(node, starts_at=starts_at, ends_at=ends_at))
            assert r.status_code == 200, r.text
            for g in GPUS:
                labels = gpu_labels(node, g)
                expected[fingerprint(labels)] = {
                    "labels": labels,
                    "status": "resolved" if ends_at else "firing",
                    "starts_at": starts_at,
                    "resolved_by": "source" if ends_at else None,
                    "episodes": episodes,
                }
        router.proc.kill9()  # right after the last 2xx: no graceful shutdown, nothing flushed

        router = start_router(store)
        stored = router.by_fingerprint()
        assert set(stored) == set(expected), f"round {number}: alerts lost or invented after kill -9"
        for fp, want in expected.items():
            got = stored[fp]
            assert got["labels"] == want["labels"], fp
            assert got["status"] == want["status"], (number, fp)
            assert parse_time(got["starts_at"]) == want["starts_at"], (number, fp)
            assert got["resolved_by"] == want["resolved_by"], (number, fp)
            assert got["episodes"] == want["episodes"], (number, fp)
    assert len(expected) == 40 * len(GPUS)


# --- the store is down: 503 and Retry-After, then recovery ---------------------------------------


@pytest.mark.postgres
def test_postgres_down_is_503_with_retry_after_then_recovers(
    pg_store: Store, start_router: Callable[..., Router]
) -> None:
    assert pg_store.pg_name is not None
    router = start_router(pg_store)
    assert router.post_webhook(node_webhook(1, starts_at=BASE)).status_code == 200
    hook = node_webhook(2, starts_at=BASE)
    push = [postable_alert(gpu_labels(3, g), starts_at=BASE) for g in GPUS]

    pg.set_connections_allowed(pg_store.pg_name, False)
    try:
        r = router.post_webhook(hook)
        assert r.status_code == 503, r.text
        retry_after(r)
        r = router.post_api_v2(push)
        assert r.status_code == 503, r.text
        retry_after(r)
        assert router.http.get("/readyz").status_code == 503
    finally:
        pg.set_connections_allowed(pg_store.pg_name, True)

    assert router.http.get("/readyz").status_code == 200
    assert {a["labels"]["Hostname"] for a in router.alerts()} == {"gpu-node-01"}, "stored while answering 503"
    assert router.metric("alertrouter_webhooks_received_total", result="unavailable") == 2

    # What Alertmanager does next: retry the same notification.
    assert router.post_webhook(hook).status_code == 200
    assert router.post_api_v2(push).status_code == 200
    stored = router.alerts()
    assert len(stored) == 3 * len(GPUS)
    assert {a["labels"]["Hostname"] for a in stored} == {"gpu-node-01", "gpu-node-02", "gpu-node-03"}
    assert all(a["status"] == "firing" for a in stored)


@pytest.mark.postgres
def test_read_api_is_503_not_500_while_postgres_down(pg_store: Store, start_router: Callable[..., Router]) -> None:
    """The read API should say "unavailable, retry" like /readyz and ingest do, not crash with a 500."""
    assert pg_store.pg_name is not None
    router = start_router(pg_store)
    assert router.post_webhook(node_webhook(1, starts_at=BASE)).status_code == 200
    fp = fingerprint(gpu_labels(1, 0))

    pg.set_connections_allowed(pg_store.pg_name, False)
    try:
        # Fresh connections: after an unhandled error uvicorn drops the connection it answered on.
        listed = httpx.get(f"{router.url}/api/v1/alerts", headers=AUTH, timeout=30)
        one = httpx.get(f"{router.url}/api/v1/alerts/{fp}", headers=AUTH, timeout=30)
    finally:
        pg.set_connections_allowed(pg_store.pg_name, True)
    assert (listed.status_code, one.status_code) == (503, 503)


def test_sqlite_locked_longer_than_store_timeout_is_503(
    sqlite_store: Store, start_router: Callable[..., Router]
) -> None:
    """Another process holds SQLite's write lock for longer than alertrouter is willing to wait."""
    assert sqlite_store.sqlite_path is not None
    router = start_router(sqlite_store, env={"ALERTROUTER_STORE_TIMEOUT": "2s"})
    assert router.post_webhook(node_webhook(1, starts_at=BASE)).status_code == 200
    hook = node_webhook(2, starts_at=BASE)
    push = [postable_alert(gpu_labels(3, g), starts_at=BASE) for g in GPUS]

    locker = sqlite3.connect(sqlite_store.sqlite_path, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")  # held until both answers are in: longer than any timeout
        r = router.post_webhook(hook)
        assert r.status_code == 503, r.text
        retry_after(r)
        r = router.post_api_v2(push)
        assert r.status_code == 503, r.text
        retry_after(r)
    finally:
        locker.rollback()
        locker.close()

    assert {a["labels"]["Hostname"] for a in router.alerts()} == {"gpu-node-01"}
    assert router.post_webhook(hook).status_code == 200
    assert router.post_api_v2(push).status_code == 200
    assert router.total() == 3 * len(GPUS)


# --- idempotency ------------------------------------------------------------------------------------


async def _post_concurrently(url: str, bodies: list[bytes]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(bodies))
    async with httpx.AsyncClient(headers=AUTH, timeout=30, limits=limits) as client:
        return await asyncio.gather(*(client.post(url, content=body) for body in bodies))


def _snapshot(router: Router) -> dict[str, Any]:
    """Everything stored about each alert except `last_seen`, which a repeat is allowed to move."""
    out = {}
    for fp in router.by_fingerprint():
        detail = router.detail(fp)
        detail["alert"].pop("last_seen")
        out[fp] = detail
    return out


def test_duplicate_webhooks_concurrently_and_from_ha_twin_store_once(router: Router) -> None:
    url = router.url + "/webhook/alertmanager"
    am0, am1 = "http://alertmanager-0.monitoring:9093", "http://alertmanager-1.monitoring:9093"
    firing = json.dumps(node_webhook(21, starts_at=BASE, external_url=am0)).encode()

    responses = asyncio.run(_post_concurrently(url, [firing] * 10))
    assert [r.status_code for r in responses] == [200] * 10, [r.text for r in responses]
    assert router.total() == len(GPUS)
    for alert in router.alerts():
        assert alert["status"] == "firing"
        assert alert["episodes"] == 1
        detail = router.detail(alert["fingerprint"])
        assert [e["kind"] for e in detail["events"] if e["kind"] != "decision"] == ["firing"]
        assert len(detail["episodes"]) == 1

    # The second Alertmanager of the pair sends the same notification: only externalURL differs.
    # The snapshot is taken once the engine has decided (decisions are stored with the alerts; the
    # engine waits for a pause in ingest, so they may land a moment after the webhooks' answers).
    wait_for(lambda: all(a["decision"] for a in router.alerts()), what="the engine's first decisions")
    before = _snapshot(router)
    twin = json.dumps(node_webhook(21, starts_at=BASE, external_url=am1)).encode()
    assert router.post_webhook(twin).status_code == 200
    assert _snapshot(router) == before

    # Both twins send the resolve at the same moment, five times each.
    ended = BASE + timedelta(minutes=30)
    resolves = [
        json.dumps(node_webhook(21, starts_at=BASE, ends_at=ended, external_url=u)).encode() for u in (am0, am1)
    ]
    responses = asyncio.run(_post_concurrently(url, resolves * 5))
    assert [r.status_code for r in responses] == [200] * 10, [r.text for r in responses]
    assert router.total() == len(GPUS)
    for alert in router.alerts():
        assert (alert["status"], alert["resolved_by"], alert["episodes"]) == ("resolved", "source", 1)
        detail = router.detail(alert["fingerprint"])
        assert [e["kind"] for e in detail["events"] if e["kind"] != "decision"] == ["resolved", "firing"]
        assert len(detail["episodes"]) == 1


# --- bad input: the documented 4xx, the field named, the store unchanged ----------------------------

MAX_BODY = 1024 * 1024  # ALERTROUTER_MAX_BODY_BYTES default
ENDPOINTS = {"webhook": ("/webhook/alertmanager", "alerts"), "api_v2": ("/api/v2/alerts", "")}
BACKENDS = [pytest.param("sqlite"), pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=BACKENDS)
def shared_router(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    """One alertrouter per backend for the bad-input tests, which only read the store or add to it."""
    workdir = tmp_path_factory.mktemp("bad-input")
    pg_name = None
    if request.param == "sqlite":
        store = Store("sqlite", f"sqlite+aiosqlite:///{workdir / 'alertrouter.db'}")
    else:
        problem = pg.available()
        need(problem is None, problem or "")
        pg_name = pg.create_database("alertrouter_e2e")
        store = Store("postgresql", pg.url_for(pg_name), pg_name=pg_name)
    router = launch_router(store, workdir)
    try:
        assert router.post_webhook(node_webhook(1, starts_at=BASE)).status_code == 200  # not an empty store
        yield router
    finally:
        router.close()
        if pg_name is not None:
            pg.drop_database(pg_name)


def _valid_body(endpoint: str, alerts_labels: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    if endpoint == "webhook":
        return webhook([webhook_alert(labels, starts_at=BASE) for labels in alerts_labels])
    return [postable_alert(labels, starts_at=BASE) for labels in alerts_labels]


def _alerts_of(body: Any) -> list[dict[str, Any]]:
    return body["alerts"] if isinstance(body, dict) else body  # type: ignore[no-any-return]


def _label_value_number(body: Any) -> str:
    _alerts_of(body)[0]["labels"]["gpu"] = 4
    return "[0].labels.gpu"


def _labels_missing(body: Any) -> str:
    del _alerts_of(body)[0]["labels"]
    return "[0].labels"


def _label_name_empty(body: Any) -> str:
    """Alertmanager refuses an empty label name; a missing `alertname` it accepts (so does alertrouter)."""
    _alerts_of(body)[0]["labels"][""] = "x"
    return "[0].labels"


def _oversized(body: Any) -> None:
    _alerts_of(body)[0]["annotations"]["description"] = "x" * (MAX_BODY + 64 * 1024)  # otherwise valid


BAD_INPUT: dict[str, tuple[Callable[[Any], str | None], int]] = {
    "label-value-number": (_label_value_number, 400),
    "labels-missing": (_labels_missing, 400),
    "label-name-empty": (_label_name_empty, 400),
}


def _chunks(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), 64 * 1024):
        yield data[i : i + 64 * 1024]


def _stored_state(router: Router) -> list[tuple[str, str, str, int]]:
    return sorted((a["fingerprint"], a["status"], a["updated_at"], a["episodes"]) for a in router.alerts())


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
@pytest.mark.parametrize(
    "case",
    [
        "malformed-json",
        *BAD_INPUT,
        "oversized-with-length",
        "oversized-chunked",
        "wrong-token",
        "no-token",
        "basic-instead-of-bearer",
    ],
)
def test_bad_input_is_4xx_naming_the_field_and_stores_nothing(shared_router: Router, endpoint: str, case: str) -> None:
    path, prefix = ENDPOINTS[endpoint]
    node = 100 + list(ENDPOINTS).index(endpoint)
    body = _valid_body(endpoint, [gpu_labels(node, 0)])
    headers: dict[str, str] = dict(AUTH)
    field = None
    content: bytes | Iterator[bytes]
    if case in BAD_INPUT:
        mutate, expected = BAD_INPUT[case]
        field = mutate(body)
        content = json.dumps(body).encode()
    elif case == "malformed-json":
        expected, content = 400, json.dumps(body).encode()[:-7]
    elif case.startswith("oversized"):
        _oversized(body)
        expected, content = 413, json.dumps(body).encode()
        assert len(content) > MAX_BODY
        if case == "oversized-chunked":
            content = _chunks(content)  # no Content-Length: Transfer-Encoding chunked
    else:
        expected, content = 401, json.dumps(body).encode()
        headers = {
            "wrong-token": {"Authorization": "Bearer wrong-" + TOKEN},
            "no-token": {},
            "basic-instead-of-bearer": {"Authorization": "Basic YWxlcnRtYW5hZ2VyOnNlY3JldA=="},
        }[case]

    before = _stored_state(shared_router)
    r = httpx.post(shared_router.url + path, content=content, headers=headers, timeout=30)
    assert r.status_code == expected, r.text
    if expected == 401:
        assert "Bearer" in r.headers.get("www-authenticate", "")
    if expected == 400:
        problems = r.json()["problems"]
        if field is not None:
            assert any(p.startswith(f"{prefix}{field}:") for p in problems), problems
        else:
            assert any("invalid JSON" in p for p in problems), problems
    assert _stored_state(shared_router) == before


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_one_bad_alert_of_three_keeps_the_other_two(shared_router: Router, endpoint: str) -> None:
    path, prefix = ENDPOINTS[endpoint]
    node = 110 + list(ENDPOINTS).index(endpoint)
    labels = [gpu_labels(node, g) for g in range(3)]
    body = _valid_body(endpoint, labels)
    _alerts_of(body)[1]["labels"]["gpu"] = 1  # a number where a string must be
    before = shared_router.total()

    r = httpx.post(shared_router.url + path, content=json.dumps(body).encode(), headers=AUTH, timeout=30)
    assert r.status_code == 400, r.text
    answer = r.json()
    assert answer["stored"] == 2
    assert answer["problems"] == [f"{prefix}[1].labels.gpu: Input should be a valid string"]

    stored = shared_router.by_fingerprint()
    assert len(stored) == before + 2
    for kept in (labels[0], labels[2]):
        assert stored[fingerprint(kept)]["labels"] == kept
        assert stored[fingerprint(kept)]["status"] == "firing"
    assert fingerprint(labels[1]) not in stored
