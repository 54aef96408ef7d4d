"""The simulated dcgm-exporter (cluster/dcgm.py, served by cluster/fleet.py) writes what the real one does:
Prometheus text exposition, parsed back here, with dcgm-exporter's fields, types, HELP texts and labels; the
RMA signals and an XID per GPU on demand; a UUID per GPU that stays its own. No Prometheus, no box."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cluster.dcgm import Counter, Gpu, exposition
from cluster.fleet import Fleet
from e2e.harness import gpu_labels
from support.dcgm import FIELDS, GPU_LABELS, RMA_FIELDS, gpu_problems

REPO = Path(__file__).resolve().parents[2]
LABEL_ORDER = [*GPU_LABELS, "Hostname", "DCGM_FI_DRIVER_VERSION"]
ONLY_WITH_RMA_CSV = {name for name in RMA_FIELDS if not FIELDS[name].default}


def families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(text: str, metric: str, gpu: int) -> float:
    (sample,) = [s for s in families(text)[metric].samples if s.labels["gpu"] == str(gpu)]
    return float(sample.value)


def test_a_node_exports_the_default_counters_in_dcgm_exporters_shape() -> None:
    fleet = Fleet(3)
    text = fleet.node(1).dcgm_metrics()
    found = families(text)
    assert len(found) == 16
    assert not ONLY_WITH_RMA_CSV & set(found)  # off in dcgm-exporter's default CSV: rules on them never fire
    for name in RMA_FIELDS:
        if FIELDS[name].default:
            assert (found[name].type, found[name].documentation) == (FIELDS[name].kind, FIELDS[name].help)
    for family in found.values():
        assert [list(sample.labels) for sample in family.samples] == [LABEL_ORDER] * 8
    samples = found["DCGM_FI_DEV_ROW_REMAP_FAILURE"].samples
    assert [s.labels["UUID"] for s in samples] == [gpu_labels(1, g)["UUID"] for g in range(8)]  # as e2e names it
    assert [gpu_problems(s.labels) for s in samples] == [[]] * 8
    assert fleet.node(1).dcgm_metrics() == text  # nothing moves between scrapes of a healthy node


def test_the_rma_csv_exports_every_field_the_shipped_rma_rules_read() -> None:
    node = Fleet(2).node(2)
    node.rma_csv = True
    found = families(node.dcgm_metrics())
    assert set(RMA_FIELDS) <= set(found)
    for name in RMA_FIELDS:
        assert (found[name].type, found[name].documentation) == (FIELDS[name].kind, FIELDS[name].help)
    rules = yaml.safe_load((REPO / "rules/prometheus/gpu.rules.yml").read_text(encoding="utf-8"))["groups"]
    read = {m for g in rules if g["name"] == "gpu-rma" for r in g["rules"] for m in re.findall(r"DCGM_\w+", r["expr"])}
    assert len(read) == 10
    assert read <= set(found)
    assert {s.labels["hostname"] for s in found["DCGM_FI_DEV_RETIRED_DBE"].samples} == {"gpu-node-02"}


def test_set_gpus_drives_the_memory_signals_of_one_gpu() -> None:
    fleet = Fleet(1)
    fleet.node(1).rma_csv = True
    fleet.set_gpus(1, [5], row_remap_failure=1, row_remap_pending=1, uncorrectable_remapped_rows=3, retired_dbe=17)
    text = fleet.node(1).dcgm_metrics()
    signals = ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_PENDING")
    assert [value(text, name, 5) for name in signals] == [1, 1]
    assert value(text, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 5) == 3
    assert value(text, "DCGM_FI_DEV_RETIRED_DBE", 5) == 17
    assert [value(text, "DCGM_FI_DEV_ROW_REMAP_FAILURE", g) for g in range(8) if g != 5] == [0] * 7
    with pytest.raises(AttributeError, match="no_such_field"):
        fleet.set_gpus(1, [0], no_such_field=1)


def test_an_nvlink_error_counter_grows_with_the_clock_and_keeps_its_count() -> None:
    gpus = [Gpu(uuid="GPU-00000000-0000-4000-8000-000000000000")]
    gpus[0].nvlink_replay = Counter(40).rising(120.0, now=1000.0)
    name = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"

    def at(now: float) -> float:
        return value(exposition(gpus, host=("hostname", "n"), started=0, rma_csv=True, now=now), name, 0)

    assert [at(1000.0), at(1030.0), at(1060.0)] == [40, 40 + 3600, 40 + 7200]
    gpus[0].nvlink_replay = gpus[0].nvlink_replay.rising(0.0, now=1060.0)
    assert at(5000.0) == 40 + 7200
    fleet = Fleet(1)
    fleet.node(1).rma_csv = True
    fleet.nvlink_errors(1, [2, 3], "crc_flit", per_second=150.0)
    assert fleet.node(1).gpus[2].nvlink_crc_flit.per_second == 150.0
    assert fleet.node(1).gpus[0].nvlink_crc_flit == Counter()
    with pytest.raises(AttributeError, match="crc"):
        fleet.nvlink_errors(1, [0], "crc", per_second=1.0)


def test_an_xid_per_gpu_and_dcgm_exporter_4x_err_code() -> None:
    fleet = Fleet(2)
    fleet.set_gpus(2, [3], xid=79)
    fleet.set_gpus(2, [0, 1, 2, 4, 5, 6, 7], xid=45)
    old = fleet.node(2).dcgm_metrics()
    assert [value(old, "DCGM_FI_DEV_XID_ERRORS", g) for g in range(8)] == [45, 45, 45, 79, 45, 45, 45, 45]
    assert "err_code" not in old
    fleet.node(2).err_labels = True
    fleet.set_gpus(2, [7], xid=999)
    samples = families(fleet.node(2).dcgm_metrics())["DCGM_FI_DEV_XID_ERRORS"].samples
    assert [(s.labels["err_code"], s.labels["err_msg"]) for s in samples[2:4]] == [
        ("45", "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda"),
        ("79", "GPU has fallen off the bus"),
    ]
    assert (samples[7].labels["err_code"], samples[7].labels["err_msg"]) == ("999", "Unknown Error")
    assert [gpu_problems(s.labels) for s in samples[:7]] == [[]] * 7  # what the fixtures' checks accept
    assert [p.split(":")[0] for p in gpu_problems(samples[7].labels)] == ["unknown-xid"]
    others = families(fleet.node(2).dcgm_metrics())["DCGM_FI_DEV_GPU_TEMP"].samples
    assert all("err_code" not in s.labels for s in others)  # dcgm-exporter puts them on the XID series only


def test_a_gpu_keeps_its_uuid_when_moved_to_another_node() -> None:
    fleet = Fleet(2)
    fleet.set_gpus(1, [3], row_remap_failure=1)
    board = fleet.node(1).gpus[3].uuid
    fleet.move_gpu((1, 3), (2, 6))
    moved = families(fleet.node(2).dcgm_metrics())["DCGM_FI_DEV_ROW_REMAP_FAILURE"].samples[6]
    assert (moved.labels["UUID"], moved.labels["gpu"], moved.labels["pci_bus_id"], moved.value) == (
        board,
        "6",
        "00000000:BA:00.0",
        1,
    )
    back = families(fleet.node(1).dcgm_metrics())["DCGM_FI_DEV_ROW_REMAP_FAILURE"].samples[3]
    assert (back.labels["UUID"], back.value) == (gpu_labels(2, 6)["UUID"], 0)


def test_the_fleet_serves_it_as_text_exposition() -> None:
    with Fleet(1) as fleet:
        fleet.node(1).rma_csv = True
        fleet.nvlink_errors(1, [0], "recovery", per_second=2.0)
        with urllib.request.urlopen(f"http://{fleet.address}/nodes/1/dcgm-exporter/metrics", timeout=10) as answer:
            assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            text = answer.read().decode()
    assert value(text, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", 0) >= 0
    assert len(families(text)) == 24
