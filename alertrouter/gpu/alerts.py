"""An alert's labels read as the triage's `XidAlert`: the Xid it names, the GPU it is about and the workload
that GPU was running. dcgm-exporter's label shapes: `UUID` names the GPU itself (`uuid`, `gpu_uuid` in
some fleets); without it the node and the `gpu` index do; the workload is the Kubernetes mapping's
`exported_namespace` and `exported_pod`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from alertrouter.gpu.faults import workload
from alertrouter.gpu.identity import UUID_LABELS
from alertrouter.gpu.triage import XidAlert
from alertrouter.gpu.xid import from_labels

__all__ = ["gpu_key", "xid_alert"]


def gpu_key(labels: Mapping[str, str], node: str) -> str:
    """The GPU's own UUID (`gpu.identity`'s labels), else `node/index`; "" when neither names it (it then
    counts towards no GPU)."""
    for name in UUID_LABELS:
        uuid = labels.get(name, "").strip()
        if uuid:
            return uuid
    index = labels.get("gpu", "")
    return f"{node}/{index}" if index and node else ""


def xid_alert(fingerprint: str, labels: Mapping[str, str], starts_at: datetime, node: str) -> XidAlert | None:
    """The alert as triage reads it, or None when its labels name no Xid (`xid`, else `err_code`)."""
    info = from_labels(labels)
    if info is None:
        return None
    return XidAlert(fingerprint, gpu_key(labels, node), workload(labels), info.code, starts_at)
