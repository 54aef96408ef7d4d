"""What NVIDIA's dcgm-exporter really exposes, written down once for the tests that imitate it or check an
imitation: the DCGM fields the shipped GPU rules read.

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

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "FIELDS",
    "RMA_FIELDS",
    "Field",
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
