"""The phrases messages are made of, in the language of the translations given: severities, places,
units, headlines (ages are `message.ages`', the fixed words `message.vocabulary`'s). `message.words.Words`
holds them for one language, as a message asks for them; a caller without a message (the console, the
digest, the heartbeat's summary) uses them directly.

Made in Python from facts rather than in templates; alert names, label values and annotations are data
and are never translated.
"""

from __future__ import annotations

from collections.abc import Sequence
from gettext import NullTranslations

from alertrouter.message.facts import MemberFacts, StormFacts
from alertrouter.message.jobs import JOB_ALERTNAME, job_headline
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.vocabulary import SEVERITY_NAMES, STATUS, say
from alertrouter.model import AlertStatus

__all__ = [
    "blind_headline",
    "blind_text",
    "headline",
    "member_line",
    "no_data_text",
    "node_headline",
    "scope_text",
    "severity_name",
    "storm_headline",
    "unit_count",
    "unit_label",
]


def severity_name(tr: NullTranslations, severity: str) -> str:
    """`critical` / `严重` in running text (the coalesced counts); `resolved` / `已恢复`; a severity the
    product does not know is data, shown as written."""
    if severity == AlertStatus.RESOLVED:
        return STATUS[AlertStatus.RESOLVED].said(tr)
    return say(tr, SEVERITY_NAMES, severity.lower()) or severity


def scope_text(tr: NullTranslations, scope: Sequence[tuple[str, str]]) -> str:
    """`region north, rack r12` / `north 区 r12 机架`; other label names as `name value`."""
    words = {"region": tr.gettext("region %(value)s"), "rack": tr.gettext("rack %(value)s")}
    words["cluster"] = tr.gettext("cluster %(value)s")
    parts = [words[name] % {"value": value} if name in words else f"{name} {value}" for name, value in scope]
    return tr.pgettext("scope", ", ").join(parts)


def no_data_text(tr: NullTranslations, *, node: str, cause: str, down: bool) -> str:
    """Why an incident's data stopped, naming the node-down alert that explains it (`pipeline.stale`):
    `No data: gpu-node-07 is down (NodeDown)` while it fires, `No data while gpu-node-07 was down (NodeDown)`
    once the node is back."""
    if down:
        return tr.gettext("No data: %(node)s is down (%(alert)s)") % {"node": node, "alert": cause}
    return tr.gettext("No data while %(node)s was down (%(alert)s)") % {"node": node, "alert": cause}


def nearby_text(tr: NullTranslations, nodes: list[tuple[str, str, str]]) -> str:
    """The nodes in maintenance in the incident node's rack, each as (node, reason, until: "" while the
    cluster says so): `In maintenance in its rack: gpu-node-07 (RMA 4711, until 14:00 CST)`."""
    shown = []
    for node, reason, until in nodes:
        notes = [n for n in (reason, tr.gettext("until %(time)s") % {"time": until} if until else "") if n]
        shown.append(f"{node} ({', '.join(notes)})" if notes else node)
    return tr.gettext("In maintenance in its rack: %(nodes)s") % {"nodes": "; ".join(shown)}


def unit_label(tr: NullTranslations, unit_name: str) -> str:
    """`GPUs` / `GPU` as a label; another unit name is data, shown as configured."""
    return tr.gettext("GPUs") if unit_name in ("", "GPUs") else unit_name


def unit_count(tr: NullTranslations, count: str, unit_name: str) -> str:
    """`6/8 GPUs` / `6/8 块 GPU`; a unit name other than GPUs is data (`4 NICs` / `4 个 NICs`)."""
    if unit_name in ("", "GPUs"):
        return tr.gettext("%(count)s GPUs") % {"count": count}
    return tr.gettext("%(count)s %(unit_name)s") % {"count": count, "unit_name": unit_name}


