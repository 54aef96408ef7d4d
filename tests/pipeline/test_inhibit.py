"""Tests for alertrouter.pipeline.inhibit: Alertmanager's inhibition semantics, indexed.

Expectations come from Alertmanager 0.25's ``inhibit/inhibit.go`` behaviour and its own test
tables (``inhibit/inhibit_test.go``, re-expressed here), a brute-force reference written straight
from the semantics and compared on random scenarios, and a real Alertmanager 0.25.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from alertrouter.fingerprints import fingerprint
from alertrouter.labels import Matcher, MatchType, matchers_from_legacy, matches_all, parse_matchers
from alertrouter.model import AlertView
from alertrouter.pipeline.inhibit import Inhibition, Inhibitor, InhibitRule
from support import procs
from support.need import need

Labels = Mapping[str, str]


def m(text: str) -> tuple[Matcher, ...]:
    return tuple(parse_matchers(text))


def rule(name: str, source: str, target: str, *equal: str, hold_down: float = 30) -> InhibitRule:
    return InhibitRule(name, m(source), m(target), equal, timedelta(seconds=hold_down))


def view(labels: Labels, *, firing: bool = True) -> AlertView:
    return AlertView(fingerprint(labels), dict(labels), firing)


def fp(labels: Labels) -> str:
    return fingerprint(labels)


def inhibitor_with(rules: Sequence[InhibitRule], *sources: Labels) -> Inhibitor:
    inhibitor = Inhibitor(rules)
    for labels in sources:
        inhibitor.update(view(labels))
    return inhibitor


# --- the brute-force reference -----------------------------------------------------------------


def reference_muters(
    rules: Sequence[InhibitRule], firing: Mapping[str, Labels], target: AlertView, *, exclude_two_sided: bool = True
) -> list[Inhibition]:
    """Every (rule, source) muting ``target``, rules in config order, sources by fingerprint.

    Scans everything, straight from the semantics: the target matches the rule's target side; a
    firing source other than the target matches the source side with equal ``equal`` values
    (absent = ""); if the target matches the source side too, sources matching both are ignored.
    """
    found: list[Inhibition] = []
    for r in rules:
        if not matches_all(r.target, target.labels):
            continue
        target_two_sided = matches_all(r.source, target.labels)
        for source_fp in sorted(firing):
            labels = firing[source_fp]
            if source_fp == target.fingerprint or not matches_all(r.source, labels):
                continue
            if any(labels.get(n, "") != target.labels.get(n, "") for n in r.equal):
                continue
            if exclude_two_sided and target_two_sided and matches_all(r.target, labels):
                continue
            found.append(Inhibition(r.name, source_fp))
    return found


def reference_mutes(rules: Sequence[InhibitRule], firing: Mapping[str, Labels], target: AlertView) -> Inhibition | None:
    found = reference_muters(rules, firing, target)
    return found[0] if found else None


# --- equal labels ------------------------------------------------------------------------------

NODE_DOWN = rule("node-down", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "node")
NODE_RACK = rule("node-rack", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "node", "rack")


@pytest.mark.parametrize(
    ("rules", "source", "target", "muted"),
    [
        pytest.param([NODE_DOWN], {"node": "n1"}, {"node": "n1"}, True, id="equal-present-both"),
        pytest.param([NODE_DOWN], {"node": "n1"}, {"node": "n2"}, False, id="equal-differs"),
        pytest.param([NODE_DOWN], {}, {}, True, id="equal-absent-both"),
        pytest.param([NODE_DOWN], {"node": "n1"}, {}, False, id="equal-absent-on-target"),
        pytest.param([NODE_DOWN], {}, {"node": "n1"}, False, id="equal-absent-on-source"),
        pytest.param([NODE_DOWN], {"node": ""}, {}, True, id="empty-value-equals-absent"),
        pytest.param([NODE_DOWN], {"node": "n1", "x": "1"}, {"node": "n1", "x": "2"}, True, id="other-labels-ignored"),
        pytest.param([NODE_RACK], {"node": "n1", "rack": "r1"}, {"node": "n1", "rack": "r1"}, True, id="two-equal"),
        pytest.param([NODE_RACK], {"node": "n1", "rack": "r1"}, {"node": "n1", "rack": "r2"}, False, id="one-of-two"),
        pytest.param([NODE_RACK], {"node": "n1"}, {"node": "n1"}, True, id="second-absent-both"),
        pytest.param([NODE_RACK], {"node": "n1", "rack": "r1"}, {"node": "n1"}, False, id="second-absent-one"),
        pytest.param(
            [rule("no-equal", 'alertname="NodeDown"', 'alertname=~"GPU.*"')],
            {"node": "a"},
            {"node": "b"},
            True,
            id="no-equal-labels",
        ),
        pytest.param(
            [rule("dup", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "node", "node")],
            {"node": "a"},
            {"node": "a"},
            True,
            id="duplicate-equal-name",
        ),
    ],
)
def test_equal_labels(rules: list[InhibitRule], source: Labels, target: Labels, muted: bool) -> None:
    source = {"alertname": "NodeDown", **source}
    target = {"alertname": "GPUHighTemp", **target}
    got = inhibitor_with(rules, source).mutes(view(target))
    assert got == (Inhibition(rules[0].name, fp(source)) if muted else None)


# --- matchers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source_m", "target_m", "source", "target", "muted"),
    [
        ('alertname="NodeDown"', 'alertname=~"GPU.*"', {"alertname": "NodeDown"}, {"alertname": "GPUXid"}, True),
        ('alertname="NodeDown"', 'alertname=~"GPU.*"', {"alertname": "NodeDown"}, {"alertname": "XGPU"}, False),
        ('alertname="NodeDown"', 'alertname=~"GPU"', {"alertname": "NodeDown"}, {"alertname": "GPUXid"}, False),
        ('alertname=~"Node(Down|Unreachable)"', "severity!=critical", {"alertname": "NodeUnreachable"}, {}, True),
        (
            'alertname=~"Node(Down|Unreachable)"',
            "severity!=critical",
            {"alertname": "NodeDown"},
            {"severity": "critical"},
            False,
        ),
        (
            'alertname=~"NodeDown|RackDown"',
            'alertname=~"GPUXid|GPUHot"',
            {"alertname": "RackDown"},
            {"alertname": "GPUHot"},
            True,
        ),
        (
            'alertname=~"NodeDown|RackDown"',
            'alertname=~"GPUXid|GPUHot"',
            {"alertname": "Rack"},
            {"alertname": "GPUHot"},
            False,
        ),
        ('alertname!~"GPU.*"', 'alertname=~"GPU.*"', {"alertname": "DiskFull"}, {"alertname": "GPUHot"}, True),
        ('alertname!~"GPU.*"', 'alertname=~"GPU.*"', {"alertname": "GPUXid"}, {"alertname": "GPUHot"}, False),
        (
            'alertname="NodeDown", severity="critical"',
            "",
            {"alertname": "NodeDown", "severity": "warning"},
            {"alertname": "Any"},
            False,
        ),
        (
            'alertname="NodeDown", severity="critical"',
            "",
            {"alertname": "NodeDown", "severity": "critical"},
            {"alertname": "Any"},
            True,
        ),
        ('severity="critical"', 'severity=~"warning|info"', {"severity": "critical"}, {"severity": "info"}, True),
        ('severity="critical"', 'severity=~"warning|info"', {"severity": "critical"}, {}, False),
        ('severity="critical"', 'severity=~"warning|"', {"severity": "critical"}, {}, True),  # absent matches ""
        ('severity="critical"', 'severity=~"(?i)WARNING"', {"severity": "critical"}, {"severity": "warning"}, True),
        ("", 'team="gpu"', {"alertname": "Anything"}, {"team": "gpu"}, True),
    ],
)
def test_matchers(source_m: str, target_m: str, source: Labels, target: Labels, muted: bool) -> None:
    rules = [rule("r", source_m, target_m)]
    got = inhibitor_with(rules, source).mutes(view(target))
    assert got == (Inhibition("r", fp(source)) if muted else None)


# --- Alertmanager's inhibit_test.go, re-expressed ------------------------------------------------

# TestInhibitRuleHasEqual: equal labels over a cache holding resolved and firing sources.
# (There the rule has no matchers; here source/target are told apart by a `kind` label.)
HAS_EQUAL_CASES = [
    pytest.param([], (), {"a": "b"}, False, id="no-sources"),
    pytest.param([({}, True)], (), {"a": "b"}, True, id="no-equal-any-source"),
    pytest.param(
        [({"a": "b", "b": "f"}, False), ({"a": "b", "b": "c"}, False)],
        ("a", "b"),
        {"a": "b", "b": "c"},
        False,
        id="matching-but-resolved",
    ),
    pytest.param(
        [({"a": "b", "c": "d"}, False), ({"a": "b", "c": "f"}, True)],
        ("a",),
        {"a": "b"},
        True,
        id="matching-and-unresolved",
    ),
    pytest.param(
        [({"a": "c", "c": "d"}, False), ({"a": "c", "c": "f"}, False)],
        ("a",),
        {"a": "b"},
        False,
        id="equal-label-differs",
    ),
]


@pytest.mark.parametrize(("sources", "equal", "target", "muted"), HAS_EQUAL_CASES)
def test_alertmanager_has_equal_cases(
    sources: list[tuple[Labels, bool]], equal: tuple[str, ...], target: Labels, muted: bool
) -> None:
    inhibitor = Inhibitor([InhibitRule("r", m('kind="src"'), m('kind="tgt"'), equal)])
    for labels, firing in sources:
        inhibitor.update(view({"kind": "src", **labels}, firing=firing))
    assert (inhibitor.mutes(view({"kind": "tgt", **target})) is not None) is muted


AM_SOURCE_1 = {"s1": "1", "t1": "2", "e": "1"}  # matches rule 1's source side only
AM_SOURCE_2 = {"s2": "1", "t2": "1", "e": "1"}  # matches both sides of rule 2

# TestInhibitRuleMatches: legacy `source_match`/`target_match` rules, `equal: [e]`.
AM_MATCH_RULES = [
    InhibitRule(
        "rule1", tuple(matchers_from_legacy({"s1": "1"}, None)), tuple(matchers_from_legacy({"t1": "1"}, None)), ("e",)
    ),
    InhibitRule(
        "rule2", tuple(matchers_from_legacy({"s2": "1"}, None)), tuple(matchers_from_legacy({"t2": "1"}, None)), ("e",)
    ),
]
# TestInhibitRuleMatchers: the same with matchers, rule 1's target negated.
AM_MATCHERS_RULES = [
    InhibitRule("rule1", m('s1="1"'), m('t1!="1"'), ("e",)),
    InhibitRule("rule2", m('s2="1"'), m('t2="1"'), ("e",)),
]


@pytest.mark.parametrize(
    ("rules", "target", "expected"),
    [
        # Matches rule 1's target side: muted by source 1.
        (AM_MATCH_RULES, {"t1": "1", "e": "1"}, ("rule1", AM_SOURCE_1)),
        # Matches rule 2's target side only; source 2 is two-sided but the target is not.
        (AM_MATCH_RULES, {"t2": "1", "e": "1"}, ("rule2", AM_SOURCE_2)),
        (AM_MATCH_RULES, {"t1": "1", "t3": "1", "e": "1"}, ("rule1", AM_SOURCE_1)),
        (AM_MATCH_RULES, {"t1": "1", "t2": "1", "e": "1"}, ("rule1", AM_SOURCE_1)),
        (AM_MATCH_RULES, {"t1": "0", "e": "1"}, None),
        # Two-sided target, one-sided source: muted.
        (AM_MATCH_RULES, {"s1": "1", "t1": "1", "e": "1"}, ("rule1", AM_SOURCE_1)),
        # Two-sided target, two-sided source: not muted (this is source 2 itself, too).
        (AM_MATCH_RULES, {"s2": "1", "t2": "1", "e": "1"}, None),
        (AM_MATCH_RULES, {"t1": "1", "e": "0"}, None),
        # t1!="1": absent t1 matches, so rule 1 targets nearly everything.
        (AM_MATCHERS_RULES, {"t1": "1", "e": "1"}, None),
        (AM_MATCHERS_RULES, {"t2": "1", "e": "1"}, ("rule1", AM_SOURCE_1)),
        (AM_MATCHERS_RULES, {"t1": "1", "t3": "1", "e": "1"}, None),
        (AM_MATCHERS_RULES, {"t1": "1", "t2": "1", "e": "1"}, ("rule2", AM_SOURCE_2)),
        (AM_MATCHERS_RULES, {"t1": "0", "e": "1"}, ("rule1", AM_SOURCE_1)),
        (AM_MATCHERS_RULES, {"s1": "1", "t1": "1", "e": "1"}, None),
        # Source 2 itself: rule 1 targets it (t1 absent) and it is not rule 1's source: muted.
        (AM_MATCHERS_RULES, {"s2": "1", "t2": "1", "e": "1"}, ("rule1", AM_SOURCE_1)),
        (AM_MATCHERS_RULES, {"t1": "1", "e": "0"}, None),
    ],
)
def test_alertmanager_rule_matches_cases(
    rules: list[InhibitRule], target: Labels, expected: tuple[str, Labels] | None
) -> None:
    inhibitor = inhibitor_with(rules, AM_SOURCE_1, AM_SOURCE_2)
    got = inhibitor.mutes(view(target))
    assert got == (None if expected is None else Inhibition(expected[0], fp(expected[1])))


def test_alertmanager_inhibit_sequence() -> None:
    """TestInhibit: the target is muted only while the source fires."""
    legacy = InhibitRule(
        "inhibit_rules[0]",
        tuple(matchers_from_legacy({"s": "1"}, {})),
        tuple(matchers_from_legacy({"t": "1"}, {})),
        ("e",),
    )
    one, two = {"t": "1", "e": "f"}, {"s": "1", "e": "f"}
    inhibitor = inhibitor_with([legacy], one)
    assert inhibitor.mutes(view(one)) is None
    inhibitor.update(view(two))
    assert inhibitor.mutes(view(one)) == Inhibition("inhibit_rules[0]", fp(two))
    assert inhibitor.mutes(view(two)) is None
    inhibitor.update(view(two, firing=False))
    assert inhibitor.mutes(view(one)) is None
    assert inhibitor.mutes(view(two)) is None


# --- two-sided matches and self-inhibition -----------------------------------------------------

CRIT_OVER_WARN = rule("crit", 'severity="critical"', 'severity=~"critical|warning"', "node")


def _sev(name: str, severity: str, node: str = "n1") -> dict[str, str]:
    return {"alertname": name, "severity": severity, "node": node}


@pytest.mark.parametrize(
    ("sources", "target", "muted_by"),
    [
        pytest.param([_sev("A", "critical")], _sev("A", "critical"), None, id="alone-not-muted-by-itself"),
        pytest.param([_sev("A", "critical")], _sev("B", "warning"), 0, id="one-sided-target"),
        pytest.param(
            [_sev("A", "critical"), _sev("B", "critical")],
            _sev("A", "critical"),
            None,
            id="two-sided-pair-never-mute-each-other",
        ),
        pytest.param(
            [_sev("A", "critical"), _sev("B", "critical")], _sev("B", "critical"), None, id="two-sided-pair-reverse"
        ),
        pytest.param([_sev("A", "critical"), _sev("B", "critical")], _sev("C", "warning"), 0, id="pair-mutes-warning"),
        pytest.param([_sev("A", "critical", "n2")], _sev("B", "warning"), None, id="other-node"),
    ],
)
def test_two_sided_exclusion(sources: list[Labels], target: Labels, muted_by: int | None) -> None:
    got = inhibitor_with([CRIT_OVER_WARN], *sources).mutes(view(target))
    expected = None if muted_by is None else Inhibition("crit", min(fp(s) for s in sources))
    assert got == expected


def test_two_sided_target_is_muted_by_one_sided_source_only() -> None:
    """Target matches both sides; of two sources only the one matching the source side alone counts."""
    rules = [rule("r", 'tier="src"', 'role="tgt"', "node")]
    two_sided = {"tier": "src", "role": "tgt", "node": "n1", "id": "1"}
    one_sided = {"tier": "src", "node": "n1", "id": "2"}
    target = {"tier": "src", "role": "tgt", "node": "n1", "id": "3"}
    inhibitor = inhibitor_with(rules, two_sided)
    assert inhibitor.mutes(view(target)) is None
    inhibitor.update(view(one_sided))
    assert inhibitor.mutes(view(target)) == Inhibition("r", fp(one_sided))
    # A one-sided target is muted by either, the smallest fingerprint reported.
    plain = {"role": "tgt", "node": "n1"}
    assert inhibitor.mutes(view(plain)) == Inhibition("r", min(fp(two_sided), fp(one_sided)))


def test_an_alert_never_mutes_itself_even_if_its_labels_moved() -> None:
    """Same fingerprint, labels enriched differently since it was fed as a source: still not a source for itself."""
    rules = [rule("r", 'alertname="X", phase="src"', 'alertname="X", phase="tgt"')]
    inhibitor = Inhibitor(rules)
    inhibitor.update(AlertView("00000000000000aa", {"alertname": "X", "phase": "src"}, True))
    assert inhibitor.mutes(AlertView("00000000000000aa", {"alertname": "X", "phase": "tgt"}, True)) is None
    assert inhibitor.mutes(AlertView("00000000000000bb", {"alertname": "X", "phase": "tgt"}, True)) == Inhibition(
        "r", "00000000000000aa"
    )


# --- firing, resolved, remove, refresh ---------------------------------------------------------

DOWN = {"alertname": "NodeDown", "node": "n1"}
HOT = {"alertname": "GPUHighTemp", "node": "n1", "gpu": "0"}


def test_only_firing_sources_mute() -> None:
    inhibitor = Inhibitor([NODE_DOWN])
    inhibitor.update(view(DOWN, firing=False))
    assert inhibitor.mutes(view(HOT)) is None
    inhibitor.update(view(DOWN))
    assert inhibitor.mutes(view(HOT)) == Inhibition("node-down", fp(DOWN))
    inhibitor.update(view(DOWN))  # a refresh changes nothing
    assert inhibitor.mutes(view(HOT)) == Inhibition("node-down", fp(DOWN))
    inhibitor.update(view(DOWN, firing=False))
    assert inhibitor.mutes(view(HOT)) is None
    inhibitor.update(view(DOWN))  # fires again
    assert inhibitor.mutes(view(HOT)) == Inhibition("node-down", fp(DOWN))


def test_resolved_target_is_still_muted_while_source_fires() -> None:
    inhibitor = inhibitor_with([NODE_DOWN], DOWN)
    inhibitor.update(view(HOT, firing=False))
    assert inhibitor.mutes(view(HOT, firing=False)) == Inhibition("node-down", fp(DOWN))
    inhibitor.update(view(DOWN, firing=False))
    assert inhibitor.mutes(view(HOT, firing=False)) is None


def test_remove() -> None:
    second = {**DOWN, "instance": "10.0.0.1:9100"}
    inhibitor = inhibitor_with([NODE_DOWN], DOWN, second)
    inhibitor.remove(fp(DOWN))
    assert inhibitor.mutes(view(HOT)) == Inhibition("node-down", fp(second))
    inhibitor.remove(fp(second))
    assert inhibitor.mutes(view(HOT)) is None
    inhibitor.remove(fp(second))  # unknown now: ignored
    inhibitor.remove("ffffffffffffffff")
    inhibitor.update(view(DOWN))
    assert inhibitor.mutes(view(HOT)) == Inhibition("node-down", fp(DOWN))


def test_update_with_new_labels_moves_the_source() -> None:
    inhibitor = Inhibitor([NODE_DOWN])
    inhibitor.update(AlertView("00000000000000aa", {"alertname": "NodeDown", "node": "n1"}, True))
    inhibitor.update(AlertView("00000000000000aa", {"alertname": "NodeDown", "node": "n2"}, True))
    assert inhibitor.mutes(view({"alertname": "GPUHot", "node": "n1"})) is None
    assert inhibitor.mutes(view({"alertname": "GPUHot", "node": "n2"})) == Inhibition("node-down", "00000000000000aa")
    inhibitor.update(AlertView("00000000000000aa", {"alertname": "DiskFull", "node": "n2"}, True))
    assert inhibitor.mutes(view({"alertname": "GPUHot", "node": "n2"})) is None


# --- determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_reported_source_is_first_rule_then_smallest_fingerprint(seed: int) -> None:
    rules = [
        rule("gpu-only", 'alertname="GPUFellOffBus"', 'alertname=~"GPU.*"', "node"),
        rule("node", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "node"),
        rule("rack", 'alertname="RackDown"', "", "rack"),
    ]
    downs = [{"alertname": "NodeDown", "node": "n1", "rack": "r1", "instance": f"10.0.0.{i}:9100"} for i in range(6)]
    rack = {"alertname": "RackDown", "rack": "r1"}
    order = [*downs, rack]
    random.Random(seed).shuffle(order)
    inhibitor = inhibitor_with(rules, *order)
    target = view({"alertname": "GPUHighTemp", "node": "n1", "rack": "r1"})
    smallest = sorted(fp(d) for d in downs)
    assert inhibitor.mutes(target) == Inhibition("node", smallest[0])
    inhibitor.remove(smallest[0])
    assert inhibitor.mutes(target) == Inhibition("node", smallest[1])
    fell_off = {"alertname": "GPUFellOffBus", "node": "n1", "gpu": "3"}
    inhibitor.update(view(fell_off))
    assert inhibitor.mutes(target) == Inhibition("gpu-only", fp(fell_off))
    for d in downs:
        inhibitor.remove(fp(d))
    inhibitor.remove(fp(fell_off))
    assert inhibitor.mutes(target) == Inhibition("rack", fp(rack))


# --- hold-down ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"alertname": "GPUHighTemp", "severity": "warning"}, 90),
        ({"alertname": "GPUHighTemp", "severity": "critical"}, 45),
        ({"alertname": "GPUXidError", "severity": "critical"}, 45),
        ({"alertname": "DiskFull", "severity": "warning"}, 10),
        ({"alertname": "DiskFull", "severity": "info"}, None),
        ({"alertname": "NodeDown", "severity": "critical"}, None),
    ],
)
def test_hold_down_is_longest_of_matching_targets(labels: Labels, expected: float | None) -> None:
    rules = [
        rule("node", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "node", hold_down=45),
        rule("crit", 'severity="critical"', 'severity="warning"', "node", hold_down=10),
        rule("gpu-warn", 'alertname="RackDown"', 'alertname=~"GPUHighTemp", severity="warning"', hold_down=90),
    ]
    inhibitor = Inhibitor(rules)  # no sources at all: hold-down is about sources that may still come
    assert inhibitor.hold_down(view(labels)) == (None if expected is None else timedelta(seconds=expected))


def test_default_hold_down_and_validation() -> None:
    assert InhibitRule("r", (), ()).hold_down == timedelta(seconds=30)
    with pytest.raises(ValueError, match="hold_down"):
        InhibitRule("r", (), (), hold_down=timedelta(seconds=-1))
    with pytest.raises(ValueError, match="duplicate inhibit rule name 'r'"):
        Inhibitor([InhibitRule("r", (), ()), InhibitRule("r", (), ())])


# --- the GPU trap ------------------------------------------------------------------------------


def node_exporter_down(n: int) -> dict[str, str]:
    return {
        "alertname": "NodeDown",
        "instance": f"10.0.0.{n}:9100",
        "job": "node-exporter",
        "node": f"gpu-node-{n:02d}",
        "severity": "critical",
    }


def dcgm_alert(n: int, gpu: int, alertname: str = "GPUHighTemp") -> dict[str, str]:
    return {
        "alertname": alertname,
        "instance": f"10.0.0.{n}:9400",
        "job": "dcgm-exporter",
        "gpu": str(gpu),
        "Hostname": f"gpu-node-{n:02d}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "node": f"gpu-node-{n:02d}",
        "severity": "warning",
    }


def test_node_down_mutes_the_gpu_alerts_of_that_node_only() -> None:
    rules = [rule("node-down-gpu", 'alertname="NodeDown"', 'alertname=~"GPU.*|DCGM.*"', "node")]
    down7 = node_exporter_down(7)
    inhibitor = inhibitor_with(rules, down7, node_exporter_down(8))
    inhibitor.update(view(node_exporter_down(8), firing=False))
    for gpu in range(8):
        for name in ("GPUHighTemp", "GPUXidError"):
            assert inhibitor.mutes(view(dcgm_alert(7, gpu, name))) == Inhibition("node-down-gpu", fp(down7))
            assert inhibitor.mutes(view(dcgm_alert(8, gpu, name))) is None
    assert inhibitor.mutes(view(down7)) is None


def test_equal_instance_is_the_trap() -> None:
    """`equal: [instance]` never matches: node-exporter's port is 9100, dcgm-exporter's 9400."""
    rules = [rule("trap", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "instance")]
    inhibitor = inhibitor_with(rules, node_exporter_down(7))
    assert all(inhibitor.mutes(view(dcgm_alert(7, gpu))) is None for gpu in range(8))


# --- randomized comparison with the reference --------------------------------------------------

NAMES = ("NodeDown", "GPUHighTemp", "GPUXidError", "DiskFull")
LABEL_VALUES: dict[str, tuple[str | None, ...]] = {
    "alertname": (*NAMES, None),
    "node": ("gpu-node-01", "gpu-node-02", "", None),
    "severity": ("critical", "warning", None),
    "rack": ("r1", "r2", None),
    "gpu": ("0", "1", "2", None),
}
MATCHER_VALUES = {
    "alertname": (*NAMES, "GPU.*", "NodeDown|DiskFull", "GPUHighTemp|GPUXidError", "Node.*|GPUXidError", ".*", ""),
    "node": ("gpu-node-01", "gpu-node-0[12]", "", ".+"),
    "severity": ("critical", "warning", "critical|warning", ""),
    "rack": ("r1", "r.*", ""),
}
TYPES = (MatchType.EQ, MatchType.EQ, MatchType.NE, MatchType.RE, MatchType.RE, MatchType.NRE)


def random_matchers(rnd: random.Random) -> tuple[Matcher, ...]:
    matchers: list[Matcher] = []
    if rnd.random() < 0.7:  # mostly on alertname, as real rules are (and as the index keys on)
        matchers.append(Matcher("alertname", rnd.choice(TYPES), rnd.choice(MATCHER_VALUES["alertname"])))
    for _ in range(rnd.randint(0, 2)):
        name = rnd.choice(("node", "severity", "rack"))
        matchers.append(Matcher(name, rnd.choice(TYPES), rnd.choice(MATCHER_VALUES[name])))
    rnd.shuffle(matchers)
    return tuple(matchers)


def random_rules(rnd: random.Random) -> list[InhibitRule]:
    rules = []
    for i in range(rnd.randint(1, 6)):
        source = random_matchers(rnd)
        # Often reuse the source side in the target, so two-sided matches are common.
        target = (*source[: rnd.randint(0, len(source))], *random_matchers(rnd)) if rnd.random() < 0.4 else None
        equal = tuple(rnd.sample(("node", "rack", "severity", "absent"), rnd.randint(0, 2)))
        hold_down = timedelta(seconds=rnd.choice((0, 15, 30, 60, 120)))
        rules.append(InhibitRule(f"inhibit_rules[{i}]", source, target or random_matchers(rnd), equal, hold_down))
    return rules


def random_labels(rnd: random.Random) -> dict[str, str]:
    picked = {name: rnd.choice(values) for name, values in LABEL_VALUES.items()}
    return {name: value for name, value in picked.items() if value is not None}


@dataclass
class Coverage:
    muted: int = 0
    unmuted: int = 0
    decided_by_exclusion: int = 0
    later_rule: int = 0
    resolved_target_muted: int = 0
    removes: int = 0
    seen: set[str] = field(default_factory=set)


def run_scenario(seed: int, coverage: Coverage) -> None:
    rnd = random.Random(seed)
    rules = random_rules(rnd)
    inhibitor = Inhibitor(rules)
    pool = [random_labels(rnd) for _ in range(rnd.randint(5, 30))]
    firing: dict[str, Labels] = {}

    def check() -> None:
        for labels in pool:
            target = view(labels, firing=rnd.random() < 0.7)
            got = inhibitor.mutes(target)
            expected = reference_mutes(rules, firing, target)
            assert got == expected, f"seed {seed}: rules {rules}\nsources {firing}\ntarget {labels}"
            holds = [r.hold_down for r in rules if matches_all(r.target, labels)]
            assert inhibitor.hold_down(target) == max(holds, default=None), f"seed {seed}: {rules}\n{labels}"
            if expected is None:
                coverage.unmuted += 1
                if reference_muters(rules, firing, target, exclude_two_sided=False):
                    coverage.decided_by_exclusion += 1
            else:
                coverage.muted += 1
                coverage.later_rule += expected.rule != rules[0].name
                coverage.resolved_target_muted += not target.firing

    for _ in range(rnd.randint(20, 80)):
        roll = rnd.random()
        if roll < 0.7:
            labels = rnd.choice(pool)
            alert = view(labels, firing=rnd.random() < 0.8)
            inhibitor.update(alert)
            if alert.firing:
                firing[alert.fingerprint] = labels
            else:
                firing.pop(alert.fingerprint, None)
        elif roll < 0.8 and firing:
            gone = rnd.choice(sorted(firing))
            inhibitor.remove(gone)
            del firing[gone]
            coverage.removes += 1
        else:
            check()
    check()


@pytest.mark.parametrize("chunk", range(20))
def test_matches_brute_force_reference(chunk: int) -> None:
    coverage = Coverage()
    for seed in range(chunk * 50, chunk * 50 + 50):
        run_scenario(seed, coverage)
    # The generator must keep producing every interesting situation, or this test proves little.
    assert coverage.muted > 100
    assert coverage.unmuted > 100
    assert coverage.decided_by_exclusion > 0
    assert coverage.later_rule > 0
    assert coverage.resolved_target_muted > 0
    assert coverage.removes > 0


# --- against a real Alertmanager ---------------------------------------------------------------

AM_CONFIG = """\
route:
  receiver: blackhole
  group_wait: 1h
