"""Sample notifications, one per message kind: `alertrouter render TEMPLATE --sample`, and the tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from alertrouter.channels.base import Mentions, MessageKind, Notification, runbook_link
from alertrouter.message.facts import MemberFacts, NodeFacts, StormFacts, Tally
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.render.templates import Templates

__all__ = ["render_sample", "sample_notifications"]


def render_sample(
    templates: Templates, name: str, *, limit_bytes: int | None = None, locale: Locale | None = None
) -> str:
    """Renders `channel/kind.fmt` (e.g. `dingtalk/firing.md`) with the sample notification of that kind,
    in `locale` (default: the renderer's)."""
    available = templates.names()
    channel, _, rest = name.removesuffix(".j2").partition("/")
    kind, _, fmt = rest.partition(".")
    samples = sample_notifications()
    if f"{channel}/{rest}" not in available or kind not in samples:
        raise ValueError(f"no template {name!r}; available: {', '.join(available)}")
    return templates.render(channel, fmt, replace(samples[kind], locale=locale), limit_bytes=limit_bytes)


_SAMPLE_NOW = datetime(2026, 11, 21, 10, 12, 30, tzinfo=UTC)
_SAMPLE_URL = "https://alertrouter.example.com"
_RUNBOOK_HOST = "wiki.example.com"  # as if `global.runbook_hosts: [wiki.example.com]`
# Made by `links.action_link` with the key "alertrouter-sample-key-not-a-secret" at _SAMPLE_NOW (24h),
# pasted so that previews do not change from run to run: incident -> (acknowledge, silence) tokens.
_SAMPLE_TOKENS = {
    1042: (
        "eyJhIjoiYWNrIiwiZXhwIjoxNzk1MzQyMzUwLCJpIjoxMDQyLCJuIjoiYm1qbGVQQ1NONnVNWVUxVSJ9"
        ".T9pCrU2xYXPTCHy_LBYpJ6yLJ0lkig54Bg6oWvGc_K8",
        "eyJhIjoic2lsZW5jZSIsImV4cCI6MTc5NTM0MjM1MCwiaSI6MTA0MiwibiI6IjVBNzNrRWh3SkhZQVJlOS0ifQ"
        ".pHKMvNmXhlClL2CQxwL6c_llmTdszCamBBv1av-75hs",
    ),
    1043: (
        "eyJhIjoiYWNrIiwiZXhwIjoxNzk1MzQyMzUwLCJpIjoxMDQzLCJuIjoiZVpFSXdtTkM1VDFPYWtBaiJ9"
        ".zG6eIQL_tRK1D4kSPLDEzCRIK6nt8QqEMEdjdxIX9RM",
        "eyJhIjoic2lsZW5jZSIsImV4cCI6MTc5NTM0MjM1MCwiaSI6MTA0MywibiI6Im9ueE42ME9BbUZhcGpBSE8ifQ"
        ".B1GoJpQIYHdrcvI6uHFBkp44JzyxCWVfFROk7bJ4v3Y",
    ),
}


def _with_actions(n: Notification, incident_id: int) -> Notification:
    """`n` with the acknowledge/silence links the delivery loop adds to messages about a firing incident."""
    ack, silence = (f"{_SAMPLE_URL}/a/{token}" for token in _SAMPLE_TOKENS[incident_id])
    runbook = runbook_link(n.items, [_RUNBOOK_HOST])
    return replace(n, ack_link=ack, silence_link=silence, silence_for=timedelta(hours=1), runbook_link=runbook)


def _sample_item(
    node: str, name: str, severity: str, gpus: Sequence[int], reason: str = "first", ago: int = 12
) -> MessageSnapshot:
    firing = reason != NotifyReason.RESOLVED
    opened = _SAMPLE_NOW - timedelta(minutes=ago)
    region = "华北" if node.endswith("19") else "north"
    labels = {"alertname": name, "node": node, "region": region, "rack": "r12", "severity": severity}
    head = f"{node}: {name} on {len(gpus)}/8 GPUs"
    note = "GPU {} at {}°C" if name == "GPUHighTemp" else "GPU {}: " + name
    runbook = f"https://{_RUNBOOK_HOST}/runbooks/{name.lower()}"
    alerts = tuple(
        AlertItem(
            f"{node}/{name}/{g}",
            {**labels, "gpu": str(g)},
            firing,
            {"summary": note.format(g, 88 + g), "runbook_url": runbook},
            opened,
        )
        for g in gpus
    )
    n = len(gpus)
    summary = NodeFacts(
        headline=head,
        where=node,
        alertname=name,
        units=tuple(str(g) for g in gpus),
        units_total=8,
        unit_name="GPUs",
        tally=Tally(alerts=n, firing=n * firing, eligible=n * firing, muted=0),
    )
    return MessageSnapshot(
        incident=f"gpu-by-node/{name}/{node}",
        kind=IncidentKind.NODE,
        reason=reason,
        status=AlertStatus.FIRING if firing else AlertStatus.RESOLVED,
        severity=severity,
        headline=head,
        labels=labels,
        summary=summary,
        alerts=alerts,
        opened_at=opened,
        at=_SAMPLE_NOW,
    )


def sample_notifications() -> dict[str, Notification]:
    """One realistic notification per message kind, at a fixed time; firing ones with action links."""
    nodes = [_sample_item(f"gpu-node-{i:02d}", "GPUHighTemp", "critical", range(6 if i < 26 else 5)) for i in range(37)]
    head = "GPUHighTemp on 37 nodes in region north: 211 GPUs"
    summary = StormFacts(
        headline=head,
        nodes=37,
        units=211,
        members=tuple(n.headline for n in nodes),
        alertname="GPUHighTemp",
        unit_name="GPUs",
        scope=(("region", "north"),),
        member_facts=tuple(MemberFacts(n.labels["node"], len(n.alerts), 8) for n in nodes),
        tally=Tally(alerts=211),
    )
    cluster = replace(
        nodes[0],
        incident="cluster/gpu-by-node/GPUHighTemp/north",
        kind=IncidentKind.CLUSTER,
        headline=head,
        labels={"alertname": "GPUHighTemp", "region": "north", "severity": "critical"},
        summary=summary,
        alerts=tuple(a for n in nodes for a in n.alerts)[:50],
    )
    coalesced = [
        _sample_item("gpu-node-07", "GPUHighTemp", "critical", [0, 1, 2, 3, 5, 7]),
        _sample_item("gpu-node-11", "GPUFallenOffBus", "critical", [4], ago=3),
        _sample_item("gpu-node-19", "GPUXidError", "critical", [2, 6], ago=5),
    ] + [
        _sample_item(f"gpu-node-{20 + i}", "GPUMemoryNearFull", "warning", range(i % 4 + 1), ago=30 + i)
        for i in range(9)
    ]
    at = Mentions(mobiles=("13800000000",), user_ids=("zhangwei",))
    incident, storm, listing = (f"{_SAMPLE_URL}/{p}" for p in ("incidents/1042", "incidents/1043", "notifications"))
    grown = _sample_item("gpu-node-07", "GPUHighTemp", "critical", [0, 1, 2, 3, 4, 5, 7], "grew")
    cooled = _sample_item("gpu-node-07", "GPUHighTemp", "critical", [0, 1, 2, 3, 5, 7], "resolved", 25)
    kinds: list[tuple[MessageKind, list[MessageSnapshot], str, Mentions]] = [
        (MessageKind.FIRING, [coalesced[0]], incident, at),
        (MessageKind.UPDATE, [grown], incident, Mentions()),
        (MessageKind.RESOLVED, [cooled], incident, Mentions()),
        (MessageKind.CLUSTER, [cluster], storm, at),
        (MessageKind.COALESCED, coalesced, listing, Mentions()),
    ]
    samples = {
        kind.value: Notification(
            kind, "oncall-core", items[0].severity, tuple(items), link, at_, created_at=_SAMPLE_NOW
        )
        for kind, items, link, at_ in kinds
    }
    for kind, incident_id in ((MessageKind.FIRING, 1042), (MessageKind.UPDATE, 1042), (MessageKind.CLUSTER, 1043)):
        samples[kind.value] = _with_actions(samples[kind.value], incident_id)
    return samples