def node_headline(
    tr: NullTranslations, where: str, what: str, units: int, total: int | None, unit_name: str = "GPUs"
) -> str:
    """`gpu-node-07: GPUHighTemp on 6/8 GPUs` / `gpu-node-07：6/8 块 GPU GPUHighTemp`; the English is the
    stored headline (`pipeline.aggregate.IncidentSummary.headline` calls it untranslated)."""
    if units:
        count = unit_count(tr, f"{units}/{total}" if total else str(units), unit_name)
        if where:
            return tr.gettext("%(where)s: %(what)s on %(count)s") % {"where": where, "what": what, "count": count}
        return tr.gettext("%(what)s on %(count)s") % {"what": what, "count": count}
    return tr.gettext("%(where)s: %(what)s") % {"where": where, "what": what} if where else what


def storm_headline(
    tr: NullTranslations, alertname: str, nodes: int, scope: Sequence[tuple[str, str]], units: int, unit_name: str
) -> str:
    """`GPUXidError on 40 nodes in region north, rack r12: 320 GPUs` /
    `north 区 r12 机架 40 个节点 GPUXidError，共 320 块 GPU`; untranslated, the stored headline
    (`pipeline.aggregate.counted_storm_headline`)."""
    values = {"what": alertname, "nodes": nodes, "scope": scope_text(tr, scope)}
    if scope:
        text = tr.ngettext("%(what)s on %(nodes)s node in %(scope)s", "%(what)s on %(nodes)s nodes in %(scope)s", nodes)
    else:
        text = tr.ngettext("%(what)s on %(nodes)s node", "%(what)s on %(nodes)s nodes", nodes)
    text %= values
    if units:
        text = tr.gettext("%(storm)s: %(count)s") % {"storm": text, "count": unit_count(tr, str(units), unit_name)}
    return text


def member_line(tr: NullTranslations, member: MemberFacts, alertname: str, unit_name: str) -> str:
    """A storm member's line from its facts: `gpu-node-07: GPUXidError on 8/8 GPUs`."""
    return node_headline(tr, member.where, alertname, member.units, member.units_total, unit_name)


def headline(tr: NullTranslations, snapshot: MessageSnapshot) -> str:
    """The headline of a snapshot in the language of `tr`, made from its facts (`where`, `units`, ... for a
    node; `scope`, `nodes`, `units` for a storm). A snapshot without them (written before they were
    stored) keeps the English headline it was stored with."""
    facts, alertname = snapshot.summary, snapshot.alertname
    unit_name = facts.unit_name or "GPUs"
    if (heartbeat := snapshot.heartbeat) is not None:
        return blind_headline(tr, heartbeat)
    if alertname == JOB_ALERTNAME:  # a job hit (`engine.jobs`): worded from its figures
        return job_headline(tr, snapshot.labels) or snapshot.headline
    if isinstance(facts, StormFacts):
        if facts.scope is None or facts.nodes is None or not alertname:
            return snapshot.headline
        return storm_headline(tr, alertname, facts.nodes, facts.scope, facts.units or 0, unit_name)
    if facts.where is None or not alertname:
        return snapshot.headline
    return node_headline(tr, facts.where, alertname, len(facts.units or ()), facts.units_total, unit_name)


def blind_headline(tr: NullTranslations, heartbeat: str) -> str:
    """`monitoring is blind: prometheus-north` / `监控失明：prometheus-north` (a silent heartbeat's incident)."""
    return tr.gettext("monitoring is blind: %(heartbeat)s") % {"heartbeat": heartbeat}


def blind_text(tr: NullTranslations, heartbeat: str, since: str) -> str:
    """`monitoring is blind: prometheus-north silent since 10:42 CST`: the summary of the alert raised for
    a silent heartbeat; `since` is the local time it was last heard from (or first watched)."""
    return tr.gettext("monitoring is blind: %(heartbeat)s silent since %(since)s") % {
        "heartbeat": heartbeat,
        "since": since,
    }
