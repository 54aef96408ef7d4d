"""Every metric alertrouter exports is in the metrics table of docs/en/operations.md, and every metric that table
names is exported: a metric added, renamed or removed fails here until the page says so."""

from __future__ import annotations

import re
from pathlib import Path

from alertrouter.metrics import Metrics

PAGE = Path(__file__).resolve().parents[2] / "docs" / "en" / "operations.md"


def _exported() -> set[str]:
    """Metric families as /metrics names them (a counter's family is its name without `_total`)."""
    names = set()
    for family in Metrics().registry.collect():
        names.add(f"{family.name}_total" if family.type == "counter" else family.name)
    return names


def _documented() -> set[str]:
    table = PAGE.read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(alertrouter_[a-z0-9_]+)`", table))


def test_every_exported_metric_is_documented() -> None:
    exported = _exported()
    assert "alertrouter_webhooks_received_total" in exported
    missing = sorted(exported - _documented())
    assert not missing, f"metrics missing from the table in docs/en/operations.md: {missing}"


def test_every_documented_metric_is_exported() -> None:
    unknown = sorted(_documented() - _exported())
    assert not unknown, f"docs/en/operations.md lists metrics alertrouter does not export: {unknown}"
