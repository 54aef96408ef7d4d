"""Observe the observer: the Grafana dashboard and the self-alert rules query only what alertrouter's
/metrics really exposes, their PromQL parses, and the self-alerts behave as their promtool unit tests say."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from alertrouter.app import create_app
from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings
from alertrouter.store.migrate import upgrade
from support.procs import run_tool, tool

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "alertrouter.json"
SELF_RULES = REPO / "rules" / "prometheus" / "alertrouter.rules.yml"
SELF_RULE_TESTS = REPO / "rules" / "prometheus" / "alertrouter.tests.yml"
TOKEN = "t0k-0123456789abcdef"
WEBHOOK = (REPO / "tests" / "fixtures" / "webhook_gpu_temp_firing.json").read_bytes()
METRIC = re.compile(r"\balertrouter_[a-z0-9_]+\b")
# Series names a metric family of each type puts on /metrics (prometheus_client's parser strips _total).
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "gauge": ("",),
    "summary": ("_sum", "_count", ""),
}
# The Grafana variables, replaced by values Prometheus accepts, so promtool can parse the queries.
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__range": "6h",
    "$namespace": ".*",
    "$job": "alertrouter",
    "$instance": ".*",
}


# --- what the queries name ------------------------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def panels(container: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in container.get("panels", []):
        yield panel
        yield from panels(panel)  # a collapsed row holds its panels


def dashboard_queries() -> list[str]:
    data = dashboard()
    queries = [target["expr"] for panel in panels(data) for target in panel.get("targets", [])]
    for variable in data["templating"]["list"]:
        if variable["type"] == "query":
            queries.append(variable["query"]["query"])
    return queries


def rule_texts() -> list[str]:
    """The self-alerts' expressions and annotations (a renamed metric in a description misleads too)."""
    groups = yaml.safe_load(SELF_RULES.read_text(encoding="utf-8"))["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    return [rule["expr"] for rule in rules] + [text for rule in rules for text in rule["annotations"].values()]


def metric_names(texts: list[str]) -> set[str]:
    return {name for text in texts for name in METRIC.findall(text)}


# --- what /metrics exposes -------------------------------------------------------------------------------


@pytest.fixture
async def scraped(tmp_path: Path) -> str:
    """/metrics of a real app (the shipped rules, a migrated SQLite store) that has stored one webhook of
    real GPU alerts and decided it."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'alertrouter.db'}"
    upgrade(url)
    app = create_app(Settings(database_url=url, bearer_token=TOKEN), load_ruleset(REPO / "rules", {}))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as client:
        stored = await client.post(
            "/webhook/alertmanager", content=WEBHOOK, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert stored.status_code == 200
        deadline = time.monotonic() + 60
        while True:  # until the engine has decided (a loaded machine may take a while)
            text = (await client.get("/metrics")).text
            if "alertrouter_alert_decisions{" in text or time.monotonic() > deadline:
                return text
            await asyncio.sleep(0.1)


@pytest.fixture
def exposed(scraped: str) -> set[str]:
    """The series names /metrics exposes, samples or not (a family without samples still has its TYPE)."""
    names: set[str] = set()
    for family in text_string_to_metric_families(scraped):
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
        names.update(sample.name for sample in family.samples)
    return names


@pytest.fixture
def labels_seen(scraped: str) -> dict[str, set[str]]:
    """Series name -> the label names its samples carry."""
    seen: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(scraped):
        for sample in family.samples:
            seen.setdefault(sample.name, set()).update(sample.labels)
    return seen


# `by (labels) (argument)`, the argument with one level of nested parentheses.
GROUPING = re.compile(r"\bby\s*\(([^)]*)\)\s*\(((?:[^()]|\([^()]*\))*)\)")
TARGET_LABELS = {"job", "namespace", "instance", "pod", "le"}


def grouping_labels(queries: list[str]) -> set[tuple[str, str]]:
    """(metric, label) for each label a query groups a metric by, target labels left out."""
    pairs: set[tuple[str, str]] = set()
    for query in queries:
        for found in GROUPING.finditer(query):
            labels = {label.strip() for label in found[1].split(",")} - TARGET_LABELS - {""}
            pairs.update((name, label) for name in METRIC.findall(found[2]) for label in labels)
    return pairs


async def test_the_queries_group_by_labels_the_metrics_have(labels_seen: dict[str, set[str]]) -> None:
    """A renamed label (channel -> robot) would leave every panel and alert grouped by nothing."""
    pairs = grouping_labels(dashboard_queries() + rule_texts())
    checkable = {(name, label) for name, label in pairs if name in labels_seen}
    assert len(checkable) >= 12, f"too few checkable (metric, label) pairs: {sorted(checkable)}"
    assert {(name, label) for name, label in checkable if label not in labels_seen[name]} == set()
    assert ("alertrouter_dead_letters", "channel") in checkable
    assert ("alertrouter_loop_stalled", "loop") in checkable
    assert ("alertrouter_ingest_duration_seconds_bucket", "endpoint") in checkable


def test_grouping_labels_reads_nested_arguments() -> None:
    query = 'histogram_quantile(0.5, sum by (channel, le) (rate(alertrouter_x_bucket{job=~"$job"}[1m])))'
    assert grouping_labels([query]) == {("alertrouter_x_bucket", "channel")}


def unknown(names: set[str], exposed: set[str]) -> set[str]:
    return {name for name in names if name not in exposed}


async def test_the_dashboard_queries_only_exposed_metrics(exposed: set[str]) -> None:
    names = metric_names(dashboard_queries())
    assert len(names) >= 25, f"the extraction found too little to be trusted: {sorted(names)}"
    assert unknown(names, exposed) == set()


async def test_the_self_alerts_query_only_exposed_metrics(exposed: set[str]) -> None:
    names = metric_names(rule_texts())
    assert len(names) >= 8
    assert unknown(names, exposed) == set()


async def test_a_renamed_or_unsuffixed_metric_is_caught(exposed: set[str]) -> None:
    assert "alertrouter_notifications_total" in exposed
    assert "alertrouter_engine_pass_duration_seconds_bucket" in exposed
    wrong = {
        "alertrouter_notification_total",  # renamed
        "alertrouter_notifications",  # a counter without _total
        "alertrouter_engine_pass_duration_seconds",  # a histogram without _bucket/_sum/_count
        "alertrouter_dead_letters_total",  # a gauge with a counter's suffix
    }
    assert unknown(wrong, exposed) == wrong


def test_what_the_issue_asks_the_dashboard_to_show() -> None:
    names = metric_names(dashboard_queries())
    assert {
        "alertrouter_alerts_received_total",  # alerts received ...
        "alertrouter_notifications_total",  # ... vs messages sent, and delivery results per channel
        "alertrouter_alerts_inhibited_total",  # inhibited by rule
        "alertrouter_alert_decisions",  # aggregated / throttled
        "alertrouter_delivery_latency_seconds_bucket",  # delivery latency per channel
        "alertrouter_channel_rate_limited_total",  # rate-limit budget and vendor
        "alertrouter_channel_blocked",  # vendor blocks
        "alertrouter_dead_letters",
        "alertrouter_engine_pass_duration_seconds_bucket",
        "alertrouter_ingest_duration_seconds_bucket",
    } <= names


def test_the_dashboard_is_well_formed() -> None:
    data = dashboard()
    assert data["uid"] == "alertrouter"
    all_panels = list(panels(data))
    ids = [panel["id"] for panel in all_panels]
    assert len(ids) == len(set(ids))
    variables = {variable["name"] for variable in data["templating"]["list"]}
    assert variables == {"datasource", "namespace", "job", "instance"}
    for panel in all_panels:
        if panel["type"] == "row":
            continue
        assert panel["title"], panel["id"]
        assert panel["description"], panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]
        for target in panel["targets"]:
            # Every query is scoped by the dashboard's variables (several deployments in one Prometheus).
            assert '$job"' in target["expr"] or "$job}" in target["expr"], target["expr"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


def _as_rule_file(queries: list[str], path: Path) -> Path:
    """The queries as recording rules, Grafana's variables filled in: promtool parses each one."""
    rules = []
    for index, query in enumerate(queries):
        for variable, value in sorted(GRAFANA_VARIABLES.items(), key=lambda item: -len(item[0])):
            query = query.replace(variable, value)
        assert "$" not in query, f"a Grafana variable this test does not know: {query}"
        if query.startswith("label_values("):
            continue  # a Grafana function, not PromQL
        rules.append({"record": f"dashboard:query_{index}", "expr": query})
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}), encoding="utf-8")
    return path


