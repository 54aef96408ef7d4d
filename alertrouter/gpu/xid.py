"""What an NVIDIA XID code means and what to do about it, from the table shipped in `data/xid.csv`.

A GPU alert names its XID in the label `xid` (the shipped Prometheus rules copy the value of
`DCGM_FI_DEV_XID_ERRORS` into it) or `err_code` (dcgm-exporter 4.x puts it on the series itself, next to
`err_msg`). Label values are data: "79", "79.0", " 79 " read as 79; anything else (garbage, negative,
fractional, huge) reads as no XID, never as an error. Code 0 is dcgm-exporter's "no XID since the last
reset": not a fault either.

The table keeps NVIDIA's words (the meaning, and the catalog's "Resolution Bucket (Immediate Action)");
`ACTIONS` groups those buckets into the few classes a message shows, worded in the receiver's language.
What triage reads besides (`data/xid_triage.csv`): the investigatory bucket, the kind of fault
(hardware, application, informational; `unknown` for a code that table does not list) and whether the
catalog calls the code a consequence of a fault elsewhere (sympathetic, Xid 154's linkage).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from gettext import NullTranslations
from pathlib import Path

__all__ = [
    "ACTIONS",
    "CATALOG_URL",
    "DATA_FILE",
    "KINDS",
    "TRIAGE_FILE",
    "XID_LABELS",
    "XidInfo",
    "action_text",
    "from_labels",
    "lookup",
    "meaning_text",
    "parse_code",
    "short_line",
    "table",
    "xid_line",
]

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/"  # NVIDIA's XID catalog: each code's whole workflow
DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "xid.csv"
TRIAGE_FILE = DATA_FILE.with_name("xid_triage.csv")
KINDS = ("hardware", "application", "informational", "unknown")
XID_LABELS = ("xid", "err_code")  # the shipped rules' label first, then dcgm-exporter's own
_MAX_CODE = 100_000  # well above any XID NVIDIA has numbered; bigger is garbage

# NVIDIA's immediate-action bucket -> the class shown. Buckets not listed (and codes newer than the
# catalog copy) show `see_docs`.
ACTIONS: Mapping[str, str] = {
    "RESTART_APP": "restart_app",
    "RESET_GPU": "reset_gpu",
    "RESTART_BM": "reboot_node",
    "RESTART_VM": "reboot_node",
    "CONTACT_SUPPORT": "contact_support",
    "UNEXPECTED_ERR_REPORT_ISSUE": "contact_support",
    "CHECK_MECHANICALS": "check_hardware",
    "UPDATE_SWFW": "update_software",
    "CHECK_UVM": "check_application",
    "IGNORE": "none",
    # NVIDIA's multi-step workflows, said as their first steps (the catalog's page has the whole flow)
    "WORKFLOW_XID_45": "after_other_xid",  # a cleanup after another fault: that fault's action
    "WORKFLOW_XID_48": "memory_dbe",  # a double-bit ECC error: a reset applies the row remap; RMA if it fails
    "WORKFLOW_NVLINK_ERR": "nvlink",
    "WORKFLOW_NVLINK5_ERR": "nvlink",
    "XID_154": "follow_linked",  # the driver names the recovery action (reset or reboot) of an earlier XID
}


@dataclass(frozen=True, slots=True)
class XidInfo:
    """One XID code: `known` when the table lists it; `bucket` as NVIDIA's catalog names it."""

    code: int
    known: bool
    meaning: str = ""  # NVIDIA's words
    meaning_zh: str = ""
    bucket: str = ""
    investigatory: str = ""  # the catalog's "Resolution Bucket (Investigatory)", as written there
    kind: str = "unknown"  # one of KINDS
    consequence: bool = False  # the catalog calls it a report of a fault elsewhere (sympathetic, Xid 154)

    @property
    def action(self) -> str:
        """The class of what to do first: restart_app, reset_gpu, reboot_node, contact_support, ..."""
        return ACTIONS.get(self.bucket, "see_docs")

    @property
    def fatal(self) -> bool:
        """A hardware fault whose first action is more than ignoring it: what repeats on one GPU point at."""
        return self.kind == "hardware" and self.bucket not in ("", "IGNORE")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _read(path: Path, triage: Path) -> dict[int, XidInfo]:
    facts = {int(r["code"]): r for r in _rows(triage)}
    out: dict[int, XidInfo] = {}
    for r in _rows(path):
        code = int(r["code"])
        t = facts.get(code)
        extra = (t["investigatory"], t["kind"], t["consequence"] == "1") if t else ("", "unknown", False)
        out[code] = XidInfo(code, True, r["meaning"], r["meaning_zh"], r["action"], *extra)
    return out


