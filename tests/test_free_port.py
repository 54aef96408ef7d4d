"""The test processes' ports: two pytest-xdist workers never hand out the same one."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import procs


@pytest.mark.parametrize(("worker", "low"), [("gw0", 10_000), ("gw1", 12_500)])
def test_each_worker_hands_out_ports_from_its_own_range_and_never_one_twice_in_a_row(
    monkeypatch: pytest.MonkeyPatch, worker: str, low: int
) -> None:
    monkeypatch.setattr(procs, "_WORKER", worker)
    ports = [procs.free_port() for _ in range(50)]
    assert all(low <= p < low + 2_500 for p in ports), ports
    assert len(set(ports)) == len(ports)


def test_outside_xdist_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    """From its ephemeral range, which the workers' ranges stay below."""
    monkeypatch.setattr(procs, "_WORKER", "")
    low, high = (int(n) for n in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert low <= procs.free_port() <= high
