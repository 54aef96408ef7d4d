"""What templates see of a notification's items: each outbox snapshot turned into an `ItemContext`.

Snapshots are data from the engine (and, through labels and annotations, from whoever fires alerts):
every key may be missing or of the wrong type, and every value is cleaned and capped here, before any
template sees it. Escaping for the output format is `alertrouter.render.escape`'s business.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from alertrouter.channels.headline import message_headline, short_member_line
from alertrouter.gpu.faults import alert_xid, workload, workloads_text, xid_lines
from alertrouter.gpu.triage_words import triage_lines
from alertrouter.labels import alert_title
from alertrouter.message.facts import Facts, NodeFacts, StormFacts, Tally
from alertrouter.message.jobs import JOB_ALERTNAME, JOB_LABEL, job_text
from alertrouter.message.rma import rma_lines
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.message.words import Words, words_for
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL, IncidentKind, parse_time
from alertrouter.render.items import AlertContext, ItemContext, first_of, node_of

__all__ = [
    "ANNOTATION_CAP",
    "CONTROL_CHARS",
    "GRID_MAX",
    "HEADLINE_CAP",
    "KEY_CAP",
    "LABEL_CAP",
    "MAX_LISTED",
    "LocalClock",
    "build_item",
    "clean",
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


def _unit(labels: Mapping[str, str]) -> str:
    unit = first_of(labels, _UNIT_LABELS)
    device = labels.get("device", "")
    return unit or (device if _GPU_DEVICE.fullmatch(device) else "")


MAX_NEARBY = 5  # neighbours in maintenance named in one message


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
    elif labels.get("alertname") == JOB_ALERTNAME and labels.get(JOB_LABEL) and started:  # a job hit, likewise
        notes = {**notes, "summary": job_text(words.tr, labels, clock.local(started, ref))}
    return AlertContext(
        alertname=clean(alert_title(labels) if labels else "", HEADLINE_CAP),
        unit=_unit(labels),
        node=node_of(labels),
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


def _storm_members(words: Words, facts: Facts, alertname: str, unit_name: str) -> tuple[tuple[str, ...], int]:
    """A storm's member lines and how many nodes it has: the lines worded from their facts in the
    receiver's language, or (a snapshot stored before the facts were) the stored English headlines.
    A node incident has none."""
    storm = facts if isinstance(facts, StormFacts) else StormFacts()
    if storm.member_facts and alertname:
        lines = [short_member_line(words, f, alertname, unit_name) for f in storm.member_facts[:MAX_LISTED]]
    else:
        lines = list((storm.members or ())[:MAX_LISTED])
    members = tuple(clean(m, LABEL_CAP) for m in lines)
    return members, storm.nodes if storm.nodes is not None else len(members)


def _node_units(facts: Facts) -> tuple[tuple[str, ...], int, str]:
    """A node's alerting units, how many it has, and the count a message shows (`6/8`); a storm's count
    of units (`211`) and no units of its own."""
    if isinstance(facts, StormFacts):
        return (), 0, str(facts.units) if facts.units else ""
    units = tuple(clean(u, LABEL_CAP) for u in facts.units or ())
    total = facts.units_total or 0
    return units, total, (f"{len(units)}/{total}" if total else str(len(units))) if units else ""


def _times(raw: MessageSnapshot, clock: LocalClock, ref: datetime, words: Words) -> tuple[str, str, str]:
    """(since, since_full, age) from the alerts' own times; a row stored before they were: from when
    alertrouter opened it to when it decided. A resolved incident's age is how long it lasted."""
    opened = _time(raw.started_at) or _time(raw.opened_at)
    if opened is None:
        return "", "", ""
    until = (_time(raw.ended_at) or ref) if raw.resolved else ref
    return clock.local(opened, ref), clock.full(opened), words.age(until - opened)


def _headline(words: Words, raw: MessageSnapshot, labels: Mapping[str, str]) -> str:
    """The headline in the receiver's language; the stored one for a snapshot without the facts; an
    alert without alertname (Alertmanager accepts those) named by its label set."""
    return message_headline(words, raw) or raw.summary.headline or (alert_title(labels) if labels else "")


def _top_summary(alerts: Sequence[AlertContext], resolved: bool) -> str:
    """The most common summary of the alerts the message is about (firing, or resolved); else any."""
    top = Counter(a.summary for a in alerts if a.summary and a.firing != resolved).most_common(1)
    return top[0][0] if top else next((a.summary for a in alerts if a.summary), "")


