"""What a GPU alert's labels say about the fault, for messages and the console's incident page: the XID's
meaning and NVIDIA's action (`alertrouter.gpu.xid`), and the workload the GPU was running (dcgm-exporter's
`exported_namespace` and `exported_pod` under the Kubernetes mapping). The renderer only places these
lines; values arrive cleaned and capped by the caller (`render.context`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from gettext import NullTranslations

from alertrouter.gpu import xid

__all__ = ["MAX_WORKLOADS", "MAX_XIDS", "alert_xid", "workload", "workloads_text", "xid_lines"]

MAX_XIDS = 8  # distinct XIDs listed per incident; the rest count in "+N more"
MAX_WORKLOADS = 3


def _order(unit: str) -> tuple[int, str]:
    return (int(unit), "") if unit.isascii() and unit.isdigit() and len(unit) < 9 else (1 << 30, unit)


def alert_xid(labels: Mapping[str, str], tr: NullTranslations, language: str) -> str:
    """`XID 79: GPU has fallen off the bus — action: reboot the node`, or "" for an alert without an XID."""
    info = xid.from_labels(labels)
    return xid.xid_line(tr, language, info) if info is not None else ""


def workload(labels: Mapping[str, str]) -> str:
    """`ml-team/train-llama-0`, `train-llama-0` without a namespace, or ""."""
    pod = labels.get("exported_pod", "")
    if not pod:
        return ""
    namespace = labels.get("exported_namespace", "")
    return f"{namespace}/{pod}" if namespace else pod


def xid_lines(
    alerts: Sequence[tuple[Mapping[str, str], str]], tr: NullTranslations, language: str
) -> tuple[tuple[str, ...], int]:
    """One line per distinct XID of `alerts` ((labels, GPU index) pairs), naming the GPUs that reported it:
    `XID 79 on GPU 1, 3: GPU has fallen off the bus — action: reboot the node`; and how many codes were
    left out past MAX_XIDS."""
    units: dict[int, set[str]] = {}
    for labels, unit in alerts:
        info = xid.from_labels(labels)
        if info is not None:
            units.setdefault(info.code, set()).update({unit} if unit else set())
    lines = tuple(
        xid.xid_line(tr, language, xid.lookup(code), ", ".join(sorted(units[code], key=_order)))
        for code in sorted(units)[:MAX_XIDS]
    )
    return lines, max(0, len(units) - MAX_XIDS)


def workloads_text(alerts: Sequence[Mapping[str, str]]) -> str:
    """The distinct workloads of `alerts`: `ml/train-0, ml/train-1 +2`."""
    found = sorted({w for labels in alerts if (w := workload(labels))})
    more = len(found) - MAX_WORKLOADS
    return ", ".join(found[:MAX_WORKLOADS]) + (f" +{more}" if more > 0 else "")
