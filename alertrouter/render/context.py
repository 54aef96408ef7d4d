"""What templates see of a notification's items: each outbox snapshot turned into an `ItemContext`.

Snapshots are data from the engine (and, through labels and annotations, from whoever fires alerts):
every key may be missing or of the wrong type, and every value is cleaned and capped here, before any
template sees it. Escaping for the output format is `alertrouter.render.escape`'s business.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from alertrouter.channels.headline import message_headline, short_member_line
from alertrouter.gpu.faults import alert_xid, workload, workloads_text, xid_lines
from alertrouter.labels import alert_title
from alertrouter.message.facts import NodeFacts, StormFacts, Tally
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.message.words import Words, words_for
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL, AlertStatus, IncidentKind, parse_time

__all__ = [
    "ANNOTATION_CAP",
    "CONTROL_CHARS",
    "GRID_MAX",
    "HEADLINE_CAP",
    "KEY_CAP",
    "LABEL_CAP",
    "MAX_LISTED",
    "AlertContext",
    "ItemContext",
    "LocalClock",
    "build_item",
    "clean",
    "severity_style",
    "unit_cells",
]

LABEL_CAP = 256  # characters of a label value (and of a cluster member headline)
ANNOTATION_CAP = 1024  # characters of an annotation value
HEADLINE_CAP = 512
KEY_CAP = 128  # label names, incident keys
MAX_LABELS = 64  # labels kept per alert
MAX_LISTED = 500  # alerts / members / items turned into context; the rest count in "+N more"
GRID_MAX = 16  # a GPU grid is drawn for nodes with at most this many units

# Control, bidi and zero-width characters, and lone surrogates (which cannot be encoded as UTF-8 at all):
# never shown, whatever the format.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]+")
_UNIT_LABELS = ("gpu", "GPU", "gpu_index", "minor_number")
# `device` names a GPU only as a GPU device node (dcgm-exporter's device="nvidia3"); node-exporter's
# filesystem, disk and network series carry device="/dev/nvme0n1p2", "sda", "eth0", which are no GPU.
_GPU_DEVICE = re.compile(r"nvidia[0-9]+")
_NODE_LABELS = ("node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance")


_STYLES = {  # severity -> (emoji, WeCom font colour, HTML colour)
    "critical": ("🔴", "warning", "#c62828"),
    "warning": ("🟠", "warning", "#ef6c00"),
    "info": ("🔵", "comment", "#1565c0"),
}
_OTHER_STYLE = ("⚪", "comment", "#616161")
_RESOLVED_STYLE = ("✅", "info", "#2e7d32")


def clean(value: object, cap: int) -> str:
    """`value` as one line without control or bidi characters, at most `cap` characters."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = CONTROL_CHARS.sub(" ", text[: cap * 4]).strip()  # cut first: a 100 KB value costs nothing
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _as_map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _labels(value: object) -> dict[str, str]:
    items = list(_as_map(value).items())[:MAX_LABELS]
    return {clean(k, KEY_CAP): clean(v, LABEL_CAP) for k, v in items}


def _first(labels: Mapping[str, str], names: Sequence[str]) -> str:
    return next((labels[n] for n in names if labels.get(n)), "")


def _unit(labels: Mapping[str, str]) -> str:
    unit = _first(labels, _UNIT_LABELS)
    device = labels.get("device", "")
    return unit or (device if _GPU_DEVICE.fullmatch(device) else "")


def _time(value: object) -> datetime | None:
    t = parse_time(value)
    return t if t is not None and t.year > 1 else None  # Alertmanager's zero time: not set


def _index(unit: object) -> int | None:
    # ASCII digits only: "²" and other Unicode digits pass str.isdigit() but int() refuses them.
    return int(unit) if isinstance(unit, str) and unit.isascii() and unit.isdigit() and len(unit) < 9 else None


