"""Follow-on Xids folded into their root through the real pipeline (engine passes on the shipped aggregation
and GPU triage rules), from the xid79_then_xid45 fixture's label sets: GPU 3 of gpu-node-07 falls off the bus
(GPUFallenOffBus, Xid 79), then its 7 other GPUs report Xid 45 (GPUXidError). One page, not two."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.message.facts import NodeFacts
from alertrouter.message.gpu_triage import FollowOnFacts, GpuTriageFacts, ReasonFacts
from alertrouter.pipeline.folding import FOLLOW_ON_RULE
from alertrouter.pipeline.types import Decision, LiveAlert
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.gpu_fixtures import XID_ACTION_ROUTES, load
from support.scenario import REPO, Scenario, dcgm_labels

HEAD79 = "10.0.0.7: GPUFallenOffBus on 1/8 GPUs"  # the fixture's `node` label names the node here
SEC = timedelta(seconds=1)
MIN = timedelta(minutes=1)


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    for name in ("aggregation.yml", "gpu_triage.yml"):
        shutil.copy(REPO / "rules" / name, tmp_path / name)
    (tmp_path / "routes.yml").write_text(XID_ACTION_ROUTES)
    return Scenario(compile_rules(load_ruleset(tmp_path, {})))


def fixture_labels() -> tuple[dict[str, str], list[dict[str, str]]]:
    """The fixture's Xid 79 alert's labels and its 7 Xid 45 alerts' labels, as posted."""
    labels = [dict(x) for x in load("xid79_then_xid45").labels()]
    roots = [x for x in labels if x["alertname"] == "GPUFallenOffBus"]
    assert len(roots) == 1
    assert len(labels) == 8
    return roots[0], [x for x in labels if x["alertname"] != "GPUFallenOffBus"]


def fire_at(sc: Scenario, labels: Mapping[str, str], starts: timedelta) -> str:
    """Fire an alert whose `startsAt` is `starts` from now (Alertmanager may post it later than that)."""
    fp = sc.fire(labels)
    a = sc.alerts[fp]
    sc.alerts[fp] = LiveAlert(fp, a.labels, True, sc.now + starts, a.fired_at)
    return fp


def triage_of(sc: Scenario) -> GpuTriageFacts | None:
    (message,) = [m.message for m in sc.messages()]
    assert isinstance(message.summary, NodeFacts)
    return message.summary.triage


WANT = GpuTriageFacts(
    79, "3", "GPU has fallen off the bus", "RESTART_BM", "reboot_node", (FollowOnFacts(45, 7, 7),), "UNKNOWN"
)


def test_the_45s_after_a_79_are_folded_into_its_one_page(sc: Scenario) -> None:
    root, others = fixture_labels()
    root_fp = sc.fire(root)
    sc.run(15 * SEC)
    fps = [sc.fire(x) for x in others]
    sc.run(10 * MIN)
    assert [(m.receiver, m.reason.value, m.message.headline) for m in sc.messages()] == [
        ("infrastructure", "first", HEAD79)
    ]
    assert triage_of(sc) == WANT
    assert sc.last is not None
    for fp in fps:
        d = sc.last.decisions[fp]
        assert (d.decision, d.inhibit_rule, d.inhibited_by) == (Decision.INHIBITED, FOLLOW_ON_RULE, root_fp)
    assert sc.last.incidents[sc.messages()[0].incident].labels["xid_action"] == "RESTART_BM"


def test_the_45s_posted_before_their_79_are_folded_when_it_comes(sc: Scenario) -> None:
    root, others = fixture_labels()
    for x in others:  # they started 15 s after the 79, but Alertmanager posted them first
        sc.fire(x)
    sc.run(20 * SEC)
    assert sc.messages() == []
    root_fp = fire_at(sc, root, -(20 + 5 + 15) * SEC)
    sc.run(10 * MIN)
    assert [(m.receiver, m.message.headline) for m in sc.messages()] == [("infrastructure", HEAD79)]
    assert triage_of(sc) == WANT
    assert sc.last is not None
    assert {sc.last.decisions[f].inhibited_by for f in sc.alerts if f != root_fp} == {root_fp}


def test_a_restart_keeps_the_fold_and_sends_nothing_more(sc: Scenario) -> None:
    root, others = fixture_labels()
    sc.fire(root)
    sc.run(15 * SEC)
    for x in others:
        sc.fire(x)
    sc.run(2 * MIN)
    sc.restart()
    sc.run(10 * MIN)
    assert len(sc.messages()) == 1


def test_a_45_later_than_the_window_is_its_own_page(sc: Scenario) -> None:
    root, others = fixture_labels()
    sc.fire(root)
    sc.run(6 * MIN)  # past follow_on_window (5m): a 45 now is not this 79's
    sc.fire(others[0])
    sc.run(2 * MIN)
    assert sorted(m.message.headline for m in sc.messages()) == [
        HEAD79,
        "10.0.0.7: GPUXidError on 1/8 GPUs",
    ]


def test_the_45s_page_once_their_root_resolved(sc: Scenario) -> None:
    root, others = fixture_labels()
    sc.fire(root)
    sc.run(15 * SEC)
    sc.fire(others[0])
    sc.run(MIN)
    sc.resolve(root)
    sc.run(2 * MIN)
    assert [(m.reason.value, m.message.headline) for m in sc.messages() if m.reason.value == "first"] == [
        ("first", HEAD79),
        ("first", "10.0.0.7: GPUXidError on 1/8 GPUs"),
    ]


def test_an_incident_routes_by_its_primary_root_s_action_when_its_alerts_disagree(sc: Scenario) -> None:
    sc.fire(dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="79"))
    sc.run(5 * SEC)
    sc.fire(dcgm_labels("10.0.0.7", "gpu-node-07", 1, xid="13", exported_pod="train-0"))
    sc.run(MIN)
    assert [(m.receiver, m.message.labels.get("xid_action")) for m in sc.messages()] == [
        ("infrastructure", "RESTART_BM")
    ]


def test_one_application_xid_on_two_gpus_of_a_workload_says_the_application(sc: Scenario) -> None:
    for gpu in (0, 1):
        labels = dcgm_labels("10.0.0.3", "gpu-node-03", gpu, xid="13")
        sc.fire(labels | {"exported_namespace": "ml", "exported_pod": "train"})
    sc.run(MIN)
    facts = triage_of(sc)
    assert facts is not None
    assert (facts.xid, facts.action, facts.follow_ons, facts.verdict) == (13, "RESTART_APP", (), "APPLICATION")
    assert facts.reason == ReasonFacts("across_gpus", 13, 2, 2, 86400, 2, "ml/train")
    assert [m.receiver for m in sc.messages()] == ["workload-owner"]


def test_follow_ons_after_the_root_s_page_do_not_page_it_again(sc: Scenario) -> None:
    """They arrive after the root was told (within the window): its incident says them, but does not grow."""
    root, others = fixture_labels()
    sc.fire(root)
    sc.run(2 * MIN)
    assert len(sc.messages()) == 1
    for x in others:
        sc.fire(x)
    sc.run(4 * 60 * MIN)  # past repeat_interval (4h): the repeat says them
    assert [m.reason.value for m in sc.messages()] == ["first", "repeat"]
    first, repeat = (m.message.summary for m in sc.messages())
    assert isinstance(first, NodeFacts)
    assert isinstance(repeat, NodeFacts)
    assert first.triage is None  # nothing but its own Xid lines to say then
    assert repeat.triage == WANT
