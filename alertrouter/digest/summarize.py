"""The week's numbers from the week's rows: pure, so every figure of the digest is testable on its own."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from alertrouter.digest.blind import blind_periods
from alertrouter.digest.gpufaults import gpu_faults, node_faults
from alertrouter.digest.rma import rma_candidates
from alertrouter.digest.types import (
    AckStats,
    Count,
    DayCount,
    DigestStats,
    EpisodeRow,
    FlappingAlert,
    IncidentFact,
    Mechanism,
    Noise,
    ReceiverIncident,
    ReceiverSection,
    ResolveStats,
    Totals,
    WeekRows,
)
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule
from alertrouter.labels import alert_title
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import DeliveryStatus
from alertrouter.pipeline.types import Decision

__all__ = ["FLAP_EPISODES", "MECHANISMS", "TOP", "Labelling", "summarize"]

TOP = 10
FLAP_EPISODES = 3  # an alert that fired this often in one week is flapping
# What kept an alert from a message of its own. `held` (waiting out an inhibition hold-down) is a delay,
# not a reduction: a held alert ends up inhibited or notified, and is counted there.
# `stale`: resolves held back because the alert's node or exporter went dark ("no data", `pipeline.stale`),
# by why (source_down, together, returning).
MECHANISMS = (
    Decision.INHIBITED,
    Decision.AGGREGATED,
    Decision.ROLLED_UP,
    Decision.THROTTLED,
    Decision.SILENCED,
    Decision.MAINTENANCE,
    Decision.MUTED_BY_INTERVAL,
    Decision.STALE,
)
_CHANGES = ("firing", "refired", "revived", "resolved", "expired")
_NONE = "(none)"


class Labelling:
    """How an alert's labels name its severity, node and region (the rules' settings and topology)."""

    def __init__(
        self,
        *,
        enrich: Callable[[Mapping[str, str]], Mapping[str, str]] = dict,
        node_label: str = "node",
        severity_label: str = "severity",
        severities: Sequence[str] = ("critical", "warning", "info"),
    ) -> None:
        self.enrich = enrich
        self.node_label = node_label
        self.severity_label = severity_label
        self.severities = tuple(severities)


def _in(t: datetime | None, start: datetime, end: datetime) -> bool:
    return t is not None and start <= t < end


def _top(counter: Counter[str], n: int = TOP, extra: Mapping[str, str] | None = None) -> list[Count]:
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [Count(name, count, (extra or {}).get(name, "")) for name, count in ranked]


def _severity_order(counts: Mapping[str, int], known: Sequence[str]) -> list[str]:
    others = sorted((s for s in counts if s not in known), key=lambda s: (-counts[s], s))
    return [s for s in known if s in counts] + others


def _mean_median(values: Sequence[timedelta]) -> tuple[timedelta | None, timedelta | None]:
    if not values:
        return None, None
    seconds = [v.total_seconds() for v in values]
    return timedelta(seconds=statistics.fmean(seconds)), timedelta(seconds=statistics.median(seconds))


def _by_group(items: Iterable[tuple[str, timedelta]], order: Sequence[str]) -> list[tuple[str, list[timedelta]]]:
    groups: dict[str, list[timedelta]] = defaultdict(list)
    everything: list[timedelta] = []
    for name, value in items:
        groups[name].append(value)
        everything.append(value)
    return [
        ("all", everything),
        *((s, groups[s]) for s in _severity_order({k: len(v) for k, v in groups.items()}, order)),
    ]


def _interval_names(detail: Mapping[str, object]) -> str:
    """`time interval offhours`: the intervals a muted_by_interval decision names, over its receivers."""
    names: set[str] = set()
    for key in ("muted_by_interval", "outside_active_time_intervals"):
        by_receiver = detail.get(key)
        if isinstance(by_receiver, dict):
            names.update(str(n) for listed in by_receiver.values() if isinstance(listed, list) for n in listed)
    return f"time interval {', '.join(sorted(names))}" if names else ""


def _noise(rows: WeekRows) -> Noise:
    alerts: dict[str, set[str]] = defaultdict(set)
    by_rule: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for fp, detail in rows.decisions:
        decision = str(detail.get("decision", ""))
        if decision not in MECHANISMS:
            continue
        alerts[decision].add(fp)
        silence = detail.get("silenced_by")
        rule = (
            detail.get("inhibit_rule")
            or detail.get("aggregation_rule")
            or (f"silence {silence}" if silence else "")
            or _interval_names(detail)
            or detail.get("stale_reason")
        )
        # A decision naming no rule (a throttled one, stored as null) is never shown as "None".
        by_rule[decision][str(rule) if rule else ("repeat interval" if decision == Decision.THROTTLED else "-")].add(fp)
    mechanisms = [
        Mechanism(m, len(alerts[m]), _top(Counter({r: len(f) for r, f in by_rule[m].items()}), n=20))
        for m in MECHANISMS
        if alerts.get(m)
    ]
    unsent = {status: n for status, n in sorted(rows.deliveries.items()) if status != DeliveryStatus.SENT and n}
    return Noise(
        alert_changes=sum(rows.changes.get(kind, 0) for kind in _CHANGES),
        payloads=rows.payloads,
        payload_alerts=rows.payload_alerts,
        messages_intended=len(rows.intents),
        messages_sent=rows.deliveries.get(DeliveryStatus.SENT, 0),
        messages_unsent=unsent,
        mechanisms=mechanisms,
    )


def _receiver(rows: WeekRows, receiver: str) -> ReceiverSection:
    mine = [i for i in rows.intents if i[0] == receiver]
    reasons = Counter(reason for _, reason, *_ in mine)
    incidents: dict[str, tuple[str, str, datetime, int, str]] = {}
    for _, _, key, severity, headline, at in sorted(mine, key=lambda i: i[5]):
        first = incidents.get(key)
        incidents[key] = (headline, severity, first[2] if first else at, (first[3] if first else 0) + 1, key)
    ranked = sorted(incidents.values(), key=lambda i: (-i[3], i[2], i[0]))
    listed = [_listed(h, s, at, n, rows.snapshots.get(k)) for h, s, at, n, k in ranked[:15]]
    return ReceiverSection(receiver, len(mine), _top(reasons), listed, max(0, len(ranked) - len(listed)))


def _listed(
    headline: str, severity: str, at: datetime, messages: int, first: MessageSnapshot | None
) -> ReceiverIncident:
    """An incident told to the receiver, from when its alerts started (its first message says when), not
    when that message was sent; from the message's time for a row stored before messages said."""
    started = first.started_at if first is not None and first.started_at is not None else at
    return ReceiverIncident(headline, severity, started, messages, first)