def unit_cells(units: object, total: object) -> tuple[bool, ...]:
    """Which of a node's `total` units alert, index by index (the GPU grid of chat messages and of the
    console); empty unless `units` are all indexes below a `total` of at most GRID_MAX."""
    if not isinstance(total, int) or isinstance(total, bool) or not 0 < total <= GRID_MAX:
        return ()
    if not isinstance(units, list | tuple):
        return ()
    indexes = [_index(u) for u in units]
    if any(i is None or i >= total for i in indexes):
        return ()
    lit = set(indexes)
    return tuple(i in lit for i in range(total))


def _grid(units: Sequence[str], total: int) -> str:
    """`■■■□■□■□`, or "" where `unit_cells` has no grid."""
    return "".join("■" if lit else "□" for lit in unit_cells(units, total))


@dataclass(frozen=True, slots=True)
class AlertContext:
    """One alert of an incident, as templates see it (`incident.alerts`)."""

    alertname: str
    unit: str  # the GPU index (label gpu / GPU / gpu_index / minor_number / device), or ""
    node: str
    firing: bool
    summary: str  # annotations.summary
    description: str
    since: str  # local start time, "18:00 CST"
    labels: Mapping[str, str]
    xid: str = ""  # "XID 79: GPU has fallen off the bus — action: reboot the node", or ""
    workload: str = ""  # "ml-team/train-llama-0" (exported_namespace/exported_pod), or ""


@dataclass(frozen=True, slots=True)
class ItemContext:
    """One outbox snapshot, as templates see it (`incident`, and each of `items`)."""

    incident: str  # the incident key
    kind: str  # node | cluster
    reason: str  # first | grew | repeat | resolved
    reason_text: str  # new | more alerts joined | still firing | resolved
    status: str  # firing | resolved
    resolved: bool
    severity: str
    severity_label: str  # CRITICAL, or RESOLVED (in the receiver's language: 严重, 已恢复)
    emoji: str
    color: str  # WeCom <font color>: info | comment | warning
    html_color: str
    headline: str
    alertname: str
    node: str
    region: str
    rack: str
    location: str  # "region north, rack r12"
    gpus: str  # "6/8" (node) or "211" (cluster) or ""
    unit_name: str  # "GPUs" / "GPU" (the rule's `count.name`, a label of the receiver's language)
    units: tuple[str, ...]  # at most GRID_MAX shown
    units_text: str  # "0, 1, 2, 3, 5, 7"
    grid: str  # "■■■□■□■□" or ""
    count: int  # alerts (firing ones while firing)
    nodes: int  # member nodes of a cluster incident
    summary: str  # the most common annotations.summary
    description: str
    since: str  # "18:00 CST", or "11-20 18:00 CST" on another day
    since_full: str  # "2026-11-21 18:00 CST"
    age: str  # "12m": firing for, or (resolved) lasted
    alerts: tuple[AlertContext, ...]
    alerts_more: int
    members: tuple[str, ...]  # cluster: member node headlines
    members_more: int
    labels: Mapping[str, str]
    xids: tuple[str, ...] = ()  # one line per distinct XID, with the GPUs that reported it
    xids_more: int = 0
    workloads: str = ""  # "ml/train-0, ml/train-1 +2": the workloads on the alerting GPUs
    no_data: str = ""  # "No data: gpu-node-07 is down (NodeDown)": what explains its gap in data, or ""

    def shown(self, k: int) -> ItemContext:
        """This item listing at most `k` entries of its main list (members for clusters)."""
        if self.kind == IncidentKind.CLUSTER:
            members = self.members[:k]
            return replace(self, members=members, members_more=self.members_more + len(self.members) - len(members))
        alerts = self.alerts[:k]
        xids = self.xids[: max(k, 1)]  # the first XID stays: it says what to do
        return replace(
            self,
            alerts=alerts,
            alerts_more=self.alerts_more + len(self.alerts) - len(alerts),
            xids=xids,
            xids_more=self.xids_more + len(self.xids) - len(xids),
        )


def severity_style(severity: str, resolved: bool) -> tuple[str, str, str]:
    """(emoji, WeCom font colour, HTML colour) of a severity; resolved has its own."""
    return _RESOLVED_STYLE if resolved else _STYLES.get(severity.lower(), _OTHER_STYLE)


