"""Engine benchmark: cost of one pass after a webhook, and the 1,000-node storm in numbers.

    .venv/bin/python tests/bench/bench_engine.py [--quick]

1. Pass cost: N firing alerts (dcgm-exporter labels, 8 GPUs per node) and R inhibit rules; a webhook
   changes 100 alerts; one engine pass (the pure evaluation every stored change triggers) is timed,
   incremental (what a webhook costs: flat in the live alerts, since a pass evaluates only the
   incidents the change touches) and full (the periodic safety net: linear in the live alerts).
   Scaled 1x/2x/4x/8x (1x = 10,000 alerts and 1,000 rules); flat in the rules either way (rules are
   indexed by alertname, like Alertmanager's inhibitor cache).
2. Storm: 1,000 nodes x 8 GPUs overheat within two minutes across two regions, and a 40-node rack
   loses power (NodeDown plus its GPUs falling off the bus, GPU alerts first). Raw alerts in, messages
   intended out, on the shipped rules, over 30 simulated minutes.

Writes tests/bench/results/engine.md. No thresholds: figures are for docs/en/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from alertrouter.fingerprints import fingerprint  # noqa: E402
from alertrouter.labels import parse_matchers  # noqa: E402
from alertrouter.pipeline.evaluate import Evaluator  # noqa: E402
from alertrouter.pipeline.inhibit import InhibitRule  # noqa: E402
from alertrouter.pipeline.rules import CompiledRules  # noqa: E402
from alertrouter.pipeline.types import LiveAlert, apply_record_changes, next_records, record_changes  # noqa: E402
from support.scenario import Scenario, gpu_labels, node_down_labels, shipped_pipeline  # noqa: E402

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
RESULTS = REPO / "tests" / "bench" / "results"


def with_rules(pipeline: CompiledRules, count: int) -> CompiledRules:
    """The shipped pipeline plus `count` synthetic inhibit rules, each for its own alertname pair."""
    extra = tuple(
        InhibitRule(
            name=f"synthetic-{i}",
            source=tuple(parse_matchers(f'alertname="Source{i}"')),
            target=tuple(parse_matchers(f'alertname="Target{i}"')),
            equal=("node",),
        )
        for i in range(count)
    )
    return CompiledRules(
        nodes=pipeline.nodes,
        inhibit_rules=pipeline.inhibit_rules + extra,
        aggregation=pipeline.aggregation,
        route=pipeline.route,
        receivers=pipeline.receivers,
        severity_label=pipeline.severity_label,
        severities=pipeline.severities,
    )


def fleet(alerts: int, rules: int) -> list[LiveAlert]:
    """GPU alerts on alerts/8 nodes, plus a Source/Target pair per synthetic rule on some nodes."""
    out = []
    nodes = alerts // 8
    for n in range(nodes):
        for g in range(8):
            labels = gpu_labels(f"gpu-node-{n:04d}", g, region="north" if n % 2 else "south")
            out.append(LiveAlert(fingerprint(labels), labels, True, T0, T0 - timedelta(hours=1)))
    for i in range(rules):
        node = f"gpu-node-{i % max(nodes, 1):04d}"
        for name in (f"Source{i}", f"Target{i}"):
            labels = {"alertname": name, "node": node, "severity": "warning"}
            out.append(LiveAlert(fingerprint(labels), labels, True, T0, T0 - timedelta(hours=1)))
    return out


def pass_cost(alerts: int, rules: int, passes: int, full_passes: int) -> dict[str, float]:
    """Incremental passes (what the engine runs after a webhook) and full ones (its periodic safety net),
    each after a webhook that changed 100 alerts (50 resolve, 50 come back)."""
    evaluator = Evaluator(with_rules(shipped_pipeline(), rules))
    live = fleet(alerts, rules)
    records = next_records({}, evaluator.evaluate(live, {}, now=T0))
    # The pass after the first sees every record new (as after a restart): not what a webhook costs.
    records = next_records(records, evaluator.evaluate_changes((), (), records, now=T0))
    written: set[str] = set()
    timings: dict[bool, list[float]] = {False: [], True: []}
    evaluated: list[int] = []
    for p in range(passes + full_passes):
        full = p >= passes
        now = T0 + timedelta(seconds=5 * (p + 1))
        changed = []
        for k in range(100):
            i = (p * 100 + k) % len(live)
            a = live[i]
            live[i] = LiveAlert(a.fingerprint, a.labels, not a.firing, a.starts_at, now)
            changed.append(live[i])
        # as the engine's runner drives it: told which records the last pass wrote, applying this pass's
        # writes in place (pipeline.types.record_changes), both inside the timing
        started = time.perf_counter()
        result = evaluator.evaluate_changes(changed, (), records, now=now, full=full, records_changed=written)
        changes = record_changes(records, result)
        apply_record_changes(records, changes)
        timings[full].append(time.perf_counter() - started)
        written = changes.keys
        if not full:
            evaluated.append(len(result.evaluated))
    inc, whole = timings[False], timings[True]
    return {
        "alerts": len(live),
        "rules": rules + len(shipped_pipeline().inhibit_rules),
        "p50_ms": statistics.median(inc) * 1000,
        "max_ms": max(inc) * 1000,
        "evaluated": statistics.median(evaluated),
        "full_ms": statistics.median(whole) * 1000,
        "us_per_alert": statistics.median(whole) / len(live) * 1e6,
    }


def storm(nodes: int, rack: int) -> dict[str, object]:
    sc = Scenario()
    raw = 0
    # the rack: GPU alerts first, NodeDown 15 s later
    for n in range(rack):
        for g in range(8):
            sc.fire(
                gpu_labels(
                    f"rack-node-{n:03d}",
                    g,
                    alertname="GPUFallenOffBus",
                    severity="critical",
                    region="north",
                    rack="r12",
                )
            )
            raw += 1
    sc.step()
    sc.now += timedelta(seconds=15)
    for n in range(rack):
        sc.fire(node_down_labels(f"rack-node-{n:03d}", region="north", rack="r12"))
        raw += 1
    # the heat wave: every node's GPUs, spread over two minutes
    for n in range(nodes):
        if n % 50 == 0:
            sc.step()
            sc.now += timedelta(seconds=6)
        for g in range(8):
            sc.fire(gpu_labels(f"gpu-node-{n:04d}", g, region="north" if n % 2 else "south"))
            raw += 1
    started = time.perf_counter()
    sc.run(timedelta(minutes=30), every=timedelta(seconds=5))
    elapsed = time.perf_counter() - started
    messages = sc.messages()
    decisions = Counter(d.decision.value for d in sc.last.decisions.values()) if sc.last else Counter()
    return {
        "raw_alerts": raw,
        "messages": len(messages),
        "first_messages": Counter(m.reason.value for m in messages),
        "receivers": Counter(m.receiver for m in messages),
        "headlines": sorted({m.message.headline for m in messages}),
        "decisions": dict(decisions),
        "wall_s": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    scales = [1, 2] if args.quick else [1, 2, 4, 8]
    base_alerts, base_rules = (2_000, 200) if args.quick else (10_000, 1_000)
    lines = [
        f"Engine benchmark ({platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, quick={args.quick})",
        "",
        "| scale | live alerts | inhibit rules | incremental pass p50 ms | max ms | incidents evaluated "
        "| full pass ms | full: µs per live alert |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scale in scales:
        print(f"pass cost at {scale}x ...", flush=True)
        r = pass_cost(base_alerts * scale, base_rules * scale, passes=10 if args.quick else 30, full_passes=2)
        lines.append(
            f"| {scale}x | {r['alerts']:,} | {r['rules']:,} | {r['p50_ms']:.1f} | {r['max_ms']:.1f} "
            f"| {r['evaluated']:.0f} | {r['full_ms']:.0f} | {r['us_per_alert']:.1f} |"
        )
    print("storm ...", flush=True)
    s = storm(nodes=100 if args.quick else 1_000, rack=40)
    lines += [
        "",
        f"Storm: {s['raw_alerts']:,} raw alerts in -> {s['messages']} messages intended over 30 minutes "
        f"(reasons {dict(s['first_messages'])}, receivers {dict(s['receivers'])}); "  # type: ignore[call-overload]
        f"simulated in {s['wall_s']:.0f} s.",
        "",
        "Messages said:",
        *[f"- {h}" for h in s["headlines"]],  # type: ignore[attr-defined]
        "",
        f"Final decisions: {s['decisions']}",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("engine-quick.md" if args.quick else "engine.md")).write_text(text + "\n")


if __name__ == "__main__":
    main()
