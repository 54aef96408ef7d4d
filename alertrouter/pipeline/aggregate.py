"""Aggregation: per-GPU alerts become one node incident, and a storm of node incidents one cluster incident.

An incident is to alertrouter what a group is to Alertmanager: the unit a person is told about.
The first aggregation rule whose matchers take an alert decides its incident key (e.g. alertname +
node); an alert no rule takes gets an incident of its own kind on its node. A node incident reports
how many of the node's units (GPUs) are affected and which ("gpu-node-07: 6/8 GPUs").

Storm roll-up: when more than `threshold` node incidents with the same roll-up key open within
`window`, they roll into one cluster incident, which later node incidents of that key join quietly
for as long as it stays open.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from gettext import NullTranslations

from alertrouter.labels import Matcher, alert_title, format_label_set, matches_all
from alertrouter.labelset import LabelSet
from alertrouter.message import phrases
from alertrouter.model import KEY_MAX, AlertView, bounded

__all__ = [
    "DEFAULT_RULE",
    "AggregationRule",
    "IncidentSummary",
    "RollupRule",
    "assign_rule",
    "common_labels",
    "counted_storm_headline",
    "incident_key",
    "rolls_up",
    "rollup_key",
    "scope_of",
    "severity_rank",
    "storm_headline",
    "storm_scope",
    "summarize_incident",
    "worst_severity",
]

_ALERTNAME = "alertname"
# The stored headlines are the messages' phrases in English: their words exist once (`message.phrases`).
_ENGLISH = NullTranslations()


@dataclass(frozen=True, slots=True)
class RollupRule:
    threshold: int = 5  # more than this many node incidents ...
    window: timedelta = timedelta(minutes=2)  # ... opening within this window roll up
    by: tuple[str, ...] = ("alertname",)  # the cluster incident's key labels (e.g. add "region")
    scope_labels: tuple[str, ...] = ("region", "rack", "cluster")  # shown when common to all members


@dataclass(frozen=True, slots=True)
class AggregationRule:
    name: str
    matchers: tuple[Matcher, ...] = ()
    group_by: tuple[str, ...] = ("alertname", "node")
    unit_label: str | None = None  # what is counted, e.g. "gpu"
    units_per_group: int | None = None  # the denominator, e.g. 8 GPUs per node
    unit_name: str = "GPUs"
    group_wait: timedelta | None = None  # overrides the route's, when set
    group_interval: timedelta | None = None
    rollup: RollupRule | None = None


DEFAULT_RULE = AggregationRule(name="default")


def assign_rule(rules: Sequence[AggregationRule], labels: Mapping[str, str]) -> AggregationRule:
    for rule in rules:
        if matches_all(rule.matchers, labels):
            return rule
    return DEFAULT_RULE


def _key_value(labels: Mapping[str, str], name: str) -> str:
    """A label's value in a key. An alert without `alertname` (Alertmanager accepts those) stands for
    itself there, by its label set: unrelated such alerts are not one incident of "no name"."""
    if name == _ALERTNAME and not labels.get(name):
        return alert_title(labels)
    return labels.get(name, "")


def incident_key(rule: AggregationRule, labels: Mapping[str, str]) -> str:
    """Stable and readable: `gpu-by-node{alertname="GPUHighTemp",node="gpu-node-07"}`."""
    values = ",".join(f"{name}={json.dumps(_key_value(labels, name), ensure_ascii=False)}" for name in rule.group_by)
    return bounded(f"{rule.name}{{{values}}}", KEY_MAX)


def rollup_key(rule: AggregationRule, labels: Mapping[str, str]) -> str | None:
    if rule.rollup is None:
        return None
    values = ",".join(f"{n}={json.dumps(_key_value(labels, n), ensure_ascii=False)}" for n in rule.rollup.by)
    return bounded(f"{rule.name}/cluster{{{values}}}", KEY_MAX)


_DEFAULT_SEVERITIES = ("critical", "warning", "info")


def severity_rank(severity: str, order: Sequence[str] = _DEFAULT_SEVERITIES) -> int:
    """Lower is worse; unknown severities rank after the known ones."""
    try:
        return order.index(severity)
    except ValueError:
        return len(order)


def worst_severity(
    alerts: Iterable[AlertView], *, severity_label: str = "severity", severities: Sequence[str] = _DEFAULT_SEVERITIES
) -> str:
    """The worst severity among the alerts ("" when there are none)."""
    return min(
        (a.labels.get(severity_label, "") for a in alerts), key=lambda s: severity_rank(s, severities), default=""
    )


@dataclass(frozen=True, slots=True)
class IncidentSummary:
    """What a message about an incident needs to say, computed from its current alerts."""

    key: str
    rule: str
    group_labels: Mapping[str, str]
    common_labels: Mapping[str, str]
    severity: str
    firing: frozenset[str]  # fingerprints of the alerts that count (firing, not muted, not held)
    units: tuple[str, ...] = ()  # affected unit values, e.g. GPU indices, sorted
    units_total: int | None = None
    alerts: int = 0
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """What the incident is about: its node, or its other group label values."""
        return self.group_labels.get("node") or ", ".join(
            v for k, v in self.group_labels.items() if k != "alertname" and v
        )

    @property
    def what(self) -> str:
        """Its alertname; an alert without one (Alertmanager accepts those) is named by its labels, the
        node left out when it is said already."""
        what = self.group_labels.get(_ALERTNAME) or self.common_labels.get(_ALERTNAME)
        if what:
            return what
        where = self.where
        rest = {k: v for k, v in self.common_labels.items() if k != "node" or not where}
        return format_label_set(rest) if rest else "alert"

    @property
    def headline(self) -> str:
        """`gpu-node-07: GPUHighTemp on 6/8 GPUs`; cluster incidents build their own (see `storm_headline`).
        Stored in English: `message.phrases.node_headline` untranslated, as messages word it from `where`,
        `what` and the units in the receiver's language."""
        unit_name = self.extra.get("unit_name", "GPUs")
        return phrases.node_headline(_ENGLISH, self.where, self.what, len(self.units), self.units_total, unit_name)