@dataclass(frozen=True, slots=True)
class LocalClock:
    """Times as read in the configured zone: `18:00 CST`, with the date when not the reference day."""

    tz: ZoneInfo

    def _zoned(self, t: datetime) -> datetime:
        """`t` in the zone; as written when the zone would take it past year 9999 (an alert may say it
        started at 9999-12-31T23:00:00Z)."""
        try:
            return t.astimezone(self.tz)
        except OverflowError:
            return t

    def local(self, t: datetime, ref: datetime) -> str:
        lt, lref = self._zoned(t), self._zoned(ref)
        fmt = "%H:%M %Z" if lt.date() == lref.date() else "%m-%d %H:%M %Z"
        return lt.strftime(fmt)

    def full(self, t: datetime) -> str:
        return self._zoned(t).strftime("%Y-%m-%d %H:%M %Z")


def _alert(raw: AlertItem, clock: LocalClock, ref: datetime, words: Words) -> AlertContext:
    labels = _labels(raw.labels)
    notes = words.annotations(raw.annotations or {})  # summary_zh_CN for a zh-CN reader
    started = _time(raw.starts_at)
    if labels.get("alertname") == HEARTBEAT_ALERTNAME and labels.get(HEARTBEAT_LABEL) and started:
        # alertrouter's own alert: its summary in the receiver's language and time zone
        notes = {**notes, "summary": words.blind_text(labels[HEARTBEAT_LABEL], clock.local(started, ref))}
    return AlertContext(
        alertname=clean(alert_title(labels) if labels else "", HEADLINE_CAP),
        unit=_unit(labels),
        node=_first(labels, _NODE_LABELS),
        firing=raw.firing,
        summary=clean(notes.get("summary"), ANNOTATION_CAP),
        description=clean(notes.get("description"), ANNOTATION_CAP),
        since=clock.local(started, ref) if started else "",
        labels=labels,
        xid=alert_xid(labels, words.tr, words.language),
        workload=workload(labels),
    )


def _alert_order(a: AlertContext) -> tuple[bool, int, str, str]:
    index = _index(a.unit)
    return (not a.firing, 1 << 30 if index is None else index, a.unit, a.alertname)


def _members(words: Words, facts: StormFacts, alertname: str, unit_name: str) -> list[str]:
    """A storm's member lines: worded from their facts in the receiver's language, or (a snapshot stored
    before the facts were) the stored English headlines."""
    if facts.member_facts and alertname:
        return [short_member_line(words, f, alertname, unit_name) for f in facts.member_facts[:MAX_LISTED]]
    return list((facts.members or ())[:MAX_LISTED])


