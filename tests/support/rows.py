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
