"""`GET /api/v2/alerts` and `/api/v2/alerts/groups`: Alertmanager's schema, status from the engine's decisions."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from starlette.requests import Request
from web.console.conftest import HOOK, TOKEN, App

from alertrouter.model import utcnow
from alertrouter.pipeline.types import Decision
from alertrouter.web.amv2.alerts import alert_status, wanted_by
from e2e.harness import rfc3339
from support.scenario import gpu_labels, node_down_labels

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
# gettableAlert's required fields (Alertmanager's api/v2/openapi.yaml); generatorURL is optional.
ALERT_FIELDS = {"labels", "annotations", "startsAt", "endsAt", "updatedAt", "fingerprint", "receivers", "status"}
STATUS_FIELDS = {"state", "silencedBy", "inhibitedBy", "mutedBy"}
HOT = gpu_labels("gpu-node-07", 0, region="north")
HOT_TOO = gpu_labels("gpu-node-07", 1, region="north")
DOWN = {**node_down_labels("gpu-node-07", region="north"), "node": "gpu-node-07"}
MAINT = gpu_labels("gpu-node-08", 3, alertname="GPUMemoryErrors", region="south")
FREE = gpu_labels("gpu-node-09", 5, region="south")


def check_alert(alert: dict[str, Any]) -> None:
    """Fields and types of Alertmanager's gettableAlert."""
    assert ALERT_FIELDS <= set(alert) <= ALERT_FIELDS | {"generatorURL"}, sorted(alert)
    assert set(alert["status"]) == STATUS_FIELDS
    assert alert["status"]["state"] in ("active", "suppressed", "unprocessed")
    for name in ("silencedBy", "inhibitedBy", "mutedBy"):
        assert all(isinstance(item, str) for item in alert["status"][name])
    for name in ("startsAt", "endsAt", "updatedAt"):
        assert RFC3339.match(alert[name]), alert[name]
    assert all(isinstance(v, str) for v in {**alert["labels"], **alert["annotations"]}.values())
    assert re.fullmatch("[0-9a-f]{16}", alert["fingerprint"])
    assert alert["receivers"]
    assert all(set(r) == {"name"} for r in alert["receivers"])


async def seeded(app: App) -> tuple[dict[str, dict[str, Any]], str]:
    """Two GPU alerts under their node's NodeDown, one silenced (through API v2), one free; by alertname
    and gpu, with the silence's id."""
    r = await app.client.post(
        "/api/v2/silences",
        json={
            "matchers": [{"name": "alertname", "value": "GPUMemory.*", "isRegex": True}],
            "startsAt": rfc3339(utcnow()),
            "endsAt": rfc3339(utcnow() + timedelta(hours=2)),
            "createdBy": "alice",
            "comment": "HBM replacement on gpu-node-08",
        },
        headers=TOKEN,
    )
    assert r.status_code == 200, r.text
    await app.seed([DOWN, HOT, HOT_TOO, MAINT, FREE])
    listed = await app.client.get("/api/v2/alerts", headers=HOOK)
    assert listed.status_code == 200, listed.text
    prints = [a["fingerprint"] for a in listed.json()]
    assert prints == sorted(prints)  # Alertmanager's order
    return {f"{a['labels']['alertname']}/{a['labels'].get('gpu', '-')}": a for a in listed.json()}, r.json()[
        "silenceID"
    ]