def build_item(
    raw: MessageSnapshot,
    *,
    fallback_severity: str,
    clock: LocalClock,
    now: datetime,
    words: Words | None = None,
) -> ItemContext:
    """The template context of one outbox snapshot: label values, texts and facts are data from whoever
    fired the alerts, cleaned and capped here; any of the facts may be missing. `words`: the receiver's
    language (English when None), asked for by the caller once per message."""
    words = words or words_for()
    labels = _labels(raw.labels)
    ref = _time(raw.at) or now
    alerts = tuple(sorted((_alert(a, clock, ref, words) for a in raw.alerts[:MAX_LISTED]), key=_alert_order))
    severity = clean(raw.severity or fallback_severity, KEY_CAP)
    alertname = labels.get("alertname", "") or (alerts[0].alertname if alerts else "")
    unit_name = clean(raw.summary.unit_name or "GPUs", KEY_CAP)
    units, total, gpus = _node_units(raw.summary)
    node = raw.kind == IncidentKind.NODE
    count, listed = _counts(raw.summary.tally, resolved=raw.resolved, node=node, shown=len(raw.alerts))
    members, nodes = _storm_members(words, raw.summary, alertname, unit_name)
    current = [a for a in alerts if a.firing != raw.resolved]  # what the message is about: firing, or resolved
    since, since_full, age = _times(raw, clock, ref, words)
    xids, xids_more = _fault_lines(raw, current, words)
    return ItemContext(
        incident=clean(raw.incident, KEY_CAP),
        kind=raw.kind,
        reason=clean(raw.reason, KEY_CAP),
        reason_text=words.reason(raw.reason, raw.summary) or clean(raw.reason, KEY_CAP),
        resolved=raw.resolved,
        severity=severity,
        severity_label=words.severity_label(severity, resolved=raw.resolved),
        headline=clean(_headline(words, raw, labels), HEADLINE_CAP),
        alertname=alertname,
        location=words.scope([(name, labels[name]) for name in ("region", "rack", "cluster") if labels.get(name)]),
        gpus=gpus,
        unit_name=clean(words.unit_label(unit_name), KEY_CAP),
        units=units[:GRID_MAX],
        units_text=", ".join(units[:GRID_MAX]) + (", …" if len(units) > GRID_MAX else ""),
        grid="" if raw.kind == IncidentKind.CLUSTER else _grid(units, total),
        count=count,
        nodes=nodes,
        summary=_top_summary(alerts, raw.resolved),
        description=next((a.description for a in alerts if a.description), ""),
        since=since,
        since_full=since_full,
        age=age,
        alerts=alerts,
        alerts_more=max(0, listed - len(alerts)),
        members=members,
        members_more=max(0, nodes - len(members)),
        labels=labels,
        xids=xids,
        xids_more=xids_more,
        workloads=workloads_text([a.labels for a in current]),
        no_data=_no_data(words, raw.summary if isinstance(raw.summary, NodeFacts) else NodeFacts()),
        rma=tuple(rma_lines(words.tr, raw.rma)),
        nearby=_nearby(words, raw, clock, ref),
    )


def _fault_lines(raw: MessageSnapshot, current: list[AlertContext], words: Words) -> tuple[tuple[str, ...], int]:
    """One line per distinct Xid of the alerts the message is about, and how many more; a firing node
    incident's GPU triage (the root and its follow-ons: what to do) first."""
    xids, more = xid_lines([(a.labels, a.unit) for a in current], words.tr, words.language)
    triage = raw.summary.triage if isinstance(raw.summary, NodeFacts) else None
    if triage is not None and not raw.resolved:
        triaged = triage_lines(words.tr, words.language, triage)
        xids = tuple(clean(line, HEADLINE_CAP) for line in triaged) + tuple(xids)
    return tuple(xids), more


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


def _nearby(words: Words, raw: MessageSnapshot, clock: LocalClock, ref: datetime) -> str:
    """Its neighbours in maintenance (`message.facts.Nearby`), worded; none once it resolved."""
    if not isinstance(raw.summary, NodeFacts) or raw.resolved:
        return ""
    listed = raw.summary.nearby[:MAX_NEARBY]
    nodes = [
        (clean(n.node, LABEL_CAP), clean(n.reason, LABEL_CAP), clock.local(n.until, ref) if n.until else "")
        for n in listed
    ]
    return clean(words.nearby(nodes), HEADLINE_CAP)


def _no_data(words: Words, facts: NodeFacts) -> str:
    """The node-down incident that explains the gap in data (`pipeline.incident.node_facts`), worded."""
    if facts.no_data is None:
        return ""
    node = clean(facts.no_data.node or facts.where, LABEL_CAP)
    cause = clean(facts.no_data.cause, LABEL_CAP)
    return words.no_data(node=node or "?", cause=cause or "?", down=facts.no_data.down)
