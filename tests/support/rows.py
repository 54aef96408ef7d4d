"""Rows of the alerts table as the ingest writes them, for store tests that need some in place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2026, 11, 21, 8, 20, 5, 123456, tzinfo=UTC)


def alert(fp: str, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "fingerprint": fp,
        "alertname": "GPUHighTemp",
        "status": "firing",
        "labels": {"alertname": "GPUHighTemp", "Hostname": "gpu-node-07", "gpu": "3", "note": 'ünï "q"'},
        "annotations": {"summary": "hot"},
        "starts_at": T0 - timedelta(minutes=5),
        "ends_at": None,
        "resolved_by": None,
        "generator_url": "http://prometheus:9090/graph",
        "episodes": 1,
        "first_seen": T0,
        "last_seen": T0,
        "updated_at": T0,
        "fired_at": T0,
    }
    return {**row, **overrides}


def incident(key: str, status: str, updated_at: datetime, acknowledged: bool) -> dict[str, Any]:
    return {
        "key": key,
        "kind": "node",
        "rule": "gpu-by-node",
        "status": status,
        "severity": "critical",
        "headline": f"{key}: GPUHighTemp on 1/8 GPUs",
        "labels": {"alertname": "GPUHighTemp", "node": key},
        "summary": {},
        "parent_key": None,
        "opened_at": updated_at - timedelta(minutes=5),
        "active_since": None,
        "updated_at": updated_at,
        "resolved_at": updated_at if status == "resolved" else None,
        "acknowledged_at": updated_at if acknowledged else None,
        "acknowledged_by": "oncall" if acknowledged else None,
    }


def acknowledgement_cases(since: datetime) -> tuple[list[dict[str, Any]], set[str]]:
    """Incidents acknowledged or not, firing or resolved before, at and after `since` (the engine holds
    the resolved ones changed since then); and the keys of those the engine's read must find."""
    rows = [
        incident("firing-acked", "firing", T0 - timedelta(days=3), True),  # however long ago it changed
        incident("firing-not-acked", "firing", T0, False),
        incident("resolved-recently-acked", "resolved", since + timedelta(seconds=1), True),
        incident("resolved-at-the-edge-acked", "resolved", since, True),
        incident("resolved-long-ago-acked", "resolved", since - timedelta(seconds=1), True),
        incident("resolved-recently-not-acked", "resolved", T0, False),
    ]
    return rows, {"firing-acked", "resolved-recently-acked", "resolved-at-the-edge-acked"}