def build_item(
    raw: MessageSnapshot,
    *,
    fallback_severity: str,
    clock: LocalClock,
    now: datetime,
    words: Words | None = None,
) -> ItemContext:
    """The template context of one outbox snapshot: its label values, texts and summary are data from
    whoever fired the alerts, cleaned and capped here; any of the summary's keys may be missing.
    `words`: the receiver's language (English when None), of the words made here (headline, severity,
    durations, places, the XID table's)."""
    words = words or words_for()
    labels = _labels(raw.labels)
    summary = raw.summary
    ref = _time(raw.at) or now
    # The alerts' own times; a row stored before they were: when alertrouter opened it, and decided.
    opened = _time(raw.started_at) or _time(raw.opened_at)
    until = (_time(raw.ended_at) or ref) if raw.resolved else ref
    raw_alerts = raw.alerts
    alerts = tuple(sorted((_alert(a, clock, ref, words) for a in raw_alerts[:MAX_LISTED]), key=_alert_order))
    resolved = raw.resolved
    kind = raw.kind
    severity = clean(raw.severity or fallback_severity, KEY_CAP)
    emoji, color, html_color = severity_style(severity, resolved)
    node_facts = summary if isinstance(summary, NodeFacts) else NodeFacts()
    units = tuple(clean(u, LABEL_CAP) for u in node_facts.units or ())
    total = node_facts.units_total or 0
    if isinstance(summary, StormFacts):
        gpus = str(summary.units) if summary.units else ""
    else:
        gpus = (f"{len(units)}/{total}" if total else str(len(units))) if units else ""
    count, listed = _counts(summary.tally, resolved=resolved, node=kind == IncidentKind.NODE, shown=len(raw_alerts))
    alertname = labels.get("alertname", "") or (alerts[0].alertname if alerts else "")
    unit_name = clean(summary.unit_name or "GPUs", KEY_CAP)
    storm = summary if isinstance(summary, StormFacts) else StormFacts()
    members = tuple(clean(m, LABEL_CAP) for m in _members(words, storm, alertname, unit_name))
    nodes = storm.nodes if storm.nodes is not None else len(members)
    top = Counter(a.summary for a in alerts if a.summary and a.firing != resolved).most_common(1)
    current = [a for a in alerts if a.firing != resolved]  # what the message is about: firing, or resolved
    xids, xids_more = xid_lines([(a.labels, a.unit) for a in current], words.tr, words.language)
    scope = [(name, labels[name]) for name in ("region", "rack", "cluster") if labels.get(name)]
    # an alert without alertname (Alertmanager accepts those) is named by its label set
    headline = message_headline(words, raw) or summary.headline or (alert_title(labels) if labels else "")
    return ItemContext(
        incident=clean(raw.incident, KEY_CAP),
        kind=kind,
        reason=clean(raw.reason, KEY_CAP),
        reason_text=words.reason(raw.reason, summary) or clean(raw.reason, KEY_CAP),
        status=AlertStatus.RESOLVED if resolved else AlertStatus.FIRING,
        resolved=resolved,
        severity=severity,
        severity_label=words.severity_label(severity, resolved=resolved),
        emoji=emoji,
        color=color,
        html_color=html_color,
        headline=clean(headline, HEADLINE_CAP),
        alertname=alertname,
        node=_first(labels, _NODE_LABELS),
        region=labels.get("region", ""),
        rack=labels.get("rack", ""),
        location=words.scope(scope),
        gpus=gpus,
        unit_name=clean(words.unit_label(unit_name), KEY_CAP),
        units=units[:GRID_MAX],
        units_text=", ".join(units[:GRID_MAX]) + (", …" if len(units) > GRID_MAX else ""),
        grid="" if kind == IncidentKind.CLUSTER else _grid(units, total),
        count=count,
        nodes=nodes,
        summary=top[0][0] if top else next((a.summary for a in alerts if a.summary), ""),
        description=next((a.description for a in alerts if a.description), ""),
        since=clock.local(opened, ref) if opened else "",
        since_full=clock.full(opened) if opened else "",
        age=words.age(until - opened) if opened else "",
        alerts=alerts,
        alerts_more=max(0, listed - len(alerts)),
        members=members,
        members_more=max(0, nodes - len(members)),
        labels=labels,
        xids=xids,
        xids_more=xids_more,
        workloads=workloads_text([a.labels for a in current]),
        no_data=_no_data(words, node_facts),
    )


def _counts(tally: Tally, *, resolved: bool, node: bool, shown: int) -> tuple[int, int]:
    """(alerts the message counts, alerts it could list): the firing ones while firing, and of a node those
    that count (muted, held and stale alerts are not told); all of them once resolved. `shown`: the alerts
    the snapshot carries, for a row that stored no counts."""
    stored = tally.firing if not resolved and tally.firing is not None else tally.alerts
    count = shown if stored is None else stored
    if not resolved and node and (tally.eligible or 0) > 0:
        count = tally.eligible or 0
    listed = tally.eligible if not resolved else tally.alerts
    return count, max(shown, count if listed is None else listed)


def _no_data(words: Words, facts: NodeFacts) -> str:
    """The node-down incident that explains the gap in data (`pipeline.incident.summary_dict`), worded."""
    if facts.no_data is None:
        return ""
    node = clean(facts.no_data.node or facts.where, LABEL_CAP)
    cause = clean(facts.no_data.cause, LABEL_CAP)
    return words.no_data(node=node or "?", cause=cause or "?", down=facts.no_data.down)
