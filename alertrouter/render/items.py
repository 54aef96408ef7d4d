"""What templates see of a notification: one `ItemContext` per outbox snapshot, one `AlertContext` per
alert, made by `render.context.build_item` from values already cleaned and capped. What follows from
other fields (the status, a severity's emoji and colours, the node and place labels) is read from them,
so the two cannot disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from alertrouter.model import AlertStatus, IncidentKind

__all__ = ["NODE_LABELS", "AlertContext", "ItemContext", "first_of", "node_of", "severity_style"]

NODE_LABELS = ("node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance")

_STYLES = {  # severity -> (emoji, WeCom font colour, HTML colour)
    "critical": ("🔴", "warning", "#c62828"),
    "warning": ("🟠", "warning", "#ef6c00"),
    "info": ("🔵", "comment", "#1565c0"),
}
_OTHER_STYLE = ("⚪", "comment", "#616161")
_RESOLVED_STYLE = ("✅", "info", "#2e7d32")


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
    resolved: bool
    severity: str
    severity_label: str  # CRITICAL, or RESOLVED (in the receiver's language: 严重, 已恢复)
    headline: str
    alertname: str
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
    rma: tuple[str, ...] = ()  # "RMA candidate: GPU 3 (GPU-5f1c…): Xid 48 twice in 11 days", one per GPU
    # "In maintenance in its rack: gpu-node-07 (RMA 4711, until 12-09 14:00 CST)": its neighbours being worked on
    nearby: str = ""

    @property
    def status(self) -> str:
        """firing | resolved"""
        return AlertStatus.RESOLVED if self.resolved else AlertStatus.FIRING

    @property
    def emoji(self) -> str:
        return severity_style(self.severity, self.resolved)[0]

    @property
    def color(self) -> str:
        """WeCom <font color>: info | comment | warning"""
        return severity_style(self.severity, self.resolved)[1]

    @property
    def html_color(self) -> str:
        return severity_style(self.severity, self.resolved)[2]

    @property
    def node(self) -> str:
        return node_of(self.labels)

    @property
    def region(self) -> str:
        return self.labels.get("region", "")

    @property
    def rack(self) -> str:
        return self.labels.get("rack", "")

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


def first_of(labels: Mapping[str, str], names: Sequence[str]) -> str:
    """The first of `names` with a non-empty value in `labels`, or ""."""
    return next((labels[n] for n in names if labels.get(n)), "")


def node_of(labels: Mapping[str, str]) -> str:
    """The node an alert's labels name (`NODE_LABELS`, in order), or ""."""
    return first_of(labels, NODE_LABELS)
