"""A lemon GPU through the cluster in a box (issue 48 §2), a phase of the label-shapes timeline (labels.py);
asserted by test_labels.py.

One GPU of LEMON (gpu-node-05, a GPU Operator node with the docs' `node` relabelling) had its first Xid 48
eleven days ago. The real Prometheus cannot make an alert that started then, so the phase pushes it to both
Alertmanagers through their API v2, as Prometheus does (`POST /api/v2/alerts`): the labels are the GPU's
DCGM_FI_DEV_XID_ERRORS series as Prometheus scraped it plus what the shipped GPUXidError rule adds, so it is
the very alert Prometheus makes (one fingerprint), with a `startsAt` 11 days back. alertrouter stores it
(its GPU history takes the event at that `startsAt`), then it resolves, inside its hold-down: nothing is
told of it. Then the same GPU reports Xid 48 now, through the simulated dcgm-exporter and the real rule:
the `rma:` rules' `dbe-repeated` (Xid 48 twice in 30 days) makes it an RMA candidate, and its page says so.

The phase is three steps the timeline calls (`push_first`, `fire_again`, `told_lemon`) and one read at rest
(`read_lemon`), on a node of its own: a phase about other GPU faults (a root Xid and its follow-ons on
another node) fits beside it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from cluster.box import ClusterBox
from cluster.told import about, told
from e2e.harness import wait_for

__all__ = [
    "DAYS",
    "LEMON",
    "LEMON_GPU",
    "LEMON_NODE_EXPORTER_POD",
    "LEMON_POD",
    "LEMON_POD_IP",
    "Lemon",
    "fire_again",
    "push_first",
    "read_lemon",
    "rule_labels",
    "told_lemon",
]

LEMON = 5  # gpu-node-05
LEMON_GPU = 3
LEMON_POD, LEMON_POD_IP = "nvidia-dcgm-exporter-8hv4n", "10.244.5.31"
LEMON_NODE_EXPORTER_POD = "kube-prometheus-stack-prometheus-node-exporter-c6t9r"
DAYS = 11  # since the GPU's first Xid 48
XID = 48
TIMEOUT = 150.0


def rule_labels() -> dict[str, str]:
    """What rules/prometheus/gpu.rules.yml's GPUXidError adds to the series for Xid 48 (`xid` is its
    `printf "%.0f" $value`); the phase checks Prometheus' own alert has the same labels."""
    return {"alertname": "GPUXidError", "severity": "critical", "xid": str(XID)}


@dataclass
class Lemon:
    """What the phase did and what it found at rest. `labels`: the alert pushed 11 days back;
    `fired`: Prometheus' own alert for the GPU; `gpu`: GET /api/v1/gpus/{uuid}; `alert`: the alert as
    alertrouter stores it (its current episode, Prometheus'), `episodes` its episodes (the pushed one too)."""

    uuid: str
    first_at: datetime
    labels: dict[str, str]
    fired: dict[str, str] | None = None
    gpu: dict[str, Any] | None = None
    alert: dict[str, Any] | None = None
    episodes: list[dict[str, Any]] | None = None


def _alertmanagers(box: ClusterBox, alert: dict[str, Any]) -> None:
    """Send one alert to both Alertmanagers, as Prometheus sends to every Alertmanager it has."""
    for am in box.alertmanagers:
        r = httpx.post(f"{am.url}/api/v2/alerts", json=[alert], timeout=10)
        assert r.status_code == 200, r.text


def _stored(box: ClusterBox, uuid: str, status: str) -> bool:
    found = box.routers[0].alerts(filter=f'{{UUID="{uuid}",alertname="GPUXidError"}}')
    return len(found) == 1 and found[0]["status"] == status


def push_first(box: ClusterBox) -> Lemon:
    """The GPU's first Xid 48, started DAYS ago, pushed firing with the series' labels Prometheus holds."""
    uuid = box.fleet.node(LEMON).gpus[LEMON_GPU].uuid
    (series,) = box.query(f'DCGM_FI_DEV_XID_ERRORS{{UUID="{uuid}"}}')
    labels = {k: v for k, v in series["metric"].items() if k != "__name__"} | rule_labels()
    first_at = datetime.now(UTC).replace(microsecond=0) - timedelta(days=DAYS)
    lemon = Lemon(uuid, first_at, labels)
    summary = f"GPU {labels['gpu']} on {labels.get('Hostname') or labels.get('hostname')} reported XID {XID}"
    _alertmanagers(box, {"labels": labels, "annotations": {"summary": summary}, "startsAt": first_at.isoformat()})
    return lemon


def fire_again(box: ClusterBox, lemon: Lemon) -> None:
    """Once alertrouter holds the first Xid 48 (firing), it resolves; once that is stored too, the GPU
    reports Xid 48 again through its dcgm-exporter, so Prometheus' alert starts after the pushed one ended."""
    wait_for(lambda: _stored(box, lemon.uuid, "firing"), what="the Xid 48 of 11 days ago stored", timeout=TIMEOUT)
    ended = datetime.now(UTC).isoformat()
    _alertmanagers(box, {"labels": lemon.labels, "startsAt": lemon.first_at.isoformat(), "endsAt": ended})
    wait_for(lambda: _stored(box, lemon.uuid, "resolved"), what="the Xid 48 of 11 days ago resolved", timeout=TIMEOUT)
    box.fleet.set_gpus(LEMON, [LEMON_GPU], xid=XID)


def told_lemon(box: ClusterBox, node: str) -> bool:
    """The lemon's page reached every channel of oncall-core (a bounded wait, not the assertion)."""
    out = told(box)
    return all(about(out[c], node, "GPUXidError") for c in ("dingtalk-core", "wecom-core", "sms-oncall"))


def read_lemon(box: ClusterBox, lemon: Lemon) -> Lemon:
    router = box.routers[0]
    fired = [a["labels"] for a in box.prometheus_alerts() if a["labels"].get("UUID") == lemon.uuid]
    lemon.fired = fired[0] if len(fired) == 1 else None
    r = router.http.get(f"/api/v1/gpus/{lemon.uuid}")
    assert r.status_code == 200, r.text
    lemon.gpu = r.json()
    (lemon.alert,) = router.alerts(filter=f'{{UUID="{lemon.uuid}"}}')
    lemon.episodes = router.detail(lemon.alert["fingerprint"])["episodes"]
    return lemon
