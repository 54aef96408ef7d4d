"""Shared by the end-to-end tests: realistic dcgm-exporter GPU alerts, Alertmanager-shaped bodies, a client.

Webhook bodies are built on the envelope of a webhook a real Alertmanager 0.25 sent
(`tests/fixtures/alertmanager025_webhook_gpu_node07.json`), so field names, order and the Go zero
time are what alertrouter meets in production. Import as `from e2e.harness import ...`.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
from prometheus_client.parser import text_string_to_metric_families

from alertrouter.fingerprints import fingerprint
from support.procs import Proc, start_alertrouter

__all__ = [
    "AUTH",
    "FIXTURE",
    "GO_ZERO_TIME",
    "TOKEN",
    "Router",
    "Store",
    "gpu_annotations",
    "gpu_labels",
    "launch_router",
    "parse_time",
    "postable_alert",
    "read_metric",
    "rfc3339",
    "wait_for",
    "webhook",
    "webhook_alert",
]

TOKEN = "e2e-bearer-9c41d7a2"  # a literal test credential, nothing real
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager025_webhook_gpu_node07.json"
GO_ZERO_TIME = "0001-01-01T00:00:00Z"  # what Alertmanager sends as `endsAt` of a firing alert
GENERATOR_URL = "http://prometheus-0.monitoring:9090/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+85&g0.tab=1"
# PCI bus of the 8 GPUs of an HGX H100 board, in dcgm-exporter's `pci_bus_id` form.
H100_PCI_BUS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")

T = TypeVar("T")


def rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str | None) -> datetime | None:
    """RFC 3339 from either API; nanoseconds (Go) are cut to microseconds as alertrouter does."""
    if text is None:
        return None
    if "." in text:
        head, _, frac = text.rstrip("Z").partition(".")
        text = f"{head}.{frac[:6]}Z"
    return datetime.fromisoformat(text)


def gpu_labels(
    node: int, gpu: int, *, alertname: str = "GPUHighTemp", severity: str = "warning", cluster: str = "gpu-prod-sh1"
) -> dict[str, str]:
    """The labels dcgm-exporter puts on a GPU metric, plus what the alerting rule adds."""
    host = f"gpu-node-{node:02d}"
    return {
        "alertname": alertname,
        "gpu": str(gpu),
        "UUID": "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{host}/{gpu}")),
        "pci_bus_id": f"00000000:{H100_PCI_BUS[gpu]}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": host,
        "instance": f"10.0.{node // 256}.{node % 256}:9400",
        "job": "dcgm",
        "cluster": cluster,
        "severity": severity,
    }


def gpu_annotations(labels: Mapping[str, str], *, celsius: int = 88) -> dict[str, str]:
    gpu, host = labels["gpu"], labels["Hostname"]
    return {
        "summary": f"GPU {gpu} on {host} is running hot",
        "description": f"GPU {gpu} ({labels['pci_bus_id']}) on {host} has been at {celsius}°C "
        "(threshold 85°C) for 5 minutes.",
    }


def webhook_alert(
    labels: Mapping[str, str],
    *,
    starts_at: datetime,
    ends_at: datetime | None = None,
    status: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One alert as Alertmanager puts it in a webhook (resolved when `ends_at` is given)."""
    return {
        "status": status or ("resolved" if ends_at else "firing"),
        "labels": dict(labels),
        "annotations": dict(annotations if annotations is not None else gpu_annotations(labels)),
        "startsAt": rfc3339(starts_at),
        "endsAt": rfc3339(ends_at) if ends_at else GO_ZERO_TIME,
        "generatorURL": GENERATOR_URL,
        "fingerprint": fingerprint(labels),
    }


def _common(maps: Iterable[Mapping[str, str]]) -> dict[str, str]:
    maps = list(maps)
    if not maps:
        return {}
    return {k: v for k, v in maps[0].items() if all(m.get(k) == v for m in maps[1:])}


