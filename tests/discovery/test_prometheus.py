"""The Prometheus lookup's I/O over `httpx.MockTransport`: what it asks, what it keeps when Prometheus
is unreachable, slow, answers 500, an error or garbage, and what it logs and counts then."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest
from pydantic import SecretStr

import alertrouter.discovery.prometheus as prometheus_module
from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.metrics import Metrics
from alertrouter.ruleset.topology import PrometheusLookupConfig
from support.courtesy import record_callers
from support.passes import Clock
from support.promql import answer, answer_bytes, series_of

SERIES = ("node_uname_info", "kube_node_info", "kube_pod_info", "kube_node_labels")
Handler = Callable[[httpx.Request], httpx.Response]


def prometheus(requests: list[httpx.Request]) -> Handler:
    """A Prometheus that answers each series with its fixture."""

    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        assert request.url.path == "/prom/api/v1/query"
        return httpx.Response(200, content=answer_bytes(request.url.params["query"]))

    return handle


class Switch:
    """A transport whose behaviour the test changes between refreshes."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    def __call__(self, request: httpx.Request) -> httpx.Response:
        return self.handler(request)


def lookup_with(
    switch: Switch, clock: Clock, metrics: Metrics | None = None, keep_for: timedelta = timedelta(hours=1)
) -> PrometheusLookup:
    config = PrometheusLookupConfig(url="http://prometheus:9090/prom/", bearer_token=SecretStr("s3cr3t-t0ken-xyz"))
    client = httpx.AsyncClient(transport=httpx.MockTransport(switch))
    return PrometheusLookup(config, keep_for=keep_for, metrics=metrics, client=client, clock=clock)


def errors(metrics: Metrics, series: str, problem: str) -> float:
    value = metrics.registry.get_sample_value(
        "alertrouter_node_lookup_errors_total", {"series": series, "problem": problem}
    )
    return value or 0.0


async def test_it_reads_every_series_with_the_token_and_resolves_them() -> None:
    requests: list[httpx.Request] = []
    changed: list[bool] = []
    lookup = lookup_with(Switch(prometheus(requests)), Clock())
    lookup.on_change = lambda: changed.append(True)
    assert await lookup.refresh()
    # each series asked for the labels it is read for alone (a big cluster's kube_pod_info is tens of MB)
    assert [r.url.params["query"] for r in requests] == [
        "count by (instance, nodename) (node_uname_info)",
        "count by (node, internal_ip) (kube_node_info)",
        "count by (node, host_ip, pod_ip, host_network, pod) (kube_pod_info)",
        "count by (node, label_topology_kubernetes_io_region, label_failure_domain_beta_kubernetes_io_region, "
        "label_topology_kubernetes_io_zone, label_failure_domain_beta_kubernetes_io_zone, label_rack) "
        "(kube_node_labels)",
    ]
    assert {r.headers["Authorization"] for r in requests} == {"Bearer s3cr3t-t0ken-xyz"}
    found = lookup.snapshot()
    assert found.names["10.0.0.7"] == "gpu-node-07"  # kube_node_info, kube_pod_info host_ip and node_uname_info
    assert found.names["10.244.7.23"] == "gpu-node-07"  # the dcgm-exporter pod's IP
    assert found.names["nvidia-dcgm-exporter-5xk2p"] == "gpu-node-07"
    assert found.names["fd00::9"] == "gpu-node-09"
    assert found.topology["gpu-node-07"] == {"region": "north", "zone": "north-a", "rack": "r12"}
    assert changed == [True]
    before = lookup.snapshot()
    assert not await lookup.refresh()  # the same answers: the same snapshot, no nudge
    assert lookup.snapshot() is before
    assert changed == [True]


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


