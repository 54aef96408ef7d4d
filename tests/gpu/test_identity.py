"""A GPU's identity from dcgm-exporter's real label sets (bare metal and Kubernetes) and from hostile ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.gpu.identity import GpuIdentity, Sighting, conflicting, identity_of, places
from alertrouter.model import NAME_MAX, bounded
from alertrouter.pipeline.nodes import NodeIdentity

NODES = NodeIdentity()  # the pipeline's naming with no rules: labels, then the instance's address

UUID = "GPU-8f3c2a1e-5b7d-4c9e-a1f2-3d4e5f6a7b8c"
T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)

# dcgm-exporter on bare metal, scraped by IP: the node's name only in `Hostname` (before May 2026).
BARE_METAL = {
    "alertname": "GPUXidError",
    "instance": "10.0.0.7:9400",
    "job": "dcgm-exporter",
    "Hostname": "gpu-node-07",
    "gpu": "3",
    "UUID": UUID,
    "device": "nvidia3",
    "modelName": "NVIDIA H100 80GB HBM3",
    "pci_bus_id": "00000000:1B:00.0",
    "xid": "48",
}
# Under the GPU Operator, scraped by pod IP through a ServiceMonitor: `hostname` (2026 spelling) is the
# node, the exporter pod owns `pod`, the workload's pod is `exported_pod`.
KUBERNETES = {
    "alertname": "GPUXidError",
    "instance": "10.244.3.17:9400",
    "job": "nvidia-dcgm-exporter",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-x7k2p",
    "container": "nvidia-dcgm-exporter",
    "endpoint": "gpu-metrics",
    "service": "nvidia-dcgm-exporter",
    "hostname": "gpu-node-12",
    "gpu": "0",
    "UUID": UUID,
    "device": "nvidia0",
    "modelName": "NVIDIA A100-SXM4-80GB",
    "pci_bus_id": "00000000:07:00.0",
    "exported_pod": "trainer-worker-3",
    "exported_namespace": "ml",
    "exported_container": "pytorch",
    "prometheus": "monitoring/k8s",
    "xid": "79",
}


def test_bare_metal_labels() -> None:
    assert identity_of(BARE_METAL, NODES) == GpuIdentity(
        uuid=UUID,
        serial=None,  # not exported unless a custom counters file enables it
        model="NVIDIA H100 80GB HBM3",
        node="gpu-node-07",
        slot="3",
        pci_bus_id="00000000:1B:00.0",
    )


def test_kubernetes_labels_name_the_node_not_the_exporter_pod() -> None:
    gpu = identity_of(KUBERNETES, NODES)
    assert gpu is not None
    assert (gpu.uuid, gpu.node, gpu.slot, gpu.model) == (UUID, "gpu-node-12", "0", "NVIDIA A100-SXM4-80GB")


def test_the_node_is_named_as_the_pipeline_names_it() -> None:
    aliases = NodeIdentity(aliases={"gpu-node-07": "rack3-node07"})
    gpu = identity_of(BARE_METAL, aliases)
    assert gpu is not None
    assert gpu.node == "rack3-node07"
    # `Hostname="localhost"` (a remote nv-hostengine) names no node: the instance's address does
    gpu = identity_of({**BARE_METAL, "Hostname": "localhost"}, NODES)
    assert gpu is not None
    assert gpu.node == "10.0.0.7"


@pytest.mark.parametrize("name", ["uuid", "gpu_uuid"])
def test_other_uuid_spellings(name: str) -> None:
    labels = {k: v for k, v in BARE_METAL.items() if k != "UUID"} | {name: UUID}
    gpu = identity_of(labels, NODES)
    assert gpu is not None
    assert gpu.uuid == UUID


def test_serial_where_exported() -> None:
    gpu = identity_of({**BARE_METAL, "serial": " 1654922007563 "}, NODES)
    assert gpu is not None
    assert gpu.serial == "1654922007563"


@pytest.mark.parametrize(
    "labels",
    [
        {k: v for k, v in BARE_METAL.items() if k != "UUID"},  # `--no-hostname`-style trimmed exporter, no UUID
        {**BARE_METAL, "UUID": ""},
        {**BARE_METAL, "UUID": "   "},
        {**BARE_METAL, "UUID": "GPU-" + "a" * NAME_MAX},  # longer than any real UUID: no history key
    ],
)
def test_no_history_key_records_nothing(labels: dict[str, str]) -> None:
    assert identity_of(labels, NODES) is None


def test_values_too_long_are_left_out_not_cut() -> None:
    long = "x" * (NAME_MAX + 1)
    gpu = identity_of({**BARE_METAL, "serial": long, "modelName": long, "gpu": long, "Hostname": long}, NODES)
    assert gpu is not None
    assert (gpu.uuid, gpu.serial, gpu.model, gpu.slot) == (UUID, None, None, None)
    assert gpu.node == bounded(long, NAME_MAX)  # as the engine stores the alert's node
    assert identity_of({**BARE_METAL, "UUID": "G" * NAME_MAX}, NODES) is not None  # at the limit: kept


def test_a_gpu_that_moved_is_no_conflict() -> None:
    seen = places(
        [
            Sighting("gpu-node-07", "3", T0),
            Sighting("gpu-node-07", "3", T0 + timedelta(days=2)),
            Sighting("gpu-node-12", "0", T0 + timedelta(days=9)),  # after an RMA swap or a re-seat
        ]
    )
    assert [(p.node, p.slot, p.events) for p in seen] == [("gpu-node-07", "3", 2), ("gpu-node-12", "0", 1)]
    assert not conflicting(seen)


def test_two_gpus_claiming_one_uuid_conflict() -> None:
    seen = places(
        [
            Sighting("gpu-node-07", "3", T0),
            Sighting("gpu-node-12", "0", T0 + timedelta(hours=1)),
            Sighting("gpu-node-07", "3", T0 + timedelta(hours=2)),  # back at the first place: two GPUs
        ]
    )
    assert len(seen) == 2
    assert conflicting(seen)
