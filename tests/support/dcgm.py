"""What NVIDIA's dcgm-exporter really exposes, written down once for the tests that imitate it or check an
imitation: the DCGM fields the shipped GPU rules read, and the labels on every GPU series.

Read from NVIDIA/dcgm-exporter (commit d5e5f51, May 2026): `etc/default-counters.csv` (which fields are on by
default, their Prometheus type and HELP), `internal/pkg/rendermetrics/render_metrics.go` (the label order:
gpu, UUID, pci_bus_id, device, modelName, the MIG labels, the host label, then the `label` fields of the
counters CSV such as DCGM_FI_DRIVER_VERSION, then err_code/err_msg), `internal/pkg/collector/gpu_collector.go`
and `xid_errors.go` (err_code and err_msg on DCGM_FI_DEV_XID_ERRORS since 3.3.6-3.4.2, so on every 4.x; codes
past the table read "Unknown Error"). DCGM_FI_DEV_ROW_REMAP_PENDING is DCGM field 396, in no CSV the exporter
ships. The host label is `Hostname` before the rename of May 2026 and `hostname` after, absent with
`--no-hostname`. The rest (Kubernetes names) is /work/shared/reference/gpu-alerts.md and gpu-faults-and-jobs.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "FIELDS",
    "GPU_LABELS",
    "HOST_LABELS",
    "KUBERNETES_WORKLOAD_LABELS",
    "LAST_KNOWN_XID",
    "RMA_FIELDS",
    "UNKNOWN_XID_TEXT",
    "XID_TEXT",
    "Field",
    "gpu_problems",
    "uuid_clashes",
]


@dataclass(frozen=True, slots=True)
class Field:
    """One DCGM field as dcgm-exporter exposes it. `default`: on in its default-counters.csv."""

    name: str
    kind: str  # the Prometheus type the CSV gives it: "gauge" or "counter"
    help: str
    default: bool


_FIELDS = (
    Field("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", True),
    Field("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors.", False),
    Field("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors.", False),
    Field("DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.", False),
    Field(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink flow-control CRC errors.",
        False,
    ),
    Field("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors.", False),
    Field("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries.", False),
    Field("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors.", False),
    Field(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
        True,
    ),
    Field("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors", True),
    Field("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", True),
    Field("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending.", False),
)
FIELDS: Mapping[str, Field] = {field.name: field for field in _FIELDS}
RMA_FIELDS = tuple(name for name in FIELDS if name != "DCGM_FI_DEV_XID_ERRORS")

GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName")  # on every GPU series, in this order
HOST_LABELS = ("Hostname", "hostname")  # one of them (or none, with --no-hostname)
# The workload's pod on a GPU, as a ServiceMonitor scrape renames dcgm-exporter's pod mapping labels.
KUBERNETES_WORKLOAD_LABELS = ("exported_pod", "exported_namespace", "exported_container")

# dcgm-exporter's err_msg for the codes the fixtures use (xid_errors.go), and for codes past its table.
XID_TEXT: Mapping[int, str] = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda",
    48: "Double Bit ECC Error",
    79: "GPU has fallen off the bus",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
}
UNKNOWN_XID_TEXT = "Unknown Error"
LAST_KNOWN_XID = 172  # the last code of dcgm-exporter's table (and of NVIDIA's catalog copy it follows)

_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PCI_BUS_ID = re.compile(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]")


def gpu_problems(labels: Mapping[str, str]) -> list[str]:
    """How one GPU alert's labels differ from what dcgm-exporter sends: empty for a real shape. Each problem
    starts with a short code (`uuid-missing`, `unknown-xid`, ...) a fixture can name as expected."""
    problems = [f"label-missing: {name}" for name in GPU_LABELS if name != "UUID" and not labels.get(name)]
    if not labels.get("UUID"):
        problems.append("uuid-missing: no UUID, the GPU's identity")
    elif not _UUID.fullmatch(labels["UUID"]):
        problems.append(f"uuid-malformed: {labels['UUID']!r}")
    if labels.get("gpu") and labels.get("device") != f"nvidia{labels['gpu']}":
        problems.append(f"device-mismatch: gpu {labels['gpu']} is not {labels.get('device')!r}")
    if labels.get("pci_bus_id") and not _PCI_BUS_ID.fullmatch(labels["pci_bus_id"]):
        problems.append(f"pci-bus-id-malformed: {labels['pci_bus_id']!r}")
    if sum(name in labels for name in HOST_LABELS) > 1:
        problems.append("host-label-twice: one exporter writes Hostname or hostname, not both")
    problems += _xid_problems(labels)
    workload = [name for name in KUBERNETES_WORKLOAD_LABELS[:2] if name in labels]
    if len(workload) == 1:
        problems.append(f"workload-half: {workload[0]} without its pair")
    return problems


def _xid_problems(labels: Mapping[str, str]) -> list[str]:
    """An XID as the shipped rules label it (`xid`) and as dcgm-exporter 4.x does (`err_code`, `err_msg`)."""
    problems = []
    codes = {labels[name] for name in ("xid", "err_code") if name in labels}
    if len(codes) > 1:
        problems.append(f"xid-disagrees: xid and err_code say {sorted(codes)}")
    for code in codes:
        if not code.isdigit():
            problems.append(f"xid-malformed: {code!r}")
        elif int(code) > LAST_KNOWN_XID:
            problems.append(f"unknown-xid: {code} is past NVIDIA's catalog ({LAST_KNOWN_XID})")
    if "err_code" in labels and labels["err_code"].isdigit():
        number = int(labels["err_code"])
        expected = XID_TEXT.get(number, UNKNOWN_XID_TEXT if number > LAST_KNOWN_XID else None)
        if expected is not None and labels.get("err_msg") != expected:
            problems.append(f"err-msg-mismatch: {labels.get('err_msg')!r} for err_code {number}")
    return problems


def uuid_clashes(alerts: list[Mapping[str, str]]) -> list[str]:
    """UUIDs claimed by two different GPUs (another node, or another slot): a UUID names one board."""
    seen: dict[str, tuple[str, str, str]] = {}
    clashes = []
    for labels in alerts:
        uuid = labels.get("UUID")
        if not uuid:
            continue
        where = (
            labels.get("hostname") or labels.get("Hostname") or "",
            labels.get("gpu", ""),
            labels.get("pci_bus_id", ""),
        )
        if seen.setdefault(uuid, where) != where:
            clashes.append(f"uuid-duplicate: {uuid} on {seen[uuid]} and {where}")
    return clashes