def webhook(
    alerts: list[dict[str, Any]],
    *,
    group_by: tuple[str, ...] = ("alertname", "Hostname"),
    external_url: str | None = None,
) -> dict[str, Any]:
    """A version 4 webhook around `alerts`, with the group and common fields Alertmanager derives."""
    body: dict[str, Any] = json.loads(FIXTURE.read_text())
    common = _common(a["labels"] for a in alerts)
    group = {k: common[k] for k in sorted(group_by) if k in common}
    body.update(
        alerts=copy.deepcopy(alerts),
        status="firing" if any(a["status"] == "firing" for a in alerts) else "resolved",
        groupLabels=group,
        commonLabels=common,
        commonAnnotations=_common(a["annotations"] for a in alerts),
        groupKey="{}:{" + ", ".join(f'{k}="{v}"' for k, v in group.items()) + "}",
    )
    if external_url is not None:
        body["externalURL"] = external_url
    return body


def postable_alert(
    labels: Mapping[str, str],
    *,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One alert of Alertmanager's `POST /api/v2/alerts` (what Prometheus sends); times optional."""
    alert: dict[str, Any] = {
        "labels": dict(labels),
        "annotations": dict(annotations if annotations is not None else gpu_annotations(labels)),
        "generatorURL": GENERATOR_URL,
    }
    if starts_at is not None:
        alert["startsAt"] = rfc3339(starts_at)
    if ends_at is not None:
        alert["endsAt"] = rfc3339(ends_at)
    return alert


def wait_for(check: Callable[[], T | None], *, what: str, timeout: float = 30.0) -> T:
    """Poll `check` until it returns something truthy; a bounded wait, not a timing assertion."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f}s waiting for {what}; last result: {result!r}")
        time.sleep(0.2)


def read_metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples called `name` whose labels include `labels` (0 when none exist yet)."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


@dataclass(frozen=True, slots=True)
class Store:
    """Where an alertrouter under test keeps its data; outlives the processes that use it."""

    kind: str  # "sqlite" or "postgresql"
    url: str
    pg_name: str | None = None
    sqlite_path: Path | None = None


@dataclass
class Router:
    """A running alertrouter process and an authenticated client for it."""

    proc: Proc
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.proc.url, headers=AUTH, timeout=30)

    @property
    def url(self) -> str:
        return self.proc.url

    def post_webhook(self, body: Any, **kwargs: Any) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.http.post("/webhook/alertmanager", content=content, **kwargs)

    def post_api_v2(self, body: Any, **kwargs: Any) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.http.post("/api/v2/alerts", content=content, **kwargs)

    def alerts(self, **params: Any) -> list[dict[str, Any]]:
        r = self.http.get("/api/v1/alerts", params={"limit": 1000, **params})
        assert r.status_code == 200, r.text
        page: dict[str, Any] = r.json()
        assert page["total"] == len(page["alerts"]), "more than one page: use fewer alerts in this test"
        alerts: list[dict[str, Any]] = page["alerts"]
        return alerts

    def by_fingerprint(self) -> dict[str, dict[str, Any]]:
        return {a["fingerprint"]: a for a in self.alerts()}

    def total(self) -> int:
        r = self.http.get("/api/v1/alerts", params={"limit": 1})
        assert r.status_code == 200, r.text
        n: int = r.json()["total"]
        return n

    def detail(self, fp: str) -> dict[str, Any]:
        r = self.http.get(f"/api/v1/alerts/{fp}")
        assert r.status_code == 200, r.text
        found: dict[str, Any] = r.json()
        return found

    def metric(self, name: str, **labels: str) -> float:
        r = self.http.get("/metrics")
        assert r.status_code == 200, r.text
        return read_metric(r.text, name, **labels)

    def close(self) -> None:
        self.http.close()
        self.proc.stop()


def launch_router(store: Store, workdir: Path, env: Mapping[str, str] | None = None) -> Router:
    """Start `alertrouter serve` on `store` with the test bearer token, and wait until it is ready."""
    proc = start_alertrouter(workdir, database_url=store.url, env={"ALERTROUTER_BEARER_TOKEN": TOKEN, **(env or {})})
    return Router(proc)
