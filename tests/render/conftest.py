"""Builders for outbox snapshots and notifications shaped like `pipeline.incident.message_snapshot` writes them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
OPENED = "2026-11-21T10:00:00+00:00"
AT = "2026-11-21T10:05:00+00:00"
LINK = "https://alerts.example.org/incidents/77"


def node_item(
    *,
    node: str = "gpu-node-07",
    alertname: str = "GPUHighTemp",
    severity: str = "critical",
    units: Sequence[str] = ("0", "1", "2", "3", "5", "7"),
    total: int = 8,
    status: str = "firing",
    summaries: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    headline: str | None = None,
) -> dict[str, Any]:
    """A node incident snapshot; one alert per unit, `summaries[i]` as the i-th alert's summary."""
    common = {"alertname": alertname, "node": node, "region": "north", "rack": "r12", **(labels or {})}
    firing = status == "firing"
    alerts = [
        {
            "fingerprint": f"fp{i}",
            "labels": {**common, "gpu": unit},
            "firing": firing,
            "annotations": {"summary": summaries[i] if summaries else f"GPU {unit} hot", **(annotations or {})},
            "starts_at": OPENED,
        }
        for i, unit in enumerate(units)
    ]
    head = headline if headline is not None else f"{node}: {alertname} on {len(units)}/{total} GPUs"
    return {
        "incident": f"gpu-by-node/{alertname}/{node}",
        "kind": "node",
        "reason": "first" if firing else "resolved",
        "status": status,
        "severity": severity,
        "headline": head,
        "labels": common,
        "summary": {
            "headline": head,
            "units": list(units),
            "units_total": total,
            "unit_name": "GPUs",
            "alerts": len(units),
            "firing": len(units) if firing else 0,
            "eligible": len(units) if firing else 0,
            "muted": 0,
        },
        "alerts": alerts,
        "opened_at": OPENED,
        "at": AT,
    }


def cluster_item(
    *, members: Sequence[str], headline: str = "GPUHighTemp on many nodes", region: str = "north"
) -> dict[str, Any]:
    return {
        "incident": f"cluster/GPUHighTemp/{region}",
        "kind": "cluster",
        "reason": "first",
        "status": "firing",
        "severity": "critical",
        "headline": headline,
        "labels": {"alertname": "GPUHighTemp", "region": region},
        "summary": {"headline": headline, "nodes": len(members), "units": 6 * len(members), "members": list(members)},
        "alerts": [],
        "opened_at": OPENED,
        "at": AT,
    }


def notification(kind: MessageKind, items: Sequence[dict[str, Any]], link: str | None = LINK) -> Notification:
    snapshots = tuple(MessageSnapshot.from_json(i) for i in items)  # as the delivery loop reads the stored rows
    return Notification(kind=kind, receiver="oncall", severity=items[0]["severity"], items=snapshots, link=link)


@pytest.fixture
def templates() -> Templates:
    return Templates(builtin_dir=TEMPLATES_DIR)


@pytest.fixture
def make_node() -> Callable[..., dict[str, Any]]:
    return node_item


@pytest.fixture
def make_cluster() -> Callable[..., dict[str, Any]]:
    return cluster_item


@pytest.fixture
def make_notification() -> Callable[..., Notification]:
    return notification
