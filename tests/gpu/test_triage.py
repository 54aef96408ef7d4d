"""Triage of a scope's Xid alerts: root, follow-ons, action class and verdict.

The expected facts are written from the cited sources, not read back from the data file: NVIDIA's Xid
catalog ("Resolution Bucket (Investigatory)": 94/95 "IGNORE (sympathetic)", 45 "Not Solo: IGNORE (follow
other Xid)", 154 "N/A Informational only regarding another Xid") and NVSentinel's health-events analyzer
(the same fatal Xid 5 times in 24 h on one GPU; Xid 31 twice on the same GPU; on different GPUs).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.gpu import xid
from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.triage import Reason, Rule, Triage, TriageRules, Verdict, XidAlert, triage

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
S = timedelta(seconds=1)
H = timedelta(hours=1)
DAY = timedelta(days=1)


def uuid(slot: int) -> str:
    return f"GPU-5b3c2a1e-{slot:04d}-4c6f-9f1a-8e2d7c6b5a{slot:02d}"


def alert(slot: int, code: int, at: datetime = T0, workload: str = "", node: str = "gpu-node-07") -> XidAlert:
    return XidAlert(f"{node}/{slot}/{code}/{at:%H%M%S}", uuid(slot), workload, code, at)


def shape(t: Triage) -> list[tuple[int, int, list[tuple[str, int]]]]:
    """roots as (slot, xid, [(follow-on GPU, xid)])."""
    return [(int(r.alert.gpu[-2:]), r.alert.xid, [(f.gpu[-2:], f.xid) for f in r.follow_ons]) for r in t.roots]


@pytest.mark.parametrize(
    ("code", "kind", "consequence", "investigatory"),
    [
        (13, "application", False, "WORKFLOW_XID_13"),
        (31, "application", False, "WORKFLOW_XID_31"),
        (43, "application", False, "CONTACT_SUPPORT"),
        (45, "application", True, "Solo: RESTART_FM / Not Solo: IGNORE (follow other Xid)"),
        (48, "hardware", False, "WORKFLOW_XID_48"),
        (79, "hardware", False, "CONTACT_SUPPORT"),
        (94, "hardware", True, "IGNORE (sympathetic)"),
        (95, "hardware", True, "IGNORE (sympathetic)"),
        (63, "informational", False, "IGNORE"),
        (154, "informational", True, "N/A Informational only regarding another Xid"),
        (119, "hardware", False, "INVESTIGATE_SW"),
        (5, "unknown", False, ""),  # "Unused" in the catalog
        (999, "unknown", False, ""),
    ],
)
def test_catalog_facts(code: int, kind: str, consequence: bool, investigatory: str) -> None:
    info = xid.lookup(code)
    assert (info.kind, info.consequence, info.investigatory) == (kind, consequence, investigatory)


@pytest.mark.parametrize(
    ("code", "fatal"), [(79, True), (48, True), (95, True), (13, False), (92, False), (999, False)]
)
def test_fatal_is_a_hardware_fault_that_needs_more_than_ignoring(code: int, fatal: bool) -> None:
    assert xid.lookup(code).fatal is fatal


def test_fallen_off_the_bus_then_cleanup_on_seven_others_is_one_root() -> None:
    alerts = [alert(3, 79), *(alert(g, 45, T0 + 20 * S) for g in (0, 1, 2, 4, 5, 6, 7))]
    t = triage(alerts)
    assert shape(t) == [(3, 79, [(f"{g:02d}", 45) for g in (0, 1, 2, 4, 5, 6, 7)])]
    assert (t.action, t.follow_ons, t.verdict, t.reason) == ("RESTART_BM", 7, Verdict.UNKNOWN, None)


@pytest.mark.parametrize(
    ("later", "folded"),
    [
        (timedelta(0), True),  # the same evaluation: folded
        (5 * timedelta(minutes=1), True),  # the window's edge is in
        (5 * timedelta(minutes=1) + S, False),
        (-S, False),  # a consequence before its root stays its own root
    ],
)
def test_the_follow_on_window(later: timedelta, folded: bool) -> None:
    t = triage([alert(3, 48), alert(5, 94, T0 + later)])
    assert t.action == "WORKFLOW_XID_48"
    assert shape(t) == ([(3, 48, [("05", 94)])] if folded else [(3, 48, []), (5, 94, [])])


def test_consequences_alone_stay_their_own_roots_after_the_faults() -> None:
    t = triage([alert(0, 45, T0 - H), alert(1, 154, T0 - H), alert(2, 13)])
    assert shape(t) == [(2, 13, []), (0, 45, []), (1, 154, [])]
    assert t.action == "RESTART_APP"
    assert [r.action for r in t.roots] == ["RESTART_APP", "WORKFLOW_XID_45", "XID_154"]


def test_xid_154_names_the_recovery_of_the_xid_before_it() -> None:
    t = triage([alert(2, 119), alert(2, 154, T0 + 2 * S)])
    assert shape(t) == [(2, 119, [("02", 154)])]
    assert t.action == "RESET_GPU"


def test_a_consequence_joins_the_latest_root_before_it() -> None:
    t = triage([alert(1, 79), alert(2, 48, T0 + 10 * S), alert(3, 45, T0 + 20 * S)])
    assert shape(t) == [(1, 79, []), (2, 48, [("03", 45)])]
    assert t.action == "RESTART_BM"  # the primary is the earliest fault


def test_the_catalogs_consequences_can_be_replaced() -> None:
    rules = TriageRules(consequences=frozenset({43}))
    t = triage([alert(3, 79), alert(4, 43, T0 + S), alert(5, 45, T0 + S)], rules=rules)
    assert shape(t) == [(3, 79, [("04", 43)]), (5, 45, [])]


def history(code: int, *ago: timedelta, at: datetime = T0) -> list[GpuEvent]:
    return [GpuEvent("GPUXidError", at - a, code) for a in ago]


def test_the_same_fatal_xid_five_times_in_a_day_on_one_gpu_is_hardware() -> None:
    events = {uuid(2): history(48, 20 * H, 9 * H, 3 * H, H, timedelta(0))}  # the current one among them
    t = triage([alert(2, 48)], events)
    assert t.verdict is Verdict.HARDWARE
    assert t.reason == Reason(Rule.REPEATED_FATAL, 48, 5, 5, DAY, (uuid(2),))


@pytest.mark.parametrize(
    ("events", "verdict"),
    [
        ({uuid(2): history(48, 20 * H, 9 * H, 3 * H)}, Verdict.UNKNOWN),  # four, with the current one
        ({uuid(2): history(48, 25 * H, 20 * H, 9 * H, 3 * H)}, Verdict.UNKNOWN),  # the fifth a day before
        ({uuid(2): history(48, 20 * H, 20 * H, 9 * H, 3 * H)}, Verdict.UNKNOWN),  # one start time counts once
        ({uuid(3): history(48, 20 * H, 9 * H, 3 * H, H)}, Verdict.UNKNOWN),  # another GPU's history
        ({uuid(2): history(79, 20 * H, 9 * H, 3 * H, H)}, Verdict.UNKNOWN),  # another Xid
        ({uuid(2): history(48, 23 * H, 20 * H, 9 * H, 3 * H)}, Verdict.HARDWARE),
    ],
)
def test_repetitions_count_one_xid_on_one_gpu_in_the_window(
    events: dict[str, list[GpuEvent]], verdict: Verdict
) -> None:
    assert triage([alert(2, 48)], events).verdict is verdict


def test_an_alert_that_started_days_ago_counts_from_its_start() -> None:
    started = T0 - 11 * DAY
    events = {uuid(2): history(48, 20 * H, 9 * H, 3 * H, H, at=started)}
    t = triage([alert(2, 48, started)], events)
    assert t.reason == Reason(Rule.REPEATED_FATAL, 48, 5, 5, DAY, (uuid(2),))


@pytest.mark.parametrize("code", [13, 31])
def test_xid_13_or_31_twice_on_the_same_gpu_is_hardware_run_diagnostics(code: int) -> None:
    t = triage([alert(4, code)], {uuid(4): history(code, 6 * H)})
    assert t.verdict is Verdict.HARDWARE
    assert t.reason == Reason(Rule.REPEATED_ON_GPU, code, 2, 2, DAY, (uuid(4),))


def test_xid_13_on_eight_gpus_of_one_workload_is_the_application() -> None:
    job = "training/llama-70b-pretrain"
    t = triage([alert(g, 13, T0 + g * S, workload=job) for g in range(8)])
    assert t.verdict is Verdict.APPLICATION
    assert t.reason == Reason(Rule.ACROSS_GPUS, 13, 8, 2, DAY, tuple(sorted(uuid(g) for g in range(8))), job)
    assert t.action == "RESTART_APP"
    assert len(t.roots) == 8


@pytest.mark.parametrize(
    ("alerts", "verdict"),
    [
        ([alert(0, 31, workload="a/x"), alert(1, 31, workload="a/y")], Verdict.UNKNOWN),  # two workloads
        ([alert(0, 31), alert(1, 31)], Verdict.APPLICATION),  # workload unknown: different GPUs of the scope
        ([alert(0, 31), alert(1, 13)], Verdict.UNKNOWN),  # different Xids
        ([alert(0, 79), alert(1, 79)], Verdict.UNKNOWN),  # not an application Xid
        ([alert(0, 31, T0 - 25 * H), alert(1, 31)], Verdict.UNKNOWN),  # a day apart
    ],
)
def test_application_needs_one_xid_on_different_gpus_of_one_workload(alerts: list[XidAlert], verdict: Verdict) -> None:
    assert triage(alerts).verdict is verdict


def test_hostile_an_unknown_xid_is_its_own_root_and_never_a_consequence() -> None:
    t = triage([alert(0, 79), alert(1, 4242, T0 + S)])
    assert shape(t) == [(0, 79, []), (1, 4242, [])]
    assert t.roots[1].action == "UNKNOWN"
    assert triage([alert(1, 4242)]).action == "UNKNOWN"


def test_hostile_a_missing_gpu_key_counts_towards_no_gpu() -> None:
    nameless = [XidAlert(f"fp{n}", "", "", 31, T0 + n * S) for n in range(3)]
    t = triage(nameless, {"": history(31, H)})
    assert (len(t.roots), t.verdict) == (3, Verdict.UNKNOWN)
    folded = triage([alert(3, 79), XidAlert("fp9", "", "", 45, T0 + S)])
    assert [len(r.follow_ons) for r in folded.roots] == [1]


def test_hostile_duplicates_count_once() -> None:
    a = alert(2, 48)
    again = XidAlert("err_code-series", a.gpu, "", 48, T0 + S)  # the same fault through dcgm's err_code
    t = triage([a, a, again], {uuid(2): history(48, 20 * H, 9 * H, 3 * H)})
    assert len(t.roots) == 1
    assert t.roots[0].same == (again,)
    assert t.verdict is Verdict.UNKNOWN  # 20h, 9h, 3h ago and now (twice, a second apart): four


def test_starts_within_the_burst_window_are_one_occurrence() -> None:
    events = {uuid(2): history(48, 20 * H, 9 * H, H, H - 2 * timedelta(minutes=1))}
    assert triage([alert(2, 48)], events).verdict is Verdict.UNKNOWN  # H and H-2m are one burst
    assert triage([alert(2, 48)], events, TriageRules(burst=timedelta(minutes=1))).verdict is Verdict.HARDWARE
