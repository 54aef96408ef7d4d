"""A storm's members' sums kept from pass to pass (`pipeline.tally`) against the same facts worked out from
the members themselves, after every step of random sequences of members joining, changing and leaving."""

from __future__ import annotations

from collections.abc import Set
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from alertrouter.model import AlertView
from alertrouter.pipeline.aggregate import DEFAULT_RULE, IncidentSummary, common_labels, severity_rank
from alertrouter.pipeline.incident import IncidentGroup, NodeIncident
from alertrouter.pipeline.tally import StormTally
from support.scenario import T0

KEYS = [f"gpu-node-{n:02d}" for n in range(8)]
# "disk" and "page" are not among the shipped severities: they rank alike, after the known ones
SEVERITIES = ["critical", "warning", "info", "disk", "page"]
ORDER = ("critical", "warning", "info")


def _node(key: str, spec: tuple[int, int, str, tuple[int, ...], int | None, bool, bool]) -> NodeIncident:
    """A member as an evaluation leaves it: its part (the alerts that count or are held) and when it opened."""
    region, rack, severity, gpus, first, has_part, firing = spec
    labels = {
        "alertname": "GPUHighTemp",
        "Hostname": key,
        "region": ["north", "south"][region],
        "rack": f"r{rack:02d}",
        "cluster": "train-a",
        "severity": severity,
    }
    fps = frozenset(f"{key}/{g}" for g in gpus)
    group = IncidentGroup(key=key, rule=DEFAULT_RULE, firing=int(firing))
    part = None
    if has_part:
        group.eligible.append(AlertView(f"{key}/view", labels, True))
        units = tuple(str(g) for g in sorted(gpus))
        part = IncidentSummary(key, "gpu-by-node", {"node": key}, labels, severity, fps, units, 8, len(fps))
    summary = part or IncidentSummary(key, "gpu-by-node", {"node": key}, {}, "", frozenset())
    opened = T0 + timedelta(minutes=first) if first is not None else None
    return NodeIncident(group, summary, part, "storm", opened, None)


_spec = st.tuples(
    st.integers(0, 1),
    st.integers(0, 2),
    st.sampled_from(SEVERITIES),
    st.lists(st.integers(0, 7), max_size=8, unique=True).map(tuple),
    st.none() | st.integers(0, 5),
    st.booleans(),
    st.booleans(),
)
# each step: some members join or change (a spec), leave (None), or are evaluated again unchanged ("again")
_step = st.dictionaries(st.sampled_from(KEYS), st.none() | st.just("again") | _spec, min_size=1, max_size=5)


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, min_size=1, max_size=12))
def test_the_sums_kept_between_passes_equal_those_worked_out_from_the_members(steps: list[dict[str, object]]) -> None:
    tally = StormTally()
    nodes: dict[str, NodeIncident] = {}
    specs: dict[str, tuple[int, int, str, tuple[int, ...], int | None, bool, bool]] = {}
    for step in steps:
        for key, spec in step.items():
            if spec is None:
                nodes.pop(key, None)
                specs.pop(key, None)
            elif spec == "again":
                if key in specs:
                    nodes[key] = _node(key, specs[key])  # a new object saying the same
            else:
                assert isinstance(spec, tuple)
                specs[key] = spec
                nodes[key] = _node(key, spec)
        tally.update(frozenset(nodes), nodes, touched=set(step))  # what the evaluator tells it

        members = [nodes[k] for k in sorted(nodes)]
        parts = [m.opening for m in members if m.opening is not None]
        assert tally.members == len(members)
        assert tally.nodes == len(parts)
        assert tally.units == sum(len(p.units) for p in parts)
        firing: Set[str] = frozenset().union(*(p.firing for p in parts))
        assert tally.firing == firing
        assert tally.any_firing == any(m.group.firing for m in members)
        assert tally.activated == min((m.first for m in members if m.first is not None), default=None)
        shared = common_labels(p.common_labels for p in parts)
        assert list(tally.shared().items()) == list(shared.items())
        # the worst severity; between unknown ones, the first member's
        worst = min((p.severity for p in parts), key=lambda s: severity_rank(s, ORDER), default="")
        assert tally.severity(ORDER) == worst
        assert tally.first_parts(3) == parts[:3]
        assert tally.first_opening() is next((m for m in members if m.opening is not None), None)
        assert tally.member_nodes() == members


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_step, st.booleans()), min_size=1, max_size=12))
def test_whether_a_storms_alerts_were_all_told_is_answered_as_a_whole_set_would(
    steps: list[tuple[dict[str, object], bool]],
) -> None:
    """What receivers were told are snapshots of the storm's alerts at earlier steps (more of them than
    the tally keeps up to date, and some asked about again after updates in between)."""
    tally = StormTally()
    nodes: dict[str, NodeIncident] = {}
    told: list[frozenset[str]] = [frozenset()]
    for step, tell in steps:
        for key, spec in step.items():
            if spec is None:
                nodes.pop(key, None)
            elif isinstance(spec, tuple):
                nodes[key] = _node(key, spec)
        tally.update(frozenset(nodes), nodes, touched=set(step))
        alerts = set(tally.firing)
        for was in told:
            assert (tally.firing <= was) == (alerts <= was)
        if tell:
            told.append(frozenset(tally.firing))
            assert tally.firing <= told[-1]


def test_a_storm_of_four_members_sums_what_they_say() -> None:
    """Worked by hand: three members with parts in north, rack r01 and r02, one member whose alerts all
    resolved (no part), then the critical one leaves."""
    tally = StormTally()
    specs = {
        KEYS[0]: (0, 1, "warning", (0, 1), 2, True, True),
        KEYS[1]: (0, 2, "critical", (3,), 1, True, True),
        KEYS[2]: (0, 1, "warning", (4, 5, 6), None, True, True),
        KEYS[3]: (0, 1, "critical", (), 0, False, False),
    }
    nodes = {k: _node(k, s) for k, s in specs.items()}
    tally.update(frozenset(nodes), nodes)
    assert (tally.members, tally.nodes, tally.units, len(tally.firing)) == (4, 3, 6, 6)
    assert tally.severity(ORDER) == "critical"
    assert tally.activated == T0  # the member without a part opened first
    assert dict(tally.shared()) == {"alertname": "GPUHighTemp", "region": "north", "cluster": "train-a"}

    del nodes[KEYS[1]]
    tally.update(frozenset(nodes), nodes)
    assert (tally.members, tally.nodes, tally.units, len(tally.firing)) == (3, 2, 5, 5)
    assert tally.severity(ORDER) == "warning"
    shared = {"alertname": "GPUHighTemp", "region": "north", "rack": "r01", "cluster": "train-a", "severity": "warning"}
    assert dict(tally.shared()) == shared