async def test_alerts_carry_the_engines_decisions_in_alertmanagers_schema(app: App) -> None:
    alerts, silence = await seeded(app)
    assert sorted(alerts) == ["GPUHighTemp/0", "GPUHighTemp/1", "GPUHighTemp/5", "GPUMemoryErrors/3", "NodeDown/-"]
    for alert in alerts.values():
        check_alert(alert)
    down = alerts["NodeDown/-"]
    assert down["status"] == {"state": "active", "silencedBy": [], "inhibitedBy": [], "mutedBy": []}
    for gpu in ("0", "1"):
        assert alerts[f"GPUHighTemp/{gpu}"]["status"] == {
            "state": "suppressed",
            "silencedBy": [],
            "inhibitedBy": [down["fingerprint"]],
            "mutedBy": [],
        }
    assert alerts["GPUMemoryErrors/3"]["status"]["state"] == "suppressed"
    assert alerts["GPUMemoryErrors/3"]["status"]["silencedBy"] == [silence]
    assert alerts["GPUHighTemp/5"]["status"]["state"] == "active"
    # The shipped routes: critical to oncall-core then by region, warnings to ops-<region>.
    assert [r["name"] for r in down["receivers"]] == ["critical-north"]
    assert [r["name"] for r in alerts["GPUHighTemp/5"]["receivers"]] == ["ops-south"]
    assert alerts["NodeDown/-"]["endsAt"] == "0001-01-01T00:00:00Z"  # a webhook's firing alert: no end known


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["GPUHighTemp/0", "GPUHighTemp/1", "GPUHighTemp/5", "GPUMemoryErrors/3", "NodeDown/-"]),
        ("silenced=false", ["GPUHighTemp/0", "GPUHighTemp/1", "GPUHighTemp/5", "NodeDown/-"]),
        ("inhibited=false", ["GPUHighTemp/5", "GPUMemoryErrors/3", "NodeDown/-"]),
        ("active=false", ["GPUHighTemp/0", "GPUHighTemp/1", "GPUMemoryErrors/3"]),
        ("active=false&inhibited=false&silenced=false", []),
        ("active=true&silenced=false&inhibited=false&unprocessed=false", ["GPUHighTemp/5", "NodeDown/-"]),
        ("filter=alertname%3D~GPU.%2A&filter=region%3D%22south%22", ["GPUHighTemp/5", "GPUMemoryErrors/3"]),
        ('filter={alertname!="NodeDown",gpu=~"[01]"}', ["GPUHighTemp/0", "GPUHighTemp/1"]),
        ("receiver=critical-.%2A", ["NodeDown/-"]),
        ("receiver=ops", []),  # anchored, as Alertmanager's: ops-north is not "ops"
    ],
)
async def test_the_query_parameters_filter_as_alertmanagers_do(app: App, query: str, expected: list[str]) -> None:
    await seeded(app)
    r = await app.client.get(f"/api/v2/alerts?{query}", headers=HOOK)
    assert r.status_code == 200, r.text
    assert sorted(f"{a['labels']['alertname']}/{a['labels'].get('gpu', '-')}" for a in r.json()) == expected


async def test_groups_are_per_receiver_and_incident(app: App) -> None:
    alerts, _ = await seeded(app)
    r = await app.client.get("/api/v2/alerts/groups", headers=HOOK)
    assert r.status_code == 200, r.text
    groups = r.json()
    for group in groups:
        assert set(group) == {"labels", "receiver", "alerts"}
        assert set(group["receiver"]) == {"name"}
        for alert in group["alerts"]:
            check_alert(alert)
            assert group["receiver"]["name"] in [x["name"] for x in alert["receivers"]]
            assert group["labels"].items() <= alert["labels"].items()
    by_receiver = {g["receiver"]["name"]: g for g in groups if len(g["alerts"]) == 2}
    node07 = by_receiver["ops-north"]  # the two hot GPUs of gpu-node-07 are one incident
    assert sorted(a["labels"]["gpu"] for a in node07["alerts"]) == ["0", "1"]
    assert node07["labels"]["Hostname"] == "gpu-node-07"
    assert "gpu" not in node07["labels"]
    assert sum(len(g["alerts"]) for g in groups) == len(alerts)
    only = (await app.client.get("/api/v2/alerts/groups?receiver=critical-north", headers=HOOK)).json()
    assert [(g["receiver"]["name"], [a["labels"]["alertname"] for a in g["alerts"]]) for g in only] == [
        ("critical-north", ["NodeDown"])
    ]


