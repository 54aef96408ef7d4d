"""The shipped dcgm-exporter counters file enables every DCGM field the shipped Prometheus rules read: a rule
over a field dcgm-exporter does not export never fires, and nothing says so."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
COUNTERS = REPO / "rules" / "deploy" / "dcgm-counters.csv"
FIELD = re.compile(r"\bDCGM_FI_[A-Z0-9_]*[A-Z0-9]\b")
TYPES = {"gauge", "counter", "label"}


def counters() -> dict[str, str]:
    """field -> its metric type, as dcgm-exporter reads the file: `#` lines and blank ones skipped."""
    fields: dict[str, str] = {}
    for line in COUNTERS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, kind, help_text = (part.strip() for part in line.split(",", 2))
        assert kind in TYPES, line
        assert help_text, line
        assert name not in fields, f"{name} twice"
        fields[name] = kind
    return fields


def rule_fields() -> set[str]:
    found: set[str] = set()
    for path in sorted((REPO / "rules" / "prometheus").glob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
            for rule in group["rules"]:
                found |= set(FIELD.findall(rule["expr"]))
    return found


def test_every_field_the_rules_read_is_exported() -> None:
    fields = rule_fields()
    assert {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"} <= fields  # the rules were read
    assert sorted(fields - counters().keys()) == []


def test_the_serial_number_is_a_label() -> None:
    # an RMA form asks for the board's serial: dcgm-exporter exports it only as a label, when asked
    assert counters()["DCGM_FI_DEV_SERIAL"] == "label"