@cache
def table() -> Mapping[int, XidInfo]:
    """code -> XidInfo, read once."""
    return _read(DATA_FILE, TRIAGE_FILE)


def parse_code(value: object) -> int | None:
    """The XID of a label value (or a number): a whole number from 1 up, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number: float = value
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str) and 0 < len(value) <= 32:
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    if not math.isfinite(number) or number != int(number) or not 0 < number < _MAX_CODE:
        return None
    return int(number)


def lookup(code: int) -> XidInfo:
    """The table's entry for `code`, or an unknown one."""
    return table().get(code) or XidInfo(code, False)


def from_labels(labels: Mapping[str, str]) -> XidInfo | None:
    """The XID an alert's labels name (`xid`, else `err_code`), or None when they name none. Asked of every
    alert the engine sorts, most of which carry neither label: those return at the first look."""
    for name in XID_LABELS:
        value = labels.get(name)
        if value is None:
            continue
        code = parse_code(value)
        if code is not None:
            return lookup(code)
    return None


def meaning_text(info: XidInfo, language: str) -> str:
    """NVIDIA's meaning in `language` (zh-CN has the table's translation), "" when unknown."""
    return (info.meaning_zh or info.meaning) if language == "zh-CN" else info.meaning


def action_text(tr: NullTranslations, action: str) -> str:
    """`reboot the node` / `重启节点`: what a person on call does first, never "follow a workflow" (NVIDIA's
    workflows are said as their first steps)."""
    words = {
        "restart_app": tr.gettext("restart the application"),
        "reset_gpu": tr.gettext("reset the GPU"),
        "reboot_node": tr.gettext("reboot the node"),
        "contact_support": tr.gettext("contact NVIDIA support (RMA)"),
        "check_hardware": tr.gettext("check the hardware (power cables, cooling)"),
        "update_software": tr.gettext("update the driver and firmware"),
        "check_application": tr.gettext("check the application's use of CUDA memory"),
        "none": tr.gettext("no action needed"),
        "memory_dbe": tr.gettext("reset the GPU to remap its memory; RMA if the remap fails (XID 64) or it repeats"),
        "after_other_xid": tr.gettext("act on the XID reported before it; alone, restart the application"),
        "nvlink": tr.gettext(
            "reset the GPU; if NVLink errors repeat, check the NVLink links and contact NVIDIA support"
        ),
        "follow_linked": tr.gettext("do the recovery the driver names: reset the GPU or reboot the node"),
    }
    return words.get(action, tr.gettext("see NVIDIA's XID documentation"))


def short_line(tr: NullTranslations, info: XidInfo) -> str:
    """`XID 79: reboot the node`: an SMS template variable's worth."""
    action = action_text(tr, info.action if info.known else "see_docs")
    return tr.gettext("XID %(code)s: %(action)s") % {"code": info.code, "action": action}


def xid_line(tr: NullTranslations, language: str, info: XidInfo, units: str = "") -> str:
    """`XID 79: GPU has fallen off the bus — action: reboot the node`, with `on GPU 1, 3` when `units`;
    an unknown code: `XID 999: unknown XID: see NVIDIA docs`."""
    values = {"code": info.code, "units": units}
    if not info.known:
        text = tr.gettext("XID %(code)s on GPU %(units)s: unknown XID: see NVIDIA docs")
        return (text if units else tr.gettext("XID %(code)s: unknown XID: see NVIDIA docs")) % values
    values |= {"meaning": meaning_text(info, language), "action": action_text(tr, info.action)}
    if units:
        return tr.gettext("XID %(code)s on GPU %(units)s: %(meaning)s — action: %(action)s") % values
    return tr.gettext("XID %(code)s: %(meaning)s — action: %(action)s") % values
