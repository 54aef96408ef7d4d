"""Follow-on Xids folded into their root, so that one GPU fault is one page: a consequence Xid alert (45,
94/95, 154 ...) on a node where a root Xid alert (a fault: not a consequence, not informational) started at
most `follow_on_window` before it and still fires is muted as an inhibition by rule `gpu-follow-on`, the
root's fingerprint as its source. So the console, the API, restarts and the stored decisions read it as any
inhibition, and a consequence arriving before its root is held (`FollowOnRules.hold_down`) then muted when
the root comes, as an inhibit rule's hold-down does. Which root a consequence joins is `gpu.triage`'s (by
`startsAt`); a consequence whose root resolved is released, as an inhibition target is.

The triage runs per node, on the Xid alerts of that node only (indexed by node), again only when one of
them came, changed or left; a pass re-sorts the incidents of that node's Xid alerts (`affected`). The root's
incident then carries the triage (`describe`): its facts and its root's action as the action label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from alertrouter.gpu.alerts import xid_alert
from alertrouter.gpu.labels import ACTION_LABEL
from alertrouter.gpu.triage import DEFAULT_RULES, Root, Triage, TriageRules, XidAlert, triage
from alertrouter.gpu.xid import lookup
from alertrouter.message.gpu_triage import FollowOnFacts, GpuTriageFacts, ReasonFacts
from alertrouter.model import AlertView
from alertrouter.pipeline.inhibit import Inhibition, Inhibitor, InhibitRule

__all__ = ["FOLLOW_ON_RULE", "Described", "FoldingInhibitor", "FollowOnRules", "triage_facts"]

FOLLOW_ON_RULE = "gpu-follow-on"  # the inhibit rule name a folded consequence is muted by
_DESCRIBED_MAX = 8  # incidents described per node and kept; a node has one or two with Xid alerts


@dataclass(frozen=True, slots=True)
class FollowOnRules:
    """`triage`: the `gpu_triage:` section's rules; `hold_down`: how long a consequence's first message
    waits for a root that arrives after it; `action_label`: the label set to the root's action on its
    incident ("" sets none); `enabled` False folds nothing."""

    triage: TriageRules = DEFAULT_RULES
    hold_down: timedelta = timedelta(seconds=30)
    action_label: str = ACTION_LABEL
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class Described:
    """What the triage says of one incident: its facts (None when it has nothing to say beyond its Xid
    lines: no follow-ons, no verdict) and its primary root's action (its action label: NVIDIA's bucket,
    UNKNOWN, or the alert's own value)."""

    facts: GpuTriageFacts | None
    action: str


@dataclass(slots=True)
class _Node:
    """One node's Xid alerts (fingerprint -> the alert as triage reads it, and whether it fires) and the
    triage of them, None until asked for after a change; what `describe` said of its incidents, kept until
    one of its Xid alerts is tracked again (a full pass describes every incident, and few change)."""

    alerts: dict[str, tuple[XidAlert, bool]] = field(default_factory=dict)
    triage: Triage | None = None
    roots: dict[str, str] = field(default_factory=dict)  # consequence -> its root, of `triage`
    described: dict[frozenset[str], Described | None] = field(default_factory=dict)  # by the incident's alerts


