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

A GPU keeps its history when it moves (MOVED): its first Xid 48, 20 days back, is pushed with the labels of
its first place (gpu-node-05, GPU 6) and resolves; then the board is moved to gpu-node-06 (GPU 1, `move_gpu`)
and reports Xid 48 there through the real rule: the page of gpu-node-06 says it is an RMA candidate, and the
GPU's history (by its UUID) shows both places.

The phase is three steps the timeline calls per GPU (`push_first`, `fire_again`, `told_gpu`) and one read
at rest (`read_gpu`), on nodes of their own (LEMON, SPARE): a phase about other GPU faults (a root Xid and
its follow-ons on another node) fits beside it the same way.
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
    "KUBERNETES",
    "LEMON",
    "LEMON_GPU",
    "MOVED_DAYS",
    "MOVED_FROM",
    "MOVED_TO",
    "SPARE",
    "Lemon",
    "fire_again",
    "push_first",
    "read_gpu",
    "rule_labels",
    "told_gpu",
]

LEMON, SPARE = 5, 6  # gpu-node-05, gpu-node-06
# node -> its dcgm-exporter pod, that pod's IP, its node-exporter pod (GPU Operator, relabelled)
KUBERNETES = {
    LEMON: ("nvidia-dcgm-exporter-8hv4n", "10.244.5.31", "kube-prometheus-stack-prometheus-node-exporter-c6t9r"),
    SPARE: ("nvidia-dcgm-exporter-t2mzp", "10.244.6.12", "kube-prometheus-stack-prometheus-node-exporter-w8d4f"),
}
LEMON_GPU = 3
DAYS = 11  # since the lemon's first Xid 48
MOVED_FROM, MOVED_TO = (LEMON, 6), (SPARE, 1)  # (node, slot) of the moved GPU's first and second Xid 48
MOVED_DAYS = 20
XID = 48
TIMEOUT = 150.0


def rule_labels() -> dict[str, str]:
    """What rules/prometheus/gpu.rules.yml's GPUXidError adds to the series for Xid 48 (`xid` is its
    `printf "%.0f" $value`); the phase checks Prometheus' own alert has the same labels."""
    return {"alertname": "GPUXidError", "severity": "critical", "xid": str(XID)}


@dataclass
class Lemon:
    """What the phase did to one GPU and what it found at rest. `place`: (node, slot) of its first Xid 48,
    `labels`: that alert, pushed `first_at`;
    `fired`: Prometheus' own alert for the GPU; `gpu`: GET /api/v1/gpus/{uuid}; `alert`: the alert as
    alertrouter stores it (its current episode, Prometheus'), `episodes` its episodes (the pushed one too)."""

    uuid: str
    place: tuple[int, int]
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


def _alert(box: ClusterBox, lemon: Lemon, node: str) -> list[dict[str, Any]]:
    """alertrouter's GPUXidError of the GPU at `node` (one alert per place: the labels differ)."""
    return box.routers[0].alerts(filter=f'{{UUID="{lemon.uuid}",alertname="GPUXidError",node="{node}"}}')


def _stored(box: ClusterBox, lemon: Lemon, status: str) -> bool:
    found = _alert(box, lemon, lemon.labels["node"])
    return len(found) == 1 and found[0]["status"] == status


def push_first(box: ClusterBox, place: tuple[int, int], days: int) -> Lemon:
    """The first Xid 48 of the GPU at `place` (node, slot), started `days` ago, pushed firing with the
    labels of its series as Prometheus holds them."""
    uuid = box.fleet.node(place[0]).gpus[place[1]].uuid
    (series,) = box.query(f'DCGM_FI_DEV_XID_ERRORS{{UUID="{uuid}"}}')
    labels = {k: v for k, v in series["metric"].items() if k != "__name__"} | rule_labels()
    first_at = datetime.now(UTC).replace(microsecond=0) - timedelta(days=days)
    lemon = Lemon(uuid, place, first_at, labels)
    summary = f"GPU {labels['gpu']} on {labels.get('Hostname') or labels.get('hostname')} reported XID {XID}"
    _alertmanagers(box, {"labels": labels, "annotations": {"summary": summary}, "startsAt": first_at.isoformat()})
    return lemon


def fire_again(box: ClusterBox, lemon: Lemon, to: tuple[int, int] | None = None) -> None:
    """Once alertrouter holds the first Xid 48 (firing), it resolves; once that is stored too, the GPU
    (moved `to` another node and slot first, if given) reports Xid 48 again through its dcgm-exporter, so
    Prometheus' alert starts after the pushed one ended."""
    what = f"the Xid 48 of {lemon.uuid} pushed"
    wait_for(lambda: _stored(box, lemon, "firing"), what=f"{what} stored", timeout=TIMEOUT)
    ended = datetime.now(UTC).isoformat()
    _alertmanagers(box, {"labels": lemon.labels, "startsAt": lemon.first_at.isoformat(), "endsAt": ended})
    wait_for(lambda: _stored(box, lemon, "resolved"), what=f"{what} resolved", timeout=TIMEOUT)
    if to is not None:
        box.fleet.move_gpu(lemon.place, to)
    node, slot = to or lemon.place
    box.fleet.set_gpus(node, [slot], xid=XID)


def told_gpu(box: ClusterBox, node: str) -> bool:
    """A GPU's page about `node` reached every channel of oncall-core (a bounded wait, not the assertion)."""
    out = told(box)
    return all(about(out[c], node, "GPUXidError") for c in ("dingtalk-core", "wecom-core", "sms-oncall"))


def read_gpu(box: ClusterBox, lemon: Lemon, node: str) -> Lemon:
    """What the chain holds at rest of the GPU whose second Xid 48 fired at `node`."""
    router = box.routers[0]
    fired = [a["labels"] for a in box.prometheus_alerts() if a["labels"].get("UUID") == lemon.uuid]
    lemon.fired = fired[0] if len(fired) == 1 else None
    r = router.http.get(f"/api/v1/gpus/{lemon.uuid}")
    assert r.status_code == 200, r.text
    lemon.gpu = r.json()
    (lemon.alert,) = _alert(box, lemon, node)
    lemon.episodes = router.detail(lemon.alert["fingerprint"])["episodes"]
    return lemon
