"""When a storm's candidates opened, kept sorted from pass to pass (`pipeline.openings`): its count of
those opened within a window against the same count over a plain record of every candidate, and the
storm rule (more than 5 node incidents of one alertname and region opening within 2 minutes, shipped
rules/aggregation.yml) on nodes that stop being candidates before the others come."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alertrouter.model import IncidentKind
from alertrouter.pipeline.aggregate import rolls_up
from alertrouter.pipeline.openings import Openings
from support.scenario import T0, Scenario, dcgm_labels, shipped_pipeline

KEYS = [f"gpu-node-{n:02d}" for n in range(6)]
# minutes after T0, or None: a candidate with no time of its own (it opens at each pass's now)
TIMES = st.one_of(st.none(), st.integers(min_value=0, max_value=6))
OPS = st.lists(
    st.tuples(st.sampled_from(["set", "discard", "count"]), st.sampled_from(KEYS), TIMES, st.integers(0, 8)),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_the_count_since_a_moment_is_the_count_over_every_candidate(
    ops: list[tuple[str, str, int | None, int]],
) -> None:
    openings = Openings()
    held: dict[str, int | None] = {}  # the plain record: candidate -> minute it opened
    for op, key, minute, since in ops:
        if op == "set":
            openings.set(key, None if minute is None else T0 + timedelta(minutes=minute))
            held[key] = minute
        elif op == "discard":
            openings.discard(key)
            held.pop(key, None)
        start = T0 + timedelta(minutes=since)
        expected = sum(1 for m in held.values() if m is None or T0 + timedelta(minutes=m) >= start)
        assert openings.since(start) == expected
        assert len(openings) == len(held)


def _fire(sc: Scenario, node: int, *, gpus: int = 2) -> list[dict[str, str]]:
    """Node `node`'s GPUs overheating, as dcgm-exporter labels them (scraped on the node's IP)."""
    labels = [
        dcgm_labels(
            f"10.0.3.{node}", f"gpu-node-{node:02d}", gpu, alertname="GPUHighTemp", severity="warning", region="north"
        )
        for gpu in range(gpus)
    ]
    for one in labels:
        sc.fire(one)
    return labels


def _storms(sc: Scenario) -> list[str]:
    assert sc.last is not None
    return [k for k, s in sc.last.incidents.items() if s.kind == IncidentKind.CLUSTER]


@pytest.mark.parametrize("first_resolve", [True, False])
def test_nodes_that_stopped_overheating_do_not_start_a_storm_with_later_ones(first_resolve: bool) -> None:
    """Four nodes overheat, and three of them cool down again (or not); three more overheat a minute later.
    Seven nodes within two minutes are a storm; four are not, whatever the other three did before."""
    sc = Scenario()
    early = [labels for node in range(1, 4) for labels in _fire(sc, node)]
    _fire(sc, 4)
    sc.step()
    assert _storms(sc) == []  # four are no storm
    sc.now += timedelta(seconds=30)
    if first_resolve:
        for labels in early:
            sc.resolve(labels)
    sc.step()
    sc.now += timedelta(seconds=30)
    for node in range(5, 8):
        _fire(sc, node)
    sc.step()
    assert len(_storms(sc)) == (0 if first_resolve else 1)


def _storm(opened: dict[str, datetime], now_minutes: float) -> bool:
    """Whether candidates opened at these times start a storm of the shipped GPU rule at T0 + now."""
    rollup = next(r.rollup for r in shipped_pipeline().aggregation if r.name == "gpu-by-node")
    assert rollup is not None
    openings = Openings()
    for key, at in opened.items():
        openings.set(key, at)
    now = T0 + timedelta(minutes=now_minutes)
    return rolls_up(rollup, openings.since(now - rollup.window))


def test_a_storm_needs_more_than_five_node_incidents_opened_within_two_minutes() -> None:
    five = {f"n{i}": T0 + timedelta(seconds=10 * i) for i in range(5)}
    assert not _storm(five, 1)
    six = {**five, "n5": T0 + timedelta(seconds=60)}
    assert _storm(six, 1)
    # the same six spread over ten minutes are not a storm
    assert not _storm({f"n{i}": T0 + timedelta(minutes=2 * i) for i in range(6)}, 10)
    # the window's edge: two minutes after the first opened all six count; a second later, five
    assert _storm(six, 2)
    assert not _storm(six, 2 + 1 / 60)