class FoldingInhibitor(Inhibitor):
    """The inhibitor of the rules, and the follow-on folding beside it: the same calls, so the views and
    the sorting need no other hook. An inhibit rule's mute is reported before a fold."""

    def __init__(self, rules: Sequence[InhibitRule], follow_ons: FollowOnRules, node_label: str) -> None:
        super().__init__(rules)
        self._fold = follow_ons
        self._node_label = node_label
        self._nodes: dict[str, _Node] = {}
        self._node_of: dict[str, str] = {}  # fingerprint -> its node, for the Xid alerts indexed
        self._changed: set[str] = set()  # nodes whose Xid alerts changed since `affected` was last asked

    def track(self, alert: AlertView) -> None:
        self._index(alert)
        super().track(alert)

    def untrack(self, fingerprint: str) -> None:
        self._unindex(fingerprint)
        super().untrack(fingerprint)

    def affected(self) -> set[str]:
        """The inhibitor's, and every Xid alert of the nodes whose Xid alerts changed: a root that came or
        went folds or releases the node's consequences, and its own incident tells them."""
        out = super().affected()
        for name in self._changed:
            node = self._nodes.get(name)
            if node is not None:
                out.update(node.alerts)
        self._changed.clear()
        return out

    def mutes(self, alert: AlertView) -> Inhibition | None:
        muted = super().mutes(alert)
        if muted is not None:
            return muted
        name = self._node_of.get(alert.fingerprint)
        if name is None:
            return None
        root = self._triaged(name)[1].get(alert.fingerprint)
        return None if root is None else Inhibition(FOLLOW_ON_RULE, root)

    def hold_down(self, alert: AlertView) -> timedelta | None:
        """A consequence Xid's hold-down is at least `FollowOnRules.hold_down`, for a root arriving late. Reads
        the Xid `track` indexed (an alert is tracked before it is placed): one read of its labels, not two."""
        held = super().hold_down(alert)
        name = self._node_of.get(alert.fingerprint)
        if name is None:  # names no Xid or no node, or folding is off: nothing to wait for
            return held
        fold = self._fold
        xid = self._nodes[name].alerts[alert.fingerprint][0].xid
        if not fold.triage.is_consequence(lookup(xid)):
            return held
        return fold.hold_down if held is None else max(held, fold.hold_down)

    def describe(self, alerts: Sequence[AlertView]) -> Described | None:
        """The triage of a node incident of `alerts`: None unless a root fault of its node is among them."""
        names = sorted({n for a in alerts if (n := self._node_of.get(a.fingerprint)) is not None})
        if not names:  # no Xid alert among them: most incidents, asked on every pass
            return None
        fps = frozenset(a.fingerprint for a in alerts)
        for name in names:
            kept = self._nodes[name].described
            if fps not in kept:
                if len(kept) >= _DESCRIBED_MAX:  # incidents whose other alerts came and went
                    kept.clear()
                kept[fps] = self._describe(name, fps, alerts)
            if (said := kept[fps]) is not None:
                return said
        return None

    def _describe(self, name: str, fps: frozenset[str], alerts: Sequence[AlertView]) -> Described | None:
        found, _ = self._triaged(name)
        own = [r for r in found.roots if r.alert.id in fps and self._is_fault(r)]
        if not own:
            return None
        labels = {a.fingerprint: a.labels for a in alerts}
        # the primary's own label when it has one (it won over the derived one on the alert too)
        action = labels[own[0].alert.id].get(self._fold.action_label) or own[0].action
        return Described(triage_facts(own, found, labels), action)

    def _is_fault(self, root: Root) -> bool:
        return not self._fold.triage.is_consequence(root.info) and root.info.kind != "informational"

    def _index(self, alert: AlertView) -> None:
        fp = alert.fingerprint
        name = alert.labels.get(self._node_label) if self._fold.enabled else None
        found = xid_alert(fp, alert.labels, alert.starts_at, name) if name and alert.starts_at else None
        before = self._node_of.get(fp)
        if before is not None and (found is None or before != name):
            self._unindex(fp)
        if found is None or name is None:
            return
        node = self._nodes.setdefault(name, _Node())
        node.described.clear()  # tracked again: its labels may be new (a relabel), and they are described
        entry = (found, alert.firing)
        if node.alerts.get(fp) != entry:
            node.alerts[fp] = entry
            node.triage = None
            self._changed.add(name)
        self._node_of[fp] = name

    def _unindex(self, fingerprint: str) -> None:
        name = self._node_of.pop(fingerprint, None)
        if name is None:
            return
        node = self._nodes[name]
        del node.alerts[fingerprint]
        node.triage = None
        node.described.clear()
        self._changed.add(name)
        if not node.alerts:
            del self._nodes[name]

    def _triaged(self, name: str) -> tuple[Triage, Mapping[str, str]]:
        """The node's triage and which root each consequence joins, worked out again after a change: of its
        firing Xid alerts, and its resolved consequences (a resolved target stays muted while its root
        fires, as with inhibition)."""
        node = self._nodes[name]
        if node.triage is None:
            node.described.clear()
            rules = self._fold.triage
            alerts = [a for a, firing in node.alerts.values() if firing or rules.is_consequence(lookup(a.xid))]
            node.triage = triage(alerts, None, rules)
            node.roots = {f.id: r.alert.id for r in node.triage.roots for f in r.follow_ons}
        return node.triage, node.roots


def triage_facts(own: Sequence[Root], whole: Triage, labels: Mapping[str, Mapping[str, str]]) -> GpuTriageFacts | None:
    """The facts of an incident whose root faults are `own` (its primary first), None when they have no
    follow-ons and the node's verdict is about none of their Xids. Follow-ons count the GPUs other than
    the primary's, by Xid."""
    primary = own[0]
    gpus: dict[int, set[str]] = {}
    counts: dict[int, int] = {}
    for root in own:
        for f in root.follow_ons:
            counts[f.xid] = counts.get(f.xid, 0) + 1
            if f.gpu and f.gpu != primary.alert.gpu:
                gpus.setdefault(f.xid, set()).add(f.gpu)
    follow_ons = tuple(FollowOnFacts(x, len(gpus.get(x, ())), counts[x]) for x in sorted(counts))
    reason = whole.reason
    if reason is not None and reason.xid not in {r.alert.xid for r in own}:
        reason = None
    if not follow_ons and reason is None:
        return None
    info = primary.info
    told = None
    if reason is not None:
        seconds = int(reason.window.total_seconds())
        told = ReasonFacts(
            reason.rule.value, reason.xid, reason.count, reason.threshold, seconds, len(reason.gpus), reason.workload
        )
    return GpuTriageFacts(
        info.code,
        labels.get(primary.alert.id, {}).get("gpu", ""),
        info.meaning,
        primary.action,
        info.action if info.known else "see_docs",
        follow_ons,
        whole.verdict.value if told is not None else "UNKNOWN",
        told,
    )