def common_labels(label_sets: Iterable[Mapping[str, str]]) -> Mapping[str, str]:
    """The labels every set has with the same value: the only set itself when there is one (label sets
    are never changed once made, and most node incidents are one alert's), else a new mapping."""
    it = iter(label_sets)
    first = next(it, None)
    if first is None:
        return {}
    second = next(it, None)
    if second is None:
        return first
    rest = [second, *it]
    if type(first) is LabelSet and (same := first.shared(rest)) is not None:
        return same
    # As (name, value) pairs intersected in C: a storm's common labels are those of a thousand members.
    shared = first.items() & second.items()
    for labels in rest[1:]:
        if not shared:
            break
        shared.intersection_update(labels.items())
    return {n: v for n, v in first.items() if (n, v) in shared}


def summarize_incident(
    rule: AggregationRule,
    key: str,
    alerts: Sequence[AlertView],
    *,
    severity_label: str = "severity",
    severities: Sequence[str] = _DEFAULT_SEVERITIES,
) -> IncidentSummary:
    """Summarise an incident from the alerts that count for it (firing, not muted, not held)."""
    labels = [a.labels for a in alerts]
    common = common_labels(labels)
    group_labels = {name: (labels[0].get(name, "") if labels else "") for name in rule.group_by}
    severity = worst_severity(alerts, severity_label=severity_label, severities=severities)
    units: tuple[str, ...] = ()
    if rule.unit_label:
        values = {a.labels[rule.unit_label] for a in alerts if a.labels.get(rule.unit_label)}
        units = tuple(sorted(values, key=lambda v: (len(v), v)))  # "2" before "10"
    return IncidentSummary(
        key=key,
        rule=rule.name,
        group_labels=group_labels,
        common_labels=common,
        severity=severity,
        firing=frozenset(a.fingerprint for a in alerts),
        units=units,
        units_total=rule.units_per_group,
        alerts=len(alerts),
        extra={"unit_name": rule.unit_name},
    )


def rolls_up(rollup: RollupRule, recent: int) -> bool:
    """Whether a storm starts, with `recent` of its node incidents opened within the window."""
    return recent > rollup.threshold


def storm_scope(members: Sequence[IncidentSummary], scope_labels: Sequence[str]) -> list[tuple[str, str]]:
    """(label, value) of the scope labels all members share: where a storm is."""
    return scope_of(common_labels(m.common_labels for m in members), scope_labels)


def scope_of(common: Mapping[str, str], scope_labels: Sequence[str]) -> list[tuple[str, str]]:
    """(label, value) of the scope labels among a storm's common labels."""
    return [(name, common[name]) for name in scope_labels if common.get(name)]


def storm_headline(
    alertname: str, members: Sequence[IncidentSummary], scope_labels: Sequence[str], unit_name: str = "GPUs"
) -> str:
    """`GPUHighTemp on 37 nodes in region north, rack r12: 211 GPUs`: `counted_storm_headline` of the
    members' units and the scope they share."""
    units = sum(len(m.units) for m in members)
    return counted_storm_headline(alertname, len(members), storm_scope(members, scope_labels), units, unit_name)


def counted_storm_headline(
    alertname: str, nodes: int, scope: Sequence[tuple[str, str]], units: int, unit_name: str = "GPUs"
) -> str:
    """A storm's stored headline from its counts and scope: `message.phrases.storm_headline` untranslated,
    as messages word it from the storm's facts in the receiver's language."""
    return phrases.storm_headline(_ENGLISH, alertname, nodes, scope, units, unit_name)