def _days(
    rows: WeekRows, fired: Sequence[tuple[EpisodeRow, Mapping[str, str]]], lab: Labelling, tz: ZoneInfo
) -> list[DayCount]:
    first = rows.start.astimezone(tz).date()
    days = [first + timedelta(days=i) for i in range(7)]
    counts: dict[object, Counter[str]] = {d: Counter() for d in days}
    for episode, labels in fired:
        day = episode.opened_at.astimezone(tz).date()
        if day in counts:
            counts[day][labels.get(lab.severity_label) or _NONE] += 1
    return [DayCount(d, dict(counts[d])) for d in days]


def summarize(
    rows: WeekRows,
    *,
    period: str,
    tz: ZoneInfo,
    labelling: Labelling,
    receiver: str | None = None,
    rma: Sequence[RmaRule] = DEFAULT_RULES,
) -> DigestStats:
    start, end, lab = rows.start, rows.end, labelling
    labels = {fp: lab.enrich(raw) for fp, (raw, _) in rows.alerts.items()}

    def label(fp: str, name: str) -> str:
        return labels.get(fp, {}).get(name) or _NONE

    def alertname(fp: str) -> str:
        """An alert without `alertname` (Alertmanager accepts those) is named by its label set."""
        raw = rows.alerts.get(fp)
        return alert_title(raw[0]) if raw is not None else _NONE

    fired = [(e, labels.get(e.fingerprint, {})) for e in rows.episodes if _in(e.opened_at, start, end)]
    severity = Counter(label(e.fingerprint, lab.severity_label) for e, _ in fired)
    by_alertname = Counter(alertname(e.fingerprint) for e, _ in fired)
    # Alerts of no node or region (a heartbeat's, a cluster-wide one) rank no place called "(none)".
    on_node = [(e, n) for e, _ in fired if (n := label(e.fingerprint, lab.node_label)) != _NONE]
    node = Counter(n for _, n in on_node)
    nodes_of: dict[str, set[str]] = defaultdict(set)
    names_of: dict[str, set[str]] = defaultdict(set)
    for e, n in on_node:
        nodes_of[alertname(e.fingerprint)].add(n)
        names_of[n].add(alertname(e.fingerprint))

    incidents_opened = [i for i in rows.incidents if _in(i.opened_at, start, end)]
    totals = _totals(rows, fired, incidents_opened, severity, by_alertname, node, label, lab.severities)
    flapping = _flapping(fired, alertname, label, lab.node_label)
    resolve, ack = _resolve_and_ack(rows, incidents_opened, label, lab)

    return DigestStats(
        period=period,
        timezone=tz.key,
        start=start,
        end=end,
        totals=totals,
        noise=_noise(rows),
        noisiest_alerts=_top(by_alertname, extra={k: str(len(v)) for k, v in nodes_of.items()}),  # nodes
        noisiest_nodes=_top(
            node, extra={k: ", ".join(sorted(v)[:3]) + (" …" if len(v) > 3 else "") for k, v in names_of.items()}
        ),
        flapping=flapping,
        resolve=resolve,
        ack=ack,
        per_day=_days(rows, fired, lab, tz),
        severities=_severity_order(severity, lab.severities) or list(lab.severities),
        receiver=_receiver(rows, receiver) if receiver is not None else None,
        gpu_faults=node_faults(gpu_faults(fired, lambda fp: label(fp, lab.node_label)), end - start),
        rma=rma_candidates(rows.gpus, rma, start=start, end=end),  # `rma`: the rules, as of the week's end
        escalations=dict(rows.escalations),
        blind=blind_periods(rows),
    )


