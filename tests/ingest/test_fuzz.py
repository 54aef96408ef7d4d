"""A seeded mutator against the whole HTTP edge, on both stores (issue 18's fuzz run, bounded).

Real payloads (an Alertmanager 0.25 webhook and a Prometheus push, from tests/fixtures) get one
hostile value each at a random place, and are sent concurrently with valid payloads so they share
group commits. What must hold: no 5xx (the store is up), every alert of a 2xx or partial-400 payload
stored, every valid neighbour stored, and the engine still deciding afterwards.
`ALERTROUTER_FUZZ_SEED` and `ALERTROUTER_FUZZ_N` change the run (defaults keep CI short).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from alertrouter.app import create_app
from alertrouter.ingest.payloads import PayloadError, parse_api_v2, parse_webhook
from alertrouter.model import utcnow
from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow

REPO = Path(__file__).resolve().parents[2]
WEBHOOK = json.loads((REPO / "tests/fixtures/alertmanager025_webhook_gpu_node07.json").read_text())
PUSH = json.loads((REPO / "tests/fixtures/prometheus_push_node_down.json").read_text())
TOKEN = "fuzz-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SEED = int(os.environ.get("ALERTROUTER_FUZZ_SEED", "1824"))
N = int(os.environ.get("ALERTROUTER_FUZZ_N", "240"))
DEEP = "@deep@"

HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    2**31,
    2**63,
    -(2**63) - 1,
    10**30,
    1.5e308,
    "",
    " ",
    "²",
    "٣",
    "①",
    "\u0000",
    "\ud7ff",
    "x" * 300,
    "y" * 5000,
    "z" * 70000,
    "<img src=x onerror=alert(1)>",
    "[x](http://evil)",
    "@13800000000",
    "2026-11-21T08:14:03",
    "9999-12-31T23:59:59-05:00",
    "0001-01-01T00:30:00+01:00",
    "2026-11-21T08:00:00-23:59",
    "9999-12-31T23:58:00Z",
    "1969-12-31T23:59:59Z",
    "yesterday",
    [],
    {},
    [1, 2],
    {"a": {"b": "c"}},
    DEEP,
    {f"label_{i}": "v" for i in range(300)},
    {"l" * 300: "v"},
    {"alertname": "A" * 300},
    {"": "v"},
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return doc


def mutate(rng: random.Random, base: Any) -> bytes:
    doc = copy.deepcopy(base)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        path = rng.choice(_paths(doc))
        if rng.random() < 0.15 and isinstance(doc, dict | list):  # a new key where the sender has none
            path = (*path[:-1], rng.choice(["extra", "startsAt", "endsAt", "truncatedAlerts", "fingerprint"]))
            if not isinstance(_parent(doc, path), dict):
                continue
        doc = _set(doc, path, copy.deepcopy(rng.choice(HOSTILE)))
    body = json.dumps(doc).encode()
    return body.replace(json.dumps(DEEP).encode(), b"[" * 600 + b"0" + b"]" * 600)


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        try:
            doc = doc[part]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def neighbour(i: int) -> bytes:
    """A valid webhook of its own (its own alert), so that every group commit holds good payloads too."""
    doc = copy.deepcopy(WEBHOOK)
    alert = doc["alerts"][0]
    alert["labels"] = {**alert["labels"], "instance": f"10.1.{i // 250}.{i % 250}:9400", "Hostname": f"gpu-n-{i}"}
    alert.pop("fingerprint")
    doc["alerts"] = [alert]
    doc["groupKey"] = f"neighbour-{i}"
    return json.dumps(doc).encode()


def expected_fingerprints(endpoint: str, body: bytes) -> set[str]:
    """The alerts the ingest boundary accepts from this body (those a 2xx or partial 400 promises)."""
    try:
        parsed = parse_webhook(body) if endpoint == "webhook" else parse_api_v2(body, now=utcnow())
    except PayloadError:
        return set()
    return {a.fingerprint for a in parsed.batch.alerts}


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(database_url=database_url, bearer_token=TOKEN, max_body_bytes=1024 * 1024)
    app = create_app(settings, load_ruleset(REPO / "rules", {}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ar", timeout=60) as c:
            yield c


async def test_hostile_payloads_never_5xx_and_lose_nothing(client: httpx.AsyncClient, db: Database) -> None:
    rng = random.Random(SEED)
    sends: list[tuple[str, bytes]] = []
    for i in range(N):
        endpoint = rng.choice(("webhook", "webhook", "api_v2"))
        sends.append((endpoint, mutate(rng, WEBHOOK if endpoint == "webhook" else PUSH)))
        sends.append(("webhook", neighbour(i)))
    paths = {"webhook": "/webhook/alertmanager", "api_v2": "/api/v2/alerts"}
    promised: set[str] = set()
    statuses: dict[int, int] = {}
    for start in range(0, len(sends), 40):  # 40 at once: they share group commits
        chunk = sends[start : start + 40]
        answers = await asyncio.gather(*(client.post(paths[e], content=b, headers=AUTH) for e, b in chunk))
        for (endpoint, body), answer in zip(chunk, answers, strict=True):
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            assert answer.status_code < 500, (answer.status_code, answer.text, body[:300])
            if answer.status_code == 200 or (answer.status_code == 400 and "stored" in answer.json()):
                promised |= expected_fingerprints(endpoint, body)
    async with db.read() as s:
        stored = set(await s.scalars(select(AlertRow.fingerprint)))
    assert promised - stored == set()
    assert {400, 200} <= set(statuses), statuses  # the mutator does reach both outcomes
    # The engine kept working through all of it: a fresh critical alert is decided.
    fresh = copy.deepcopy(PUSH[:1])
    fresh[0]["labels"] = {**fresh[0]["labels"], "instance": "10.9.9.9:9100"}
    fresh[0].pop("startsAt")
    fresh[0].pop("endsAt")
    assert (await client.post("/api/v2/alerts", json=fresh, headers=AUTH)).status_code == 200
    for _ in range(200):
        alerts = (await client.get("/api/v1/alerts", params={"limit": 500}, headers=AUTH)).json()["alerts"]
        mine = [a for a in alerts if a["labels"].get("instance") == "10.9.9.9:9100"]
        if mine and mine[0].get("decision"):
            break
        await asyncio.sleep(0.1)
    assert mine
    assert mine[0]["decision"] not in (None, "quarantined")
    ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text