receivers:
  - name: blackhole
inhibit_rules:
  - source_matchers: [alertname="NodeDown"]
    target_matchers: [alertname=~"GPU.*"]
    equal: [node]
  - source_matchers: [severity="critical"]
    target_matchers: [severity=~"critical|warning"]
    equal: [node]
  - source_match: {alertname: RackPowerLoss}
    target_match_re: {alertname: "Node.*|GPU.*"}
    equal: [rack]
  - source_matchers: [alertname=~"GPUXidError|DiskFull", severity!="info"]
    target_matchers: ['alertname!="NodeDown"', 'gpu=~"[0-3]|"']
    equal: [node, gpu]
"""
AM_RULES = [
    rule("inhibit_rules[0]", 'alertname="NodeDown"', 'alertname=~"GPU.*"', "node"),
    rule("inhibit_rules[1]", 'severity="critical"', 'severity=~"critical|warning"', "node"),
    InhibitRule(
        "inhibit_rules[2]",
        tuple(matchers_from_legacy({"alertname": "RackPowerLoss"}, None)),
        tuple(matchers_from_legacy(None, {"alertname": "Node.*|GPU.*"})),
        ("rack",),
    ),
    rule(
        "inhibit_rules[3]",
        'alertname=~"GPUXidError|DiskFull", severity!="info"',
        'alertname!="NodeDown", gpu=~"[0-3]|"',
        "node",
        "gpu",
    ),
]


def handmade_alerts() -> list[tuple[dict[str, str], bool]]:
    """(labels, firing): the GPU trap, two-sided pairs, absent equal labels, a resolved source."""
    alerts = [(node_exporter_down(7), True), (node_exporter_down(9), False)]
    alerts += [(dcgm_alert(n, gpu), True) for n in (7, 8, 9) for gpu in (0, 5)]
    alerts += [(dcgm_alert(8, 1, "GPUXidError") | {"severity": "critical"}, True)]
    alerts += [(dcgm_alert(8, 2, "GPUXidError") | {"severity": "critical"}, True)]
    alerts += [({"alertname": "RackPowerLoss", "rack": "r2"}, True)]
    alerts += [(node_exporter_down(10) | {"rack": "r2"}, True), (dcgm_alert(10, 0) | {"rack": "r2"}, True)]
    alerts += [({"alertname": "NodeDown", "severity": "critical"}, True)]  # no node label
    alerts += [({"alertname": "GPUDriverMismatch", "severity": "warning"}, True)]  # no node label either
    return alerts


def random_alerts(seed: int, count: int) -> list[tuple[dict[str, str], bool]]:
    rnd = random.Random(seed)
    values = {
        **LABEL_VALUES,
        "alertname": (*NAMES, *NAMES, "RackPowerLoss", "GPUFellOffBus"),
        "node": (*(f"gpu-node-{n:02d}" for n in range(1, 21)), None),
        "rack": ("r1", "r2", "r3", "r4", "r5", None),
        "severity": ("critical", "warning", "info", "info", None),
    }
    alerts = []
    for i in range(count):
        picked = {name: rnd.choice(options) for name, options in values.items()}
        labels = {name: value for name, value in picked.items() if value}  # Alertmanager drops empty labels
        alerts.append((labels | {"case": f"r{i}"}, rnd.random() < 0.85))
    return alerts


def _postable(labels: Labels, firing: bool, now: datetime) -> dict[str, Any]:
    def rfc3339(at: datetime) -> str:
        return at.isoformat().replace("+00:00", "Z")

    ends = now + timedelta(hours=1) if firing else now - timedelta(minutes=1)
    return {"labels": dict(labels), "startsAt": rfc3339(now - timedelta(minutes=10)), "endsAt": rfc3339(ends)}


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[procs.Proc]:
    need(procs.ALERTMANAGER is not None, "prometheus-alertmanager is not installed (run: bash .ci/setup)")
    am = procs.start_alertmanager(tmp_path, AM_CONFIG)
    try:
        yield am
    finally:
        am.stop()


@pytest.mark.alertmanager
def test_agrees_with_real_alertmanager(alertmanager: procs.Proc) -> None:
    alerts = handmade_alerts() + random_alerts(seed=20250, count=60)
    inhibitor = Inhibitor(AM_RULES)
    firing: dict[str, Labels] = {}
    for labels, is_firing in alerts:
        inhibitor.update(view(labels, firing=is_firing))
        if is_firing:
            firing[fp(labels)] = labels
    now = datetime.now(UTC)
    response = httpx.post(f"{alertmanager.url}/api/v2/alerts", json=[_postable(*a, now) for a in alerts], timeout=10)
    assert response.status_code == 200, response.text

    def disagreements() -> list[str]:
        listed = httpx.get(f"{alertmanager.url}/api/v2/alerts", timeout=10).json()
        by_fp = {a["fingerprint"]: a for a in listed}
        problems = [] if set(by_fp) == set(firing) else [f"listed {sorted(by_fp)} != firing {sorted(firing)}"]
        for source_fp, labels in firing.items():
            am_alert = by_fp.get(source_fp)
            if am_alert is None:
                continue
            assert am_alert["labels"] == labels
            mine = inhibitor.mutes(view(labels))
            everyone = reference_muters(AM_RULES, firing, view(labels))
            first_rule = [i.source_fingerprint for i in everyone if i.rule == everyone[0].rule] if everyone else []
            am_by = am_alert["status"]["inhibitedBy"]
            # Alertmanager 0.25 reports one source of the first muting rule, picked in map order.
            if (mine is None) != (not am_by) or not set(am_by) <= set(first_rule):
                problems.append(f"{labels}: mine {mine}, alertmanager {am_by}, reference {everyone}")
            if mine is not None and mine.source_fingerprint != min(first_rule):
                problems.append(f"{labels}: mine {mine} is not the smallest of {first_rule}")
        return problems

    deadline = time.monotonic() + 15
    while (problems := disagreements()) and time.monotonic() < deadline:
        time.sleep(0.2)  # Alertmanager feeds its inhibitor asynchronously
    assert not problems, "\n".join(problems)
    muted = sum(inhibitor.mutes(view(labels)) is not None for labels in firing.values())
    assert 15 < muted < len(firing) - 15, muted  # both outcomes are well represented
