"""A fault that repeats on its GPU over time is told as the GPU's (hardware), from the GPU's history: the
live alerts cannot show it, as dcgm-exporter keeps one series per GPU and a repeat is a new episode of the
same alert. Read as the engine writes a message (`engine.gpus.repeated_on_gpu`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from alertrouter.engine.gpus import repeated_on_gpu
from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.triage import DEFAULT_RULES
from alertrouter.message.facts import NodeFacts
from alertrouter.message.gpu_triage import GpuTriageFacts, ReasonFacts
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.model import AlertStatus, IncidentKind

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
UUID = "GPU-6ee0f993-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
LABELS = {
    "alertname": "GPUXidError",
    "Hostname": "gpu-node-07",
    "gpu": "3",
    "UUID": UUID,
    "modelName": "NVIDIA H100 80GB HBM3",
    "err_code": "48",
    "xid": "48",
    "severity": "critical",
}


def message(
    labels: dict[str, str] = LABELS, *, status: AlertStatus = AlertStatus.FIRING, triage: GpuTriageFacts | None = None
) -> MessageSnapshot:
    return MessageSnapshot(
        incident="gpu-by-node/GPUXidError/gpu-node-07",
        kind=IncidentKind.NODE,
        reason="first",
        status=status,
        severity="critical",
        headline="gpu-node-07: GPUXidError on 1/8 GPUs",
        summary=NodeFacts(headline="gpu-node-07: GPUXidError on 1/8 GPUs", where="gpu-node-07", triage=triage),
        alerts=(AlertItem("fp48", labels, status is AlertStatus.FIRING),),
        started_at=NOW,
        at=NOW,
    )


def xid48(*hours_ago: float) -> dict[str, list[GpuEvent]]:
    return {UUID: [GpuEvent("GPUXidError", NOW - timedelta(hours=h), 48) for h in hours_ago]}


def test_the_fifth_xid_48_in_a_day_on_one_gpu_is_the_hardware() -> None:
    told = repeated_on_gpu(message(), xid48(20, 15, 10, 5, 0), DEFAULT_RULES)
    assert told == GpuTriageFacts(
        xid=48,
        gpu="3",
        meaning=told.meaning if told else "",
        action="WORKFLOW_XID_48",
        action_class=told.action_class if told else "",
        verdict="HARDWARE",
        reason=ReasonFacts("repeated_fatal", 48, 5, 5, 86400, 1, ""),
    )


def test_four_times_or_a_day_and_more_apart_is_not_yet() -> None:
    assert repeated_on_gpu(message(), xid48(15, 10, 5, 0), DEFAULT_RULES) is None
    assert repeated_on_gpu(message(), xid48(40, 30, 25, 20, 0), DEFAULT_RULES) is None  # 2 in the last 24 h


def test_starts_closer_than_the_burst_count_once() -> None:
    # an alert and its re-send, or two rules about one fault: minutes apart, one time
    assert repeated_on_gpu(message(), xid48(20, 15, 10, 0.03, 0), DEFAULT_RULES) is None


def test_nothing_is_said_of_a_resolved_message_a_gpu_without_uuid_or_a_told_verdict() -> None:
    history = xid48(20, 15, 10, 5, 0)
    assert repeated_on_gpu(message(status=AlertStatus.RESOLVED), history, DEFAULT_RULES) is None
    no_uuid = {k: v for k, v in LABELS.items() if k != "UUID"}
    assert repeated_on_gpu(message(no_uuid), history, DEFAULT_RULES) is None
    told = GpuTriageFacts(48, "3", verdict="APPLICATION", reason=ReasonFacts("ACROSS_GPUS", 48, 2, 2, 86400, 2))
    assert repeated_on_gpu(message(triage=told), history, DEFAULT_RULES) is None


def test_a_triage_told_with_follow_ons_keeps_them_and_gains_the_verdict() -> None:
    base = GpuTriageFacts(48, "3", "Double Bit ECC Error", "WORKFLOW_XID_48", "remap_or_rma")
    told = repeated_on_gpu(message(triage=base), xid48(20, 15, 10, 5, 0), DEFAULT_RULES)
    assert told == replace(base, verdict="HARDWARE", reason=ReasonFacts("repeated_fatal", 48, 5, 5, 86400, 1, ""))
