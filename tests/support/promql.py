"""A fake Prometheus's answer to the node lookup's queries, `count by (labels) (series)`, worked out as
Prometheus works it out from the series it stores (a fixture of `GET /api/v1/query?query=<series>`):
each series' labels cut to the `by` labels (`__name__` goes, an empty value is no label), one series
per distinct set, its value how many there were."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
_COUNT_BY = re.compile(r"count by \(([a-zA-Z_][a-zA-Z0-9_]*(?:, [a-zA-Z_][a-zA-Z0-9_]*)*)\) \(([a-z_]+)\)")


def series_of(query: str) -> str:
    """The series a lookup query reads (what its fixture is named)."""
    match = _COUNT_BY.fullmatch(query)
    if match is None:
        raise AssertionError(f"not a node lookup query: {query!r}")
    return match[2]


def answer(query: str, fixtures: Path = FIXTURES) -> dict[str, Any]:
    """The JSON answer to `query` over the fixture of its series."""
    match = _COUNT_BY.fullmatch(query)
    if match is None:
        raise AssertionError(f"not a node lookup query: {query!r}")
    by = match[1].split(", ")
    stored = json.loads((fixtures / f"{match[2]}.json").read_text())
    counts: dict[tuple[tuple[str, str], ...], int] = {}
    at = 0.0
    for item in stored["data"]["result"]:
        metric, (at, _) = item["metric"], item["value"]
        kept = tuple((name, metric[name]) for name in by if metric.get(name, ""))
        counts[kept] = counts.get(kept, 0) + 1
    result = [{"metric": dict(labels), "value": [at, str(n)]} for labels, n in counts.items()]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def answer_bytes(query: str, fixtures: Path = FIXTURES) -> bytes:
    return json.dumps(answer(query, fixtures)).encode()
