"""Alertmanager's route tree as alertrouter's `route:`, with the grouping it implies as an aggregation rule.

Matchers of every form, `continue`, the timers and the time-interval names are carried as written.
`group_by` is not a route setting in alertrouter (incidents are made before routing, by aggregation
rules): it becomes one catch-all aggregation rule, and the report says where that groups differently.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from alertrouter.durations import parse_duration
from alertrouter.importer.matching import legacy_map, matcher_list, string_list
from alertrouter.importer.report import Report
from alertrouter.importer.source import Loc, SourceFile
from alertrouter.ruleset.errors import format_loc

__all__ = ["AGGREGATION_RULE", "RouteTree", "aggregation", "convert_route"]

AGGREGATION_RULE = "alertmanager-groups"
_KEYS = {
    "receiver",
    "group_by",
    "continue",
    "match",
    "match_re",
    "matchers",
    "group_wait",
    "group_interval",
    "repeat_interval",
    "mute_time_intervals",
    "active_time_intervals",
    "routes",
}
# Alertmanager's defaults for the root route; alertrouter's own (per-severity repeats) differ, so the
# imported root states them.
_ROOT_DEFAULTS = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
_ALL_LABELS = "..."


@dataclass
class RouteTree:
    """The converted tree and what the rest of the import needs from it."""

    route: dict[str, Any]
    labels: set[str] = field(default_factory=set)  # every label a route matches on
    group_bys: dict[str, tuple[str, ...]] = field(default_factory=dict)  # route path -> its effective group_by
    routes: int = 0


def _duration(src: SourceFile, loc: Loc, value: Any, *, positive: bool) -> str:
    if not isinstance(value, str):
        raise src.error(loc, "must be a duration such as 30s, 5m or 4h")
    try:
        parsed = parse_duration(value)
    except ValueError as exc:
        raise src.error(loc, str(exc)) from None
    if positive and parsed <= timedelta(0):
        raise src.error(loc, "must be greater than zero")
    return value


def _check_root(src: SourceFile, node: Mapping[str, Any]) -> None:
    """What Alertmanager refuses in the root route, which every alert enters."""
    if not node.get("receiver"):
        raise src.error(("route",), "the root route must name a receiver")
    for key in ("match", "match_re", "matchers"):
        if node.get(key):
            raise src.error(("route", key), "the root route must not have any matchers")
    for key in ("mute_time_intervals", "active_time_intervals"):
        if node.get(key):
            raise src.error(("route", key), f"the root route must not have any {key.replace('_', ' ')}")
    if node.get("continue"):
        raise src.error(("route", "continue"), "the root route cannot have continue")


@dataclass
class _Walk:
    src: SourceFile
    receivers: Collection[str]
    intervals: Collection[str]
    send_resolved: Mapping[str, bool]
    tree: RouteTree


def _route(walk: _Walk, loc: Loc, node: Any, inherited: tuple[str, tuple[str, ...] | None]) -> dict[str, Any]:
    """One route as alertrouter writes it; `inherited` is the parent's receiver and group_by."""
    src = walk.src
    if not isinstance(node, dict):
        raise src.error(loc, "a route must be a mapping")
    for key in node:
        if key not in _KEYS:
            raise src.error((*loc, key), f"unknown key {key!r} in a route")
    walk.tree.routes += 1
    out: dict[str, Any] = {}
    for key in ("match", "match_re"):
        if key in node:
            out[key] = legacy_map(src, (*loc, key), node[key], walk.tree.labels, regex=key == "match_re")
    if "matchers" in node:
        out["matchers"] = matcher_list(src, (*loc, "matchers"), node["matchers"], walk.tree.labels)
    receiver, group_by = inherited
    if "receiver" in node:
        if not isinstance(node["receiver"], str) or node["receiver"] not in walk.receivers:
            raise src.error((*loc, "receiver"), f"undefined receiver {node['receiver']!r} used in route")
        receiver = out["receiver"] = node["receiver"]
    if "continue" in node:
        if not isinstance(node["continue"], bool):
            raise src.error((*loc, "continue"), "must be true or false")
        out["continue"] = node["continue"]
    for key in ("group_wait", "group_interval", "repeat_interval"):
        if key in node:
            out[key] = _duration(src, (*loc, key), node[key], positive=key != "group_wait")
        elif loc == ("route",):
            out[key] = _ROOT_DEFAULTS[key]
    resolved = walk.send_resolved.get(receiver, True)
    if loc == ("route",) or resolved != walk.send_resolved.get(inherited[0], True):
        out["send_resolved"] = resolved
    for key in ("mute_time_intervals", "active_time_intervals"):
        if key in node:
            names = string_list(src, (*loc, key), node[key])
            for i, name in enumerate(names):
                if name not in walk.intervals:
                    raise src.error((*loc, key, i), f"undefined time interval {name!r} used in route")
            out[key] = names
    if "group_by" in node:
        group_by = tuple(string_list(src, (*loc, "group_by"), node["group_by"]))
    walk.tree.group_bys[format_loc(loc)] = group_by or ()
    children = node.get("routes") or []
    if not isinstance(children, list):
        raise src.error((*loc, "routes"), "must be a list of routes")
    if children:
        out["routes"] = [
            _route(walk, (*loc, "routes", i), child, (receiver, group_by)) for i, child in enumerate(children)
        ]
    return out


def convert_route(
    src: SourceFile,
    node: Any,
    *,
    receivers: Collection[str],
    intervals: Collection[str],
    send_resolved: Mapping[str, bool],
) -> RouteTree:
    if not isinstance(node, dict):
        raise src.error(("route",), "the route must be a mapping with at least a receiver")
    _check_root(src, node)
    tree = RouteTree(route={})
    walk = _Walk(src, receivers, intervals, send_resolved, tree)
    tree.route = _route(walk, ("route",), node, (node["receiver"], None))
    return tree


def aggregation(tree: RouteTree, report: Report) -> list[dict[str, Any]]:
    """One catch-all rule keying incidents by every route's group_by and every label routes match on.

    alertrouter routes an incident by the labels its alerts share, so a label some route tests must be
    in the key, or an incident could mix alerts that Alertmanager routes apart.
    """
    keys: list[str] = []
    for group_by in tree.group_bys.values():
        keys += [label for label in group_by if label != _ALL_LABELS and label not in keys]
    extra = sorted(tree.labels - set(keys))
    keys += extra
    if not keys:
        keys = ["alertname"]
        report.changed.append(
            "group_by: none set, so Alertmanager sends one notification per route for all its alerts; "
            "alertrouter keys incidents by at least one label: one incident per alertname"
        )
    for path, group_by in tree.group_bys.items():
        if _ALL_LABELS in group_by:
            report.changed.append(
                f"{path}.group_by ['...'] (every label, one notification per alert) is not mapped: "
                f"incidents are keyed by {keys}"
            )
    differing = [path for path, group_by in tree.group_bys.items() if set(group_by) != set(keys)]
    if differing:
        which = "every route" if len(differing) == len(tree.group_bys) else ", ".join(differing)
        report.changed.append(
            f"group_by: alertrouter makes incidents before routing them, keyed by {keys} on every route "
            f"(each route's group_by plus the labels routes match on{': ' + ', '.join(extra) if extra else ''}); "
            f"where a route groups by fewer labels ({which}), alerts Alertmanager sends in one notification may "
            "be told as several incidents"
        )
    else:
        report.mapped.append(f"group_by {keys} -> aggregation rule {AGGREGATION_RULE}")
    return [{"name": AGGREGATION_RULE, "group_by": keys}]
