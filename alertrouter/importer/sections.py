"""Alertmanager's `inhibit_rules` and named time intervals, carried into alertrouter's sections of the same names."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from alertrouter.importer.matching import legacy_map, matcher_list, string_list
from alertrouter.importer.report import Report
from alertrouter.importer.source import SourceFile
from alertrouter.ruleset.time_intervals import TimeIntervalConfig

__all__ = ["convert_inhibit_rules", "convert_time_intervals"]

_MATCHER_KEYS = ("source_matchers", "target_matchers")
_LEGACY_KEYS = ("source_match", "source_match_re", "target_match", "target_match_re")
_INTERVAL_SECTIONS = ("time_intervals", "mute_time_intervals")


def _inhibit_rule(src: SourceFile, i: int, node: Any, labels: set[str]) -> dict[str, Any]:
    loc = ("inhibit_rules", i)
    if not isinstance(node, dict):
        raise src.error(loc, "an inhibit rule must be a mapping")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "name":
            if not isinstance(value, str):
                raise src.error((*loc, key), "must be text")
            out[key] = value
        elif key in _MATCHER_KEYS:
            out[key] = matcher_list(src, (*loc, key), value, labels)
        elif key in _LEGACY_KEYS:
            out[key] = legacy_map(src, (*loc, key), value, labels, regex=key.endswith("_re"))
        elif key == "equal":
            out[key] = string_list(src, (*loc, key), value)
            labels.update(out[key])
        else:
            raise src.error((*loc, key), f"unknown key {key!r} in an inhibit rule")
    # Alertmanager mutes a target only while its source is already firing: no hold-down for late sources.
    out["hold_down"] = "0s"
    return out


def convert_inhibit_rules(src: SourceFile, node: Any, report: Report, labels: set[str]) -> list[dict[str, Any]]:
    """The rules as written, with hold_down 0s; the label names they test or compare are added to `labels`."""
    if node is None:
        return []
    if not isinstance(node, list):
        raise src.error(("inhibit_rules",), "must be a list of inhibit rules")
    rules = [_inhibit_rule(src, i, item, labels) for i, item in enumerate(node)]
    if rules:
        report.mapped.append(
            f"{len(rules)} inhibit rule(s), old and new matcher forms as written, equal lists; "
            "hold_down 0s (Alertmanager does not wait for a late source)"
        )
    return rules


def convert_time_intervals(src: SourceFile, data: dict[str, Any], report: Report) -> dict[str, list[dict[str, Any]]]:
    """Both sections as written (alertrouter reads the deprecated `mute_time_intervals` too); a name once."""
    out: dict[str, list[dict[str, Any]]] = {}
    seen: dict[str, int] = {}
    for section in _INTERVAL_SECTIONS:
        items = data.get(section)
        if items is None:
            continue
        if not isinstance(items, list):
            raise src.error((section,), "must be a list of named time intervals")
        for i, item in enumerate(items):
            try:
                config = TimeIntervalConfig.model_validate(item)
            except ValidationError as exc:
                err = exc.errors()[0]
                message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
                raise src.error((section, i, *err["loc"]), message.removeprefix("Value error, ")) from None
            if config.name in seen:
                where = f"first at line {seen[config.name]}"
                raise src.error((section, i, "name"), f"time interval {config.name!r} is not unique ({where})")
            seen[config.name] = src.line((section, i))
            out.setdefault(section, []).append(config.model_dump(exclude_none=True))
    if seen:
        report.mapped.append(f"time intervals {sorted(seen)} as written (mute_time_intervals, active_time_intervals)")
    return out
