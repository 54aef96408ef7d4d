"""The labels derived from an alert's Xid, added where the pipeline enriches an alert's labels with its node
(`pipeline.nodes.NodeIdentity.derive`), so routes, inhibit rules and aggregation can match them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from alertrouter.gpu.triage import UNKNOWN_ACTION
from alertrouter.gpu.xid import from_labels

__all__ = ["ACTION_LABEL", "ActionLabel"]

ACTION_LABEL = "xid_action"


@dataclass(frozen=True, slots=True)
class ActionLabel:
    """`xid_action="RESTART_APP"`: NVIDIA's immediate bucket of the Xid an alert names (`xid`, else
    `err_code`), `UNKNOWN` for a code the catalog gives none; nothing for an alert naming no Xid, or one
    that already has the label (its own value wins). A value, not a closure: two rulesets built alike
    compare equal. `name` "" adds nothing."""

    name: str = ACTION_LABEL

    def __call__(self, labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        if not self.name or self.name in labels:
            return ()
        info = from_labels(labels)
        if info is None:
            return ()
        return ((self.name, info.bucket or UNKNOWN_ACTION),)