def slow(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


def status_500(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500, text="internal server error\n")


def malformed(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b'{"status":"success","data":{"resultType":"vector","result":[{"metr')


def query_error(request: httpx.Request) -> httpx.Response:
    body = {"status": "error", "errorType": "execution", "error": "query processing would load too many samples"}
    return httpx.Response(422, content=json.dumps(body).encode())


def wrong_shape(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": []}})


@pytest.mark.parametrize(
    ("handler", "problem"),
    [
        (refused, "unreachable"),
        (slow, "timeout"),
        (status_500, "http_status"),
        (malformed, "bad_answer"),
        (query_error, "query_error"),
        (wrong_shape, "bad_answer"),
    ],
)
async def test_a_failing_prometheus_keeps_the_last_answer_logs_once_and_counts(
    handler: Handler, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock, metrics = Clock(), Metrics()
    switch = Switch(prometheus([]))
    lookup = lookup_with(switch, clock, metrics)
    await lookup.refresh()
    good = lookup.snapshot()
    switch.handler = handler
    caplog.set_level(logging.INFO, logger="alertrouter.discovery.prometheus")
    for _ in range(3):
        clock.now += timedelta(minutes=1)
        assert not await lookup.refresh()  # never raises; nothing changes
    assert lookup.snapshot() is good
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # one problem: one line, all series in it
    assert problem in warnings[0].getMessage()
    assert "kube_pod_info" in warnings[0].getMessage()
    assert "s3cr3t" not in caplog.text
    assert {s: errors(metrics, s, problem) for s in SERIES} == dict.fromkeys(SERIES, 3.0)
    assert lookup.problems["node_uname_info"].problem == problem
    switch.handler = prometheus([])
    clock.now += timedelta(minutes=1)
    await lookup.refresh()
    assert lookup.problems == {}
    assert "reads from http://prometheus:9090/prom again" in caplog.text


async def test_what_was_kept_lapses_after_keep_for_and_the_engine_is_told() -> None:
    clock = Clock()
    switch = Switch(prometheus([]))
    lookup = lookup_with(switch, clock, keep_for=timedelta(minutes=30))
    changed: list[bool] = []
    lookup.on_change = lambda: changed.append(True)
    await lookup.refresh()
    switch.handler = refused
    clock.now += timedelta(minutes=29)
    assert not await lookup.refresh()
    clock.now += timedelta(minutes=1)
    assert await lookup.refresh()
    assert lookup.snapshot().names == {}
    assert changed == [True, True]


async def test_one_failing_series_keeps_its_claims_while_the_others_refresh() -> None:
    clock = Clock()

    def no_pods(request: httpx.Request) -> httpx.Response:
        if series_of(request.url.params["query"]) == "kube_pod_info":
            return status_500(request)
        return httpx.Response(200, json=answer(request.url.params["query"]))

    switch = Switch(prometheus([]))
    lookup = lookup_with(switch, clock)
    await lookup.refresh()
    switch.handler = no_pods
    clock.now += timedelta(minutes=1)
    await lookup.refresh()
    assert lookup.snapshot().names["10.244.7.23"] == "gpu-node-07"
    assert set(lookup.problems) == {"kube_pod_info"}
    assert lookup.last_success["node_uname_info"] == clock.now


async def test_the_names_in_force_are_counted_by_source() -> None:
    metrics = Metrics()
    lookup = lookup_with(Switch(prometheus([])), Clock(), metrics)
    await lookup.refresh()
    entries = lookup.resolved.entries
    assert {e.source for e in entries} >= {"kube_node_info", "kube_pod_info/pod_ip", "node_uname_info"}
    for source in (
        "kube_node_info",
        "kube_pod_info/host_ip",
        "node_uname_info",
        "kube_pod_info/pod_ip",
        "kube_pod_info/pod",
    ):
        held = metrics.registry.get_sample_value("alertrouter_node_lookup_names", {"source": source})
        assert held == sum(1 for e in entries if e.source == source), source


async def test_a_refresh_reads_and_resolves_in_a_worker_thread_that_lets_the_event_loop_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    callers = record_callers(monkeypatch, prometheus_module)
    lookup = lookup_with(Switch(prometheus([])), Clock())
    assert await lookup.refresh()
    assert len(callers) >= len(lookup.resolved.entries), "offered before each claim and key, at least"
    assert threading.get_ident() not in callers, "never on the event loop's thread, which must not sleep"