def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    promtool = tool("promtool", "prometheus")
    result = run_tool([promtool, "check", "rules", str(_as_rule_file(dashboard_queries(), tmp_path / "q.yml"))])
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rejects_a_broken_dashboard_query(tmp_path: Path) -> None:
    promtool = tool("promtool", "prometheus")
    queries = [*dashboard_queries(), 'sum by (channel (rate(alertrouter_notifications_total{job=~"$job"}[1m]))']
    result = run_tool([promtool, "check", "rules", str(_as_rule_file(queries, tmp_path / "q.yml"))])
    assert result.returncode != 0


# --- the self-alert rules -------------------------------------------------------------------------------


def test_promtool_accepts_the_self_alerts() -> None:
    result = run_tool([tool("promtool", "prometheus"), "check", "rules", str(SELF_RULES)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_self_alerts_cover_what_the_issue_asks() -> None:
    groups = yaml.safe_load(SELF_RULES.read_text(encoding="utf-8"))["groups"]
    rules = {rule["alert"]: rule for group in groups for rule in group["rules"]}
    assert "alertrouter_dead_letters" in rules["AlertrouterDeadLetters"]["expr"]
    assert "alertrouter_channel_healthy" in rules["AlertrouterChannelUnhealthy"]["expr"]
    assert "alertrouter_channel_blocked" in rules["AlertrouterChannelBlocked"]["expr"]
    assert 'loop="engine"' in rules["AlertrouterEngineNotRunning"]["expr"]
    assert 'result="unavailable"' in rules["AlertrouterIngestUnavailable"]["expr"]
    assert 'up{job="alertrouter"}' in rules["AlertrouterDown"]["expr"]
    for name, rule in rules.items():
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        assert rule["labels"]["component"] == "alertrouter", name
        assert rule["annotations"]["summary"].strip()
        assert rule["annotations"]["description"].strip()


def test_the_ingest_503_result_is_the_one_the_app_counts() -> None:
    """AlertrouterIngestUnavailable matches result="unavailable": the label value the ingest edge uses for 503."""
    source = (REPO / "alertrouter" / "web" / "receive.py").read_text(encoding="utf-8")
    assert re.search(r'"unavailable",\s*503', source), 'the 503 answer is counted as result="unavailable"'
    help_text = (REPO / "alertrouter" / "metrics.py").read_text(encoding="utf-8")
    assert "unavailable" in help_text


def test_promtool_unit_tests_of_the_self_alerts_pass() -> None:
    result = run_tool(
        [tool("promtool", "prometheus"), "test", "rules", SELF_RULE_TESTS.name], cwd=SELF_RULE_TESTS.parent
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # "Every replica stalled" read as "some replica stalled": one stalled replica would page.
        ("min by (job, namespace) (alertrouter_loop_stalled{", "max by (job, namespace) (alertrouter_loop_stalled{"),
        # Dead letters that do not grow would keep paging.
        ("(delta(alertrouter_dead_letters[30m])) > 0", "(alertrouter_dead_letters) > 0"),
        # One replica down of two would page as an outage.
        (
            'sum by (job, namespace) (up{job="alertrouter"}) == 0',
            'min by (job, namespace) (up{job="alertrouter"}) == 0',
        ),
    ],
)
def test_the_unit_tests_catch_a_weakened_rule(tmp_path: Path, before: str, after: str) -> None:
    promtool = tool("promtool", "prometheus")
    shutil.copy(SELF_RULE_TESTS, tmp_path / SELF_RULE_TESTS.name)
    text = SELF_RULES.read_text(encoding="utf-8")
    assert before in text
    (tmp_path / SELF_RULES.name).write_text(text.replace(before, after), encoding="utf-8")
    result = run_tool([promtool, "test", "rules", SELF_RULE_TESTS.name], cwd=tmp_path)
    assert result.returncode != 0, result.stdout
