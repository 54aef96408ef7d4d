"""`/api/v2/silences` and `/api/v2/silence/{id}`: Alertmanager's schemas, its error shapes, the same silences as v1."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from web.console.conftest import HOOK, TOKEN, App

from alertrouter.labels import parse_matchers
from alertrouter.model import utcnow
from alertrouter.web.amv2.silences import silence_matches_filter
from e2e.harness import rfc3339

SILENCE_FIELDS = {"id", "status", "updatedAt", "matchers", "startsAt", "endsAt", "createdBy", "comment"}
FOUR = [  # every operator amtool can send: = != =~ !~
    {"name": "Hostname", "value": "gpu-node-07", "isRegex": False, "isEqual": True},
    {"name": "severity", "value": "info", "isRegex": False, "isEqual": False},
    {"name": "alertname", "value": "GPU.*|DCGM.*", "isRegex": True, "isEqual": True},
    {"name": "gpu", "value": "[4-7]", "isRegex": True, "isEqual": False},
]


def postable(**changes: Any) -> dict[str, Any]:
    """What `amtool silence add` posts (a two-hour silence from now), with `changes`."""
    now = utcnow()
    body: dict[str, Any] = {
        "matchers": FOUR,
        "startsAt": rfc3339(now),
        "endsAt": rfc3339(now + timedelta(hours=2)),
        "createdBy": "alice",
        "comment": "reseating GPUs 0-3 on gpu-node-07",
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


async def test_a_silence_round_trips_with_every_operator(app: App) -> None:
    r = await app.client.post("/api/v2/silences", json=postable(), headers=TOKEN)
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"silenceID"}
    silence_id = r.json()["silenceID"]
    assert str(uuid.UUID(silence_id)) == silence_id
    got = await app.client.get(f"/api/v2/silence/{silence_id}", headers=HOOK)
    assert got.status_code == 200, got.text
    silence = got.json()
    assert set(silence) == SILENCE_FIELDS
    assert silence["id"] == silence_id
    assert silence["status"] == {"state": "active"}
    assert silence["matchers"] == FOUR
    assert (silence["createdBy"], silence["comment"]) == ("alice", "reseating GPUs 0-3 on gpu-node-07")
    # The same silence in alertrouter's own API, under the same id, its matchers in Alertmanager's syntax.
    v1 = (await app.client.get("/api/v1/silences", headers=TOKEN)).json()
    assert [(s["id"], s["matchers"]) for s in v1] == [
        (silence_id, ['Hostname="gpu-node-07"', 'severity!="info"', 'alertname=~"GPU.*|DCGM.*"', 'gpu!~"[4-7]"'])
    ]
    assert (await app.client.get("/api/v2/silences", headers=HOOK)).json() == [silence]


async def test_expire_then_list_and_delete_again(app: App) -> None:
    silence_id = (await app.client.post("/api/v2/silences", json=postable(), headers=TOKEN)).json()["silenceID"]
    deleted = await app.client.delete(f"/api/v2/silence/{silence_id}", headers=TOKEN)
    assert deleted.status_code == 200, deleted.text
    listed = (await app.client.get("/api/v2/silences", headers=HOOK)).json()
    assert [(s["id"], s["status"]["state"]) for s in listed] == [(silence_id, "expired")]
    again = await app.client.delete(f"/api/v2/silence/{silence_id.upper()}", headers=TOKEN)
    assert again.status_code == 200  # Alertmanager expires an expired silence without complaint
    assert (await app.client.get("/api/v1/silences", headers=TOKEN)).json() == []


async def test_unknown_and_malformed_ids(app: App) -> None:
    unknown = "8b2f6e3c-4d6f-4c55-9f0e-3a7a1f2b9c10"
    got = await app.client.get(f"/api/v2/silence/{unknown}", headers=HOOK)
    assert (got.status_code, got.content) == (404, b"")
    gone = await app.client.delete(f"/api/v2/silence/{unknown}", headers=TOKEN)
    assert (gone.status_code, gone.content) == (404, b"")
    for method in ("GET", "DELETE"):
        bad = await app.client.request(method, "/api/v2/silence/abc", headers=TOKEN)
        assert bad.status_code == 422
        assert bad.json() == {"code": 601, "message": 'silenceID in path must be of type uuid: "abc"'}
    update = await app.client.post("/api/v2/silences", json=postable(id=unknown), headers=TOKEN)
    assert (update.status_code, update.json()) == (404, "silence not found")


async def test_posting_an_id_replaces_that_silence(app: App) -> None:
    first = (await app.client.post("/api/v2/silences", json=postable(), headers=TOKEN)).json()["silenceID"]
    r = await app.client.post("/api/v2/silences", json=postable(id=first, comment="two more hours"), headers=TOKEN)
    assert r.status_code == 200, r.text
    second = r.json()["silenceID"]
    assert second != first
    states = {
        s["id"]: (s["status"]["state"], s["comment"])
        for s in (await app.client.get("/api/v2/silences", headers=HOOK)).json()
    }
    assert states == {first: ("expired", "reseating GPUs 0-3 on gpu-node-07"), second: ("active", "two more hours")}


async def test_list_filter_and_order(app: App) -> None:
    now = utcnow()
    later = postable(matchers=[FOUR[0]], startsAt=rfc3339(now + timedelta(hours=1)), comment="pending")
    long = postable(matchers=[FOUR[2]], endsAt=rfc3339(now + timedelta(hours=5)), comment="long")
    short = postable(matchers=[FOUR[0], FOUR[1]], comment="short")
    for body in (later, long, short):
        assert (await app.client.post("/api/v2/silences", json=body, headers=TOKEN)).status_code == 200
    listed = (await app.client.get("/api/v2/silences", headers=HOOK)).json()
    assert [s["comment"] for s in listed] == ["short", "long", "pending"]  # active by end, then pending
    assert [s["status"]["state"] for s in listed] == ["active", "active", "pending"]
    by_host = await app.client.get("/api/v2/silences", params={"filter": 'Hostname="gpu-node-07"'}, headers=HOOK)
    assert [s["comment"] for s in by_host.json()] == ["short", "pending"]
    no_severity = await app.client.get("/api/v2/silences", params={"filter": 'severity=""'}, headers=HOOK)
    assert [s["comment"] for s in no_severity.json()] == ["long", "pending"]


@pytest.mark.parametrize(
    ("filters", "silence", "expected"),
    [
        (['Hostname="gpu-node-07"'], ['Hostname="gpu-node-07"'], True),
        (['Hostname="gpu-node-08"'], ['Hostname="gpu-node-07"'], False),
        (['alertname=~"GPU.*"'], ['alertname="GPUHighTemp"'], True),
        (['alertname="GPU.*"'], ['alertname=~"GPU.*"'], True),  # a regex silence's pattern, as text
        (['rack=""'], ['Hostname="gpu-node-07"'], True),
        (['rack!=""'], ['Hostname="gpu-node-07"'], False),
        (['rack!=""'], ['rack="r1"'], True),
        (['rack="r1"'], ['Hostname="gpu-node-07"'], False),
    ],
)
def test_silence_filter_as_alertmanager(filters: list[str], silence: list[str], expected: bool) -> None:
    parsed = [m for text in filters for m in parse_matchers(text)]
    assert silence_matches_filter(parsed, [m for text in silence for m in parse_matchers(text)]) is expected


BAD_SILENCES: list[tuple[str, Any, int, Any]] = [
    ("not json", b"{nope", 400, {"code": 400}),
    ("not an object", b"[1]", 400, {"code": 400}),
    ("no matchers field", postable(matchers=None), 422, {"code": 602, "message": "matchers in body is required"}),
    ("no comment", postable(comment=None), 422, {"code": 602, "message": "comment in body is required"}),
    ("no startsAt", postable(startsAt=None), 422, {"code": 602, "message": "startsAt in body is required"}),
    (
        "empty matchers",
        postable(matchers=[]),
        422,
        {"code": 612, "message": "matchers in body should have at least 1 items"},
    ),
    (
        "matcher without isRegex",
        postable(matchers=[{"name": "a", "value": "b"}]),
        422,
        {"code": 602, "message": "matchers.0.isRegex in body is required"},
    ),
    ("isRegex a string", postable(matchers=[{"name": "a", "value": "b", "isRegex": "no"}]), 400, {"code": 400}),
    ("startsAt not a time", postable(startsAt="yesterday"), 400, {"code": 400}),
    ("matchers not a list", postable(matchers="a=b"), 400, {"code": 400}),
    (
        "bad regex",
        postable(matchers=[{"name": "gpu", "value": "(", "isRegex": True}]),
        400,
        "silence invalid: invalid label matcher 0: invalid regular expression: missing )",
    ),
    (
        "mutes everything",
        postable(matchers=[{"name": "gpu", "value": "", "isRegex": False}]),
        400,
        "silence invalid: matchers: at least one matcher must not match an empty value (it would mute everything)",
    ),
    (
        "ends before it starts",
        postable(endsAt=rfc3339(utcnow() - timedelta(hours=1))),
        400,
        "silence invalid: ends_at: must be after the start and in the future",
    ),
    (
        "long createdBy",
        postable(createdBy="a" * 256),
        400,
        "silence invalid: createdBy: at most 255 characters, not 256",
    ),
    ("long comment", postable(comment="c" * 1001), 400, "silence invalid: comment: at most 1000 characters, not 1001"),
    (
        "comment with NUL",
        postable(comment="a\x00b"),
        400,
        "silence invalid: comment: contains U+0000 (NUL), which is not allowed",
    ),
]


@pytest.mark.parametrize(("case", "body", "status", "answer"), BAD_SILENCES, ids=[c[0] for c in BAD_SILENCES])
async def test_bad_silences_answer_alertmanagers_error_shapes(
    app: App, case: str, body: Any, status: int, answer: Any
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = await app.client.post(
        "/api/v2/silences", content=content, headers={**TOKEN, "content-type": "application/json"}
    )
    assert r.status_code == status, r.text
    got = r.json()
    if isinstance(answer, dict) and set(answer) == {"code"}:
        assert set(got) == {"code", "message"}, got
        assert got["code"] == answer["code"], got
        assert got["message"].startswith("parsing silence body failed, because "), got
    else:
        assert got == answer
    assert (await app.client.get("/api/v2/silences", headers=HOOK)).json() == []


async def test_writes_need_a_writer(app: App) -> None:
    """Same rules as the rest of the API: no credential 401, the webhook's (read-only) credential 403."""
    assert (await app.client.post("/api/v2/silences", json=postable())).status_code == 401
    refused = await app.client.post("/api/v2/silences", json=postable(), headers=HOOK)
    assert refused.status_code == 403
    assert "may only read" in refused.text
    silence_id = (await app.client.post("/api/v2/silences", json=postable(), headers=TOKEN)).json()["silenceID"]
    assert (await app.client.delete(f"/api/v2/silence/{silence_id}", headers=HOOK)).status_code == 403
    assert (await app.client.get(f"/api/v2/silence/{silence_id}", headers=HOOK)).json()["status"]["state"] == "active"


async def test_a_start_in_the_past_is_now(app: App) -> None:
    """As Alertmanager: a silence re-posted with its first start (an edit in Grafana, 89 days on) starts
    now, so its 2 more hours are not refused as longer than the longest silence."""
    before = utcnow()
    body = postable(startsAt=rfc3339(before - timedelta(days=89)), endsAt=rfc3339(before + timedelta(days=2)))
    r = await app.client.post("/api/v2/silences", json=body, headers=TOKEN)
    assert r.status_code == 200, r.text
    silence = (await app.client.get(f"/api/v2/silence/{r.json()['silenceID']}", headers=HOOK)).json()
    assert datetime.fromisoformat(silence["startsAt"]) >= before
    assert silence["status"] == {"state": "active"}
