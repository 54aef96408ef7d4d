"""A node incident's GPU triage as its stored summary holds it (`message.gpu_triage`): written only when
there is one, read back to the same facts and the same JSON, and read leniently (a hand-written or damaged
value reads as absent and is kept as it was)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from alertrouter.message.facts import NodeFacts
from alertrouter.message.gpu_triage import FollowOnFacts, GpuTriageFacts, ReasonFacts

PLAIN: dict[str, Any] = {
    "headline": "gpu-node-07: GPUFallenOffBus on 1/8 GPUs",
    "where": "gpu-node-07",
    "alertname": "GPUFallenOffBus",
    "units": ["3"],
    "units_total": 8,
    "unit_name": "GPUs",
    "alerts": 1,
    "firing": 1,
    "eligible": 1,
    "muted": 0,
    "silenced": 0,
}
TRIAGE = GpuTriageFacts(
    79,
    "3",
    "GPU has fallen off the bus",
    "RESTART_BM",
    "reboot_node",
    (FollowOnFacts(45, 7, 7),),
    "HARDWARE",
    ReasonFacts("repeated_fatal", 79, 5, 5, 86400, 1),
)


def test_a_summary_without_triage_is_written_back_byte_for_byte() -> None:
    facts = NodeFacts.from_json(PLAIN)
    assert facts.triage is None
    assert json.dumps(facts.to_json()) == json.dumps(PLAIN)


def test_the_triage_reads_back_to_the_same_facts_and_json() -> None:
    stored = PLAIN | {"triage": TRIAGE.to_json()}
    facts = NodeFacts.from_json(json.loads(json.dumps(stored)))
    assert facts.triage == TRIAGE
    assert "triage" not in facts.extra
    assert json.dumps(facts.to_json()) == json.dumps(stored)


@pytest.mark.parametrize("value", ["79", [], {"xid": "79"}, {"xid": True}, None])
def test_a_damaged_triage_reads_as_none_and_is_kept_as_written(value: object) -> None:
    stored = PLAIN | {"triage": value}
    facts = NodeFacts.from_json(stored)
    assert facts.triage is None
    assert facts.to_json() == stored


def test_wrong_types_inside_read_as_absent() -> None:
    raw = {"xid": 79, "gpu": 3, "follow_ons": [{"xid": 45, "gpus": "7"}, "x", {"gpus": 2}], "reason": [1]}
    assert GpuTriageFacts.from_json(raw) == GpuTriageFacts(79, follow_ons=(FollowOnFacts(45),))