@pytest.mark.parametrize(
    ("query", "body"),
    [
        ("filter=%7Bbad", "invalid matcher 'bad' in '{bad': expected <name><op><value>"),
        ("filter=gpu%3D~%22(%22", "invalid matcher 'gpu=~\"(\"': invalid regular expression: missing )"),
        ("receiver=(", "failed to parse receiver param: invalid regular expression: missing )"),
        ("active=maybe", 'active in query must be of type boolean: "maybe"'),
        ("silenced=yes", 'silenced in query must be of type boolean: "yes"'),
    ],
)
@pytest.mark.parametrize("path", ["/api/v2/alerts", "/api/v2/alerts/groups"])
async def test_bad_parameters_answer_a_json_string_400(app: App, path: str, query: str, body: str) -> None:
    """Alertmanager's shape for a bad filter: 400 and the reason as a bare JSON string."""
    r = await app.client.get(f"{path}?{query}", headers=HOOK)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/json"
    answer = r.json()
    assert isinstance(answer, str)
    assert answer.startswith(body), answer


async def test_reads_need_a_credential(app: App) -> None:
    for path in ("/api/v2/alerts", "/api/v2/alerts/groups", "/api/v2/silences", "/api/v2/status", "/api/v2/receivers"):
        r = await app.client.get(path)
        assert r.status_code == 401, (path, r.text)
        assert r.headers["www-authenticate"]


@pytest.mark.parametrize(
    ("decision", "detail", "expected"),
    [
        (None, None, ("unprocessed", [], [], [])),
        (Decision.QUARANTINED, {"error": "boom"}, ("unprocessed", [], [], [])),
        (Decision.NOTIFY, {"routed_to": ["ops"]}, ("active", [], [], [])),
        (Decision.HELD, {"held_until": "2026-01-01T00:00:30+00:00"}, ("active", [], [], [])),
        (Decision.THROTTLED, {}, ("active", [], [], [])),
        (
            Decision.INHIBITED,
            {"inhibited_by": "15f0abd0c7be6872", "inhibit_rule": "x"},
            ("suppressed", [], ["15f0abd0c7be6872"], []),
        ),
        (
            Decision.SILENCED,
            {"silenced_by": "7f21a01f-e93e-426a-ac36-9220e63af5d5"},
            ("suppressed", ["7f21a01f-e93e-426a-ac36-9220e63af5d5"], [], []),
        ),
        (
            Decision.MUTED_BY_INTERVAL,
            {
                "muted_by_interval": {"ops": ["weekend"], "sms": ["weekend", "night"]},
                "outside_active_time_intervals": {"x": ["office"]},
            },
            ("suppressed", [], [], ["weekend", "night", "office"]),
        ),
    ],
)
def test_status_from_decision(
    decision: str | None, detail: dict[str, Any] | None, expected: tuple[str, list[str], list[str], list[str]]
) -> None:
    status = alert_status(decision, detail)
    assert (status.state, status.silenced_by, status.inhibited_by, status.muted_by) == expected


MUTED = alert_status(Decision.MUTED_BY_INTERVAL, {"muted_by_interval": {"ops": ["weekend"]}})
SILENCED = alert_status(Decision.SILENCED, {"silenced_by": "7f21a01f-e93e-426a-ac36-9220e63af5d5"})
ACTIVE = alert_status(Decision.NOTIFY, {})
UNPROCESSED = alert_status(None, None)


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        (b"", {"muted", "silenced", "active", "unprocessed"}),
        (b"muted=false", {"silenced", "active", "unprocessed"}),
        (b"silenced=false&muted=true", {"muted", "active", "unprocessed"}),
        (b"active=false&unprocessed=0", {"muted", "silenced"}),
        (b"active=true&silenced=false&inhibited=false&unprocessed=false", {"muted", "active"}),  # amtool's default
    ],
)
def test_state_parameters(query: bytes, kept: set[str]) -> None:
    request = Request({"type": "http", "method": "GET", "path": "/api/v2/alerts", "query_string": query, "headers": []})
    wanted = wanted_by(request)
    statuses = {"muted": MUTED, "silenced": SILENCED, "active": ACTIVE, "unprocessed": UNPROCESSED}
    assert {name for name, status in statuses.items() if wanted(status)} == kept
