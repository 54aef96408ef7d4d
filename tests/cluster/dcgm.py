"""One node's simulated dcgm-exporter: each GPU's state (`Gpu`) and the text a scrape of it returns.

Field names, types, HELP texts and the label order are dcgm-exporter's own (tests/support/dcgm.py says where
each comes from): gpu, UUID, pci_bus_id, device, modelName, the host label (`Hostname` or `hostname`),
DCGM_FI_DRIVER_VERSION, then, on DCGM_FI_DEV_XID_ERRORS only, err_code and err_msg (`err_labels`: 3.3.6 and
later, so every 4.x). The fields exported are those of its default counters CSV, which include the remapped
rows and the row-remap failure flag; `rma_csv` adds what the shipped RMA rules also read and a site must
enable in its own CSV (retired pages, the four NVLink error counters, DCGM_FI_DEV_ROW_REMAP_PENDING).

A GPU's UUID is its own: it stays with the `Gpu` when a scenario moves it to another slot or node. The NVLink
error counters grow with the wall clock (`Counter`), so Prometheus's rate() sees what a failing link shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from alertrouter.gpu.xid import lookup
from support.dcgm import FIELDS, LAST_KNOWN_XID, UNKNOWN_XID_TEXT

__all__ = ["DRIVER", "MODEL", "NVLINK_COUNTERS", "PCI_BUS", "Counter", "Gpu", "exposition", "labels_text", "number"]

MODEL = "NVIDIA H100 80GB HBM3"
DRIVER = "535.129.03"
FB_TOTAL_MIB = 81559  # what DCGM reports as FB_USED + FB_FREE on an H100 80GB
PCI_BUS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")  # HGX H100 board, as in e2e.harness

# (name, type, HELP) in dcgm-exporter's default-counters.csv order.
_DEFAULT = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
)
_REMAP = (
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
)
_RETIRED = ("DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_RETIRED_PENDING")
# Gpu attribute -> DCGM field, for the counters that grow with time.
NVLINK_COUNTERS = {
    "nvlink_crc_flit": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "nvlink_crc_data": "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "nvlink_replay": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "nvlink_recovery": "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}
# What each CSV exports, in the CSV's order: the default one, and the default one with the RMA fields enabled.
_FIELDS_DEFAULT = (*_DEFAULT, *((name, FIELDS[name].kind, FIELDS[name].help) for name in _REMAP))
_FIELDS_RMA = (
    *_DEFAULT[:-1],
    *((name, FIELDS[name].kind, FIELDS[name].help) for name in (*_RETIRED, *NVLINK_COUNTERS.values())),
    _DEFAULT[-1],
    *((name, FIELDS[name].kind, FIELDS[name].help) for name in (*_REMAP, "DCGM_FI_DEV_ROW_REMAP_PENDING")),
)


@dataclass(frozen=True)
class Counter:
    """A DCGM error counter: `count` at `since` (a time.time()), growing `per_second` from then on."""

    count: float = 0.0
    per_second: float = 0.0
    since: float = 0.0

    def value(self, now: float) -> float:
        return self.count + self.per_second * max(0.0, now - self.since)

    def rising(self, per_second: float, now: float | None = None) -> Counter:
        """This counter from `now` on growing at `per_second` (0 stops it); what it counted is kept."""
        at = time.time() if now is None else now
        return Counter(self.value(at), per_second, at)


@dataclass
class Gpu:
    """What a test may change on one GPU; the defaults are a healthy, moderately busy H100 with no memory
    repairs. `uuid`: set by the fleet from the GPU's first node and slot, then the GPU's own."""

    uuid: str = ""
    temp: float = 45.0
    xid: int = 0
    fb_used: int = 24000
    util: float = 40.0
    power: float = 310.0
    row_remap_failure: int = 0
    row_remap_pending: int = 0
    uncorrectable_remapped_rows: int = 0
    correctable_remapped_rows: int = 0
    retired_sbe: int = 0
    retired_dbe: int = 0
    retired_pending: int = 0
    nvlink_crc_flit: Counter = field(default_factory=Counter)
    nvlink_crc_data: Counter = field(default_factory=Counter)
    nvlink_replay: Counter = field(default_factory=Counter)
    nvlink_recovery: Counter = field(default_factory=Counter)

    def values(self, started: float, now: float) -> dict[str, float]:
        return {
            "DCGM_FI_DEV_SM_CLOCK": 1980,
            "DCGM_FI_DEV_MEM_CLOCK": 2619,
            "DCGM_FI_DEV_MEMORY_TEMP": self.temp - 6,
            "DCGM_FI_DEV_GPU_TEMP": self.temp,
            "DCGM_FI_DEV_POWER_USAGE": self.power,
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 9.1e9 + started,
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
            "DCGM_FI_DEV_GPU_UTIL": self.util,
            "DCGM_FI_DEV_MEM_COPY_UTIL": self.util / 2,
            "DCGM_FI_DEV_XID_ERRORS": self.xid,
            "DCGM_FI_DEV_FB_FREE": FB_TOTAL_MIB - self.fb_used,
            "DCGM_FI_DEV_FB_USED": self.fb_used,
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": 180000,
            "DCGM_FI_DEV_RETIRED_SBE": self.retired_sbe,
            "DCGM_FI_DEV_RETIRED_DBE": self.retired_dbe,
            "DCGM_FI_DEV_RETIRED_PENDING": self.retired_pending,
            **{name: getattr(self, attr).value(now) for attr, name in NVLINK_COUNTERS.items()},
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": self.uncorrectable_remapped_rows,
            "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": self.correctable_remapped_rows,
            "DCGM_FI_DEV_ROW_REMAP_FAILURE": self.row_remap_failure,
            "DCGM_FI_DEV_ROW_REMAP_PENDING": self.row_remap_pending,
        }


def exposition(
    gpus: list[Gpu],
    *,
    host: tuple[str, str],
    started: float,
    rma_csv: bool = False,
    err_labels: bool = False,
    now: float | None = None,
) -> str:
    """The Prometheus text a scrape of one node's dcgm-exporter returns. `host`: (label name, value)."""
    at = time.time() if now is None else now
    per_gpu = [(slot, gpu, gpu.values(started, at)) for slot, gpu in enumerate(gpus)]
    lines: list[str] = []
    for metric, kind, help_text in _FIELDS_RMA if rma_csv else _FIELDS_DEFAULT:
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
        for slot, gpu, values in per_gpu:
            labels = {
                "gpu": str(slot),
                "UUID": gpu.uuid,
                "pci_bus_id": f"00000000:{PCI_BUS[slot % len(PCI_BUS)]}:00.0",
                "device": f"nvidia{slot}",
                "modelName": MODEL,
                host[0]: host[1],
                "DCGM_FI_DRIVER_VERSION": DRIVER,
            }
            if err_labels and metric == "DCGM_FI_DEV_XID_ERRORS":
                labels["err_code"] = str(gpu.xid)
                labels["err_msg"] = _err_msg(gpu.xid)
            lines.append(f"{metric}{labels_text(labels)} {number(values[metric])}")
    return "\n".join(lines) + "\n"


def _err_msg(code: int) -> str:
    """dcgm-exporter's text for a code: its table (alertrouter's xid.csv holds the same words), "Unknown
    Error" past the table's end, "" for a gap in it."""
    if code == 0:
        return "No Error"
    return UNKNOWN_XID_TEXT if code > LAST_KNOWN_XID or code < 0 else lookup(code).meaning


def labels_text(labels: dict[str, str]) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
