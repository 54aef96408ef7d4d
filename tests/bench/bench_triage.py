"""GPU triage benchmark: what folding follow-on Xids and the `xid_action` label add to an engine pass.

    .venv/bin/python tests/bench/bench_triage.py [--quick] [--repeats N]

100,000 live alerts (12,500 nodes x 8 GPUs, dcgm-exporter labels, one alert per GPU) in two mixes:

- realistic: the shipped rules' GPU and node alerts, of which about 3% name an Xid, as in a fleet where a
  few GPUs are faulting at any time and most alerts are heat, memory, power and NVLink: one node in 40 had
  a root fault (Xid 79 fallen off the bus, 48 double-bit ECC, 119 GSP timeout, by turns) on GPU 0 with Xid
  45 on its 7 other GPUs a minute later (the follow-ons to fold), one in 20 a lone application or
  memory Xid (13, 31, 43, 63) on one GPU, one in 100 a node memory-pressure alert;
- worst case: every alert an Xid alert: every node a root on GPU 0 and Xid 45 on the 7 others.

For each mix, the triage ON (the shipped rules) and OFF (the same rules with the folding disabled and no
`xid_action` label: `triage_off`, since `gpu_triage:` has no switch for the folding): the first pass (every
alert new, as after a restart), the incremental pass after a webhook changing 100 alerts (spread over the
fleet: 50 resolve, 50 come back) and the full pass after one. ON and OFF alternate within each repeat, so
the machine's noise falls on both. Reports the median and the spread (min-max) of each, and ON's overhead
on the medians.

The garbage collector is set as `serve` sets it (`heap.settle_heap` at start, `heap.freeze_held` after a pass
that grew the live alerts and after a full pass, as the engine runner does): without that, the collections
walking the 100,000 alerts' objects, more of them with the triage's index, weigh on whichever pass they fall in.

Writes tests/bench/results/triage.md. No thresholds: figures are for docs/en/benchmarks.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from alertrouter.fingerprints import fingerprint  # noqa: E402
from alertrouter.gpu.labels import ActionLabel  # noqa: E402
from alertrouter.pipeline.evaluate import Evaluator  # noqa: E402
from alertrouter.pipeline.folding import FollowOnRules  # noqa: E402
from alertrouter.pipeline.rules import CompiledRules  # noqa: E402
from alertrouter.pipeline.types import LiveAlert, apply_record_changes, next_records, record_changes  # noqa: E402
from alertrouter.process.heap import freeze_held, settle_heap  # noqa: E402
from support.scenario import gpu_labels, shipped_pipeline  # noqa: E402

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
RESULTS = REPO / "tests" / "bench" / "results"
GPU_ALERTS = ("GPUHighTemp", "GPUMemoryNearFull", "GPUPowerNearLimit", "GPUHighUtilSustained", "GPUNVLinkCRCErrors")
ROOTS = (("GPUFallenOffBus", "79"), ("GPUXidError", "48"), ("GPUXidError", "119"))
LONE = ("13", "31", "43", "63")
Timings = dict[str, dict[str, list[float]]]  # "on"/"off" -> pass kind -> seconds
STRIDE = 997  # a prime: the changed alerts spread over the fleet, its mix of Xid and other alerts


def triage_off(pipeline: CompiledRules) -> CompiledRules:
    """The same rules without the triage: no folding, no `xid_action` label (bench only)."""
    return dataclasses.replace(
        pipeline,
        nodes=dataclasses.replace(pipeline.nodes, derive=ActionLabel("")),
        follow_ons=FollowOnRules(pipeline.follow_ons.triage, pipeline.follow_ons.hold_down, "", enabled=False),
    )


def _alert(labels: dict[str, str], started: datetime) -> LiveAlert:
    return LiveAlert(fingerprint(labels), labels, True, started, started)


def _root_node(node: str, n: int, region: str, started: datetime) -> list[LiveAlert]:
    """A root fault on GPU 0 and Xid 45 on the 7 others a minute later."""
    name, xid = ROOTS[n % len(ROOTS)]
    out = [_alert(gpu_labels(node, 0, alertname=name, severity="critical", xid=xid, region=region), started)]
    for g in range(1, 8):
        labels = gpu_labels(node, g, alertname="GPUXidError", severity="critical", xid="45", region=region)
        out.append(_alert(labels, started + timedelta(minutes=1)))
    return out


def fleet(nodes: int, worst: bool) -> list[LiveAlert]:
    """One alert per GPU of `nodes` nodes, in the mix the module docstring describes."""
    out: list[LiveAlert] = []
    started = T0 - timedelta(hours=1)
    for n in range(nodes):
        node, region = f"gpu-node-{n:05d}", "north" if n % 2 else "south"
        if worst or n % 40 == 3:
            out += _root_node(node, n, region, started)
            continue
        for g in range(8):
            if g == 5 and n % 20 == 11:
                labels = gpu_labels(node, g, alertname="GPUXidError", severity="critical", xid=LONE[n % 4])
            elif g == 7 and n % 100 == 17:
                labels = {"alertname": "NodeMemoryPressure", "instance": f"{node}:9100", "job": "node"}
                labels |= {"severity": "warning"}
            else:
                labels = gpu_labels(node, g, alertname=GPU_ALERTS[(n + g) % len(GPU_ALERTS)])
            out.append(_alert({**labels, "region": region}, started))
    return out


def _flip(live: list[LiveAlert], p: int, now: datetime) -> list[LiveAlert]:
    """The webhook: 100 alerts spread over the fleet change state (those firing resolve, the others return)."""
    changed = []
    for k in range(100):
        i = ((p * 100 + k) * STRIDE) % len(live)
        a = live[i]
        live[i] = LiveAlert(a.fingerprint, a.labels, not a.firing, a.starts_at, a.fired_at, None if a.firing else now)
        changed.append(live[i])
    return changed


def one_run(rules: CompiledRules, base: list[LiveAlert], passes: int) -> dict[str, list[float]]:
    """A fresh evaluator over `base`: its first pass, then `passes` incremental passes and one full one,
    each after a webhook, timed as bench_engine.py times them (evaluation and applying its writes)."""
    live = list(base)
    evaluator = Evaluator(rules)
    started = time.perf_counter()
    first = evaluator.evaluate(live, {}, now=T0)
    out: dict[str, list[float]] = {"first": [time.perf_counter() - started], "incremental": [], "full": []}
    freeze_held()  # the runner's: a pass that grew the live alerts past FREEZE_GROWTH
    records = next_records({}, first)
    records = next_records(records, evaluator.evaluate_changes((), (), records, now=T0))
    written: set[str] = set()
    for p in range(passes + 1):
        full = p == passes
        now = T0 + timedelta(seconds=5 * (p + 1))
        changed = _flip(live, p, now)
        started = time.perf_counter()
        result = evaluator.evaluate_changes(changed, (), records, now=now, full=full, records_changed=written)
        changes = record_changes(records, result)
        apply_record_changes(records, changes)
        out["full" if full else "incremental"].append(time.perf_counter() - started)
        if full:
            freeze_held()  # the runner's, after every full pass
        written = changes.keys
    return out


def measure(base: list[LiveAlert], repeats: int, passes: int, log: Callable[[str], None]) -> Timings:
    """ON and OFF alternating (ON first in even repeats, OFF first in odd ones)."""
    on, off = shipped_pipeline(), triage_off(shipped_pipeline())
    got: Timings = {"on": {}, "off": {}}
    for r in range(repeats):
        order = [("on", on), ("off", off)] if r % 2 == 0 else [("off", off), ("on", on)]
        for name, rules in order:
            for kind, times in one_run(rules, base, passes).items():
                got[name].setdefault(kind, []).extend(times)
        log(f"  repeat {r + 1}/{repeats} done")
    return got


def _ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.1f} ({min(times) * 1000:.1f}-{max(times) * 1000:.1f})"


def table(mix: str, base: list[LiveAlert], got: Timings) -> list[str]:
    xids = sum(1 for a in base if "xid" in a.labels)
    lines = [f"{mix}: {len(base):,} live alerts, {xids:,} of them Xid alerts ({xids / len(base):.1%})", ""]
    lines += ["| pass | triage ON ms, median (min-max) | OFF ms | ON overhead (medians) | passes each |"]
    lines += ["|---|---:|---:|---:|---:|"]
    for kind in ("first", "full", "incremental"):
        on, off = got["on"][kind], got["off"][kind]
        overhead = statistics.median(on) / statistics.median(off) - 1
        lines.append(f"| {kind} | {_ms(on)} | {_ms(off)} | {overhead:+.1%} | {len(on)} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 nodes and 2 repeats, for a smoke run")
    parser.add_argument("--repeats", type=int, default=5, help="fresh evaluators per mix and mode (default 5)")
    args = parser.parse_args()
    nodes, repeats = (1_000, 2) if args.quick else (12_500, args.repeats)
    settle_heap()
    load = os.getloadavg()
    lines = [
        f"GPU triage benchmark ({platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, quick={args.quick}, {repeats} repeats, load at start "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f})",
        "",
    ]
    for mix, worst in (("realistic", False), ("worst case", True)):
        print(f"{mix} ...", flush=True)
        base = fleet(nodes, worst)
        got = measure(base, repeats, passes=10, log=lambda s: print(s, flush=True))
        lines += table(mix, base, got)
    load = os.getloadavg()
    lines.append(f"Load at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("triage-quick.md" if args.quick else "triage.md")).write_text(text + "\n")


if __name__ == "__main__":
    main()
