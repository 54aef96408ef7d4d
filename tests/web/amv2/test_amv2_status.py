"""`GET /api/v2/status` and `/api/v2/receivers`: Alertmanager's schemas, the route tree as its config."""

from __future__ import annotations

import re

import yaml
from web.console.conftest import API_TOKEN, HOOK, SECRET, WEBHOOK_TOKEN, App

from alertrouter import __version__

VERSION_FIELDS = {"version", "revision", "branch", "buildUser", "buildDate", "goVersion"}


async def test_status_in_alertmanagers_schema(app: App) -> None:
    r = await app.client.get("/api/v2/status", headers=HOOK)
    assert r.status_code == 200, r.text
    status = r.json()
    assert set(status) == {"cluster", "versionInfo", "config", "uptime"}
    assert status["cluster"] == {"status": "disabled", "peers": []}
    assert set(status["versionInfo"]) == VERSION_FIELDS
    assert all(isinstance(v, str) for v in status["versionInfo"].values())
    assert status["versionInfo"]["version"] == __version__
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", status["uptime"])
    assert set(status["config"]) == {"original"}


async def test_the_config_is_the_route_tree_without_secrets(app: App) -> None:
    original = (await app.client.get("/api/v2/status", headers=HOOK)).json()["config"]["original"]
    config = yaml.safe_load(original)
    assert set(config) == {"route", "receivers"}
    route = config["route"]
    assert route["receiver"] == "weekly-digest"
    critical = route["routes"][0]
    assert (critical["receiver"], critical["matchers"]) == ("oncall-core", ['severity="critical"'])
    assert [(r["receiver"], r["matchers"]) for r in critical["routes"]] == [
        ("critical-north", ['region="north"']),
        ("critical-south", ['region="south"']),
    ]
    names = [r["name"] for r in config["receivers"]]
    assert {"oncall-core", "critical-north", "ops-south", "weekly-digest"} <= set(names)
    assert all(set(r) == {"name"} for r in config["receivers"])  # never a channel's settings
    for secret in (API_TOKEN, WEBHOOK_TOKEN, SECRET):
        assert secret not in original


async def test_receivers(app: App) -> None:
    r = await app.client.get("/api/v2/receivers", headers=HOOK)
    assert r.status_code == 200, r.text
    receivers = r.json()
    assert all(set(item) == {"name"} for item in receivers)
    names = [item["name"] for item in receivers]
    assert len(names) == len(set(names))
    assert {"oncall-core", "critical-north", "critical-south", "ops", "ops-north", "ops-south", "weekly-digest"} <= set(
        names
    )


async def test_grafanas_data_source_test_sees_a_prometheus_alertmanager(app: App) -> None:
    """Grafana's Alertmanager data source, implementation "prometheus", tests a data source with
    `GET /alertmanager/api/v2/status` (a 200 there means Mimir or Cortex: refused) and then
    `GET /api/v2/status`, which must answer 200."""
    assert (await app.client.get("/alertmanager/api/v2/status", headers=HOOK)).status_code == 404
    assert (await app.client.get("/api/v2/status", headers=HOOK)).status_code == 200