def _flapping(
    fired: Sequence[tuple[EpisodeRow, Mapping[str, str]]],
    alertname: Callable[[str], str],
    label: Callable[[str, str], str],
    node_label: str,
) -> list[FlappingAlert]:
    """The alerts that fired at least FLAP_EPISODES times in the week, the most often first."""
    per_fp = Counter(e.fingerprint for e, _ in fired)
    labels = {e.fingerprint: enriched for e, enriched in fired}
    return [
        FlappingAlert(
            alertname(fp),
            label(fp, node_label),
            f"gpu {labels[fp]['gpu']}" if labels.get(fp, {}).get("gpu") else "",
            n,
        )
        for fp, n in sorted(per_fp.items(), key=lambda kv: (-kv[1], alertname(kv[0]), kv[0]))
        if n >= FLAP_EPISODES
    ][:TOP]


def _totals(
    rows: WeekRows,
    fired: Sequence[tuple[EpisodeRow, Mapping[str, str]]],
    incidents_opened: Sequence[IncidentFact],
    severity: Counter[str],
    by_alertname: Counter[str],
    node: Counter[str],
    label: Callable[[str, str], str],
    severities: Sequence[str],
) -> Totals:
    """The week's totals: what fired, how much of it was new, what was still open at its end."""
    start, end = rows.start, rows.end
    fps = {e.fingerprint for e, _ in fired}
    new = {fp for fp in fps if fp in rows.alerts and rows.alerts[fp][1] >= start}
    open_at_end = sum(1 for e in rows.episodes if e.opened_at < end and (e.closed_at is None or e.closed_at >= end))
    region = Counter(r for e, _ in fired if (r := label(e.fingerprint, "region")) != _NONE)
    return Totals(
        fired=len(fired),
        distinct_alerts=len(fps),
        new_alerts=len(new),
        recurring_alerts=len(fps) - len(new),
        open_at_end=open_at_end,
        incidents_opened=len(incidents_opened),
        incidents_open_at_end=sum(
            1 for i in rows.incidents if i.opened_at < end and (i.resolved_at is None or i.resolved_at >= end)
        ),
        by_severity=[Count(s, severity[s]) for s in _severity_order(severity, severities)],
        by_alertname=_top(by_alertname, n=25),
        by_node=_top(node, n=25),
        by_region=_top(region, n=25),
    )


def _resolve_and_ack(
    rows: WeekRows, incidents_opened: Sequence[IncidentFact], label: Callable[[str, str], str], lab: Labelling
) -> tuple[list[ResolveStats], list[AckStats]]:
    """How long the alerts that resolved in the week fired, and how long the incidents opened in it waited
    for an acknowledgement, by severity and over all."""
    start, end = rows.start, rows.end
    durations = [
        (label(e.fingerprint, lab.severity_label), max(timedelta(0), (e.ends_at or e.closed_at or end) - e.starts_at))
        for e in rows.episodes
        if _in(e.closed_at, start, end)
    ]
    resolve = [ResolveStats(name, len(v), *_mean_median(v)) for name, v in _by_group(durations, lab.severities)]
    acks = [(i.severity, i.acknowledged_at - i.opened_at) for i in incidents_opened if i.acknowledged_at is not None]
    opened_by = Counter(i.severity for i in incidents_opened)
    ack = [
        AckStats(name, len(incidents_opened) if name == "all" else opened_by[name], len(v), *_mean_median(v))
        for name, v in _by_group(acks, lab.severities)
    ]
    for s in _severity_order(opened_by, lab.severities):  # severities with incidents but no acknowledgement
        if all(a.name != s for a in ack):
            ack.append(AckStats(s, opened_by[s], 0, None, None))
    return resolve, ack
