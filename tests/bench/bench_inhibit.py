"""Benchmark: inhibition engine cost per webhook batch, and its growth with rules and alerts.

Run: ``.venv/bin/python tests/bench/bench_inhibit.py``. Not collected by pytest; no thresholds.
At scale 1x: 1,000 inhibit rules, 10,000 firing alerts (1,000 nodes), batches of 100 alerts
processed as a webhook does: ``update`` each alert, then ``mutes`` and ``hold_down`` each. Scales
2x/4x/8x multiply rules, alertnames and alerts together (the cluster keeps 1,000 nodes). Results go to stdout and
``tests/bench/results/inhibit.md``.
"""

from __future__ import annotations

import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from alertrouter.fingerprints import fingerprint
from alertrouter.labels import parse_matchers
from alertrouter.model import AlertView
from alertrouter.pipeline.inhibit import Inhibitor, InhibitRule

RULES = 1_000
ALERTS = 10_000
NODES = 1_000
BATCH = 100
BATCHES = 60
GENERIC = 10  # rules whose target has no alertname equality: checked for every alert
SCALES = (1, 2, 4, 8)
GENERIC_COUNTS = (10, 20, 40, 80)
RESULTS = Path(__file__).resolve().parent / "results" / "inhibit.md"


def make_rules(scale: int, generic: int = GENERIC) -> list[InhibitRule]:
    """Rule shapes of generated per-alertname configs: mostly cause -> effect alertname on `node`,
    2% with a literal alternation target, and ``generic`` rules whose target has no alertname
    (a severity ladder per team), which every alert has to be checked against."""
    causes, effects = 50 * scale, 200 * scale
    rules = []
    for i in range(RULES * scale):
        if i < generic:
            source, target = f'alertname="Cause{i % causes}"', f'severity="warning", team="team{i % 7}"'
        elif i % 50 == 0:
            effect = i % effects
            source, target = f'alertname="Cause{i % causes}"', f'alertname=~"Effect{effect}|Effect{effect + 1}"'
        else:
            source = f'alertname="Cause{i % causes}", severity="critical"'
            target = f'alertname="Effect{(i // 5) % effects}"'
        rules.append(
            InhibitRule(
                f"inhibit_rules[{i}]",
                tuple(parse_matchers(source)),
                tuple(parse_matchers(target)),
                ("node",),
                timedelta(seconds=30 + i % 60),
            )
        )
    return rules


def make_alert(rnd: random.Random, scale: int, serial: int) -> AlertView:
    """10% node-level causes (critical), 90% per-GPU effects, on a cluster of fixed size."""
    node = f"gpu-node-{rnd.randrange(NODES):04d}"
    if rnd.random() < 0.1:
        labels = {"alertname": f"Cause{rnd.randrange(50 * scale)}", "node": node, "severity": "critical"}
    else:
        labels = {
            "alertname": f"Effect{rnd.randrange(200 * scale)}",
            "node": node,
            "gpu": str(rnd.randrange(8)),
            "severity": rnd.choice(("warning", "critical")),
            "team": f"team{rnd.randrange(7)}",
            "serial": str(serial),
        }
    return AlertView(fingerprint(labels), labels, True)


def median_us(samples: list[int], per: int) -> float:
    return statistics.median(samples) / 1_000 / per


def run(scale: int, generic: int = GENERIC) -> dict[str, float]:
    rnd = random.Random(scale)
    rules = make_rules(scale, generic)
    started = time.perf_counter_ns()
    inhibitor = Inhibitor(rules)
    build_ms = (time.perf_counter_ns() - started) / 1e6

    firing = [make_alert(rnd, scale, i) for i in range(ALERTS * scale)]
    started = time.perf_counter_ns()
    for alert in firing:
        inhibitor.update(alert)
    load_us = (time.perf_counter_ns() - started) / 1_000 / len(firing)

    serial = len(firing)
    update_ns: list[int] = []
    mutes_ns: list[int] = []
    hold_ns: list[int] = []
    muted = 0
    for _ in range(BATCHES):
        # A webhook batch: 60% refreshes, 30% new alerts, 10% resolves (each then replaced).
        batch: list[AlertView] = []
        for _ in range(BATCH):
            roll = rnd.random()
            if roll < 0.6:
                batch.append(firing[rnd.randrange(len(firing))])
            elif roll < 0.9:
                serial += 1
                batch.append(make_alert(rnd, scale, serial))
                firing.append(batch[-1])
            else:
                gone = firing.pop(rnd.randrange(len(firing)))
                batch.append(AlertView(gone.fingerprint, gone.labels, False))

        started = time.perf_counter_ns()
        for alert in batch:
            inhibitor.update(alert)
        mid = time.perf_counter_ns()
        for alert in batch:
            muted += inhibitor.mutes(alert) is not None
        end = time.perf_counter_ns()
        for alert in batch:
            inhibitor.hold_down(alert)
        hold_ns.append(time.perf_counter_ns() - end)
        update_ns.append(mid - started)
        mutes_ns.append(end - mid)

    update = median_us(update_ns, BATCH)
    mutes = median_us(mutes_ns, BATCH)
    return {
        "generic": generic,
        "rules": len(rules),
        "alerts": ALERTS * scale,
        "build_ms": build_ms,
        "load_us": load_us,
        "update_us": update,
        "mutes_us": mutes,
        "hold_us": median_us(hold_ns, BATCH),
        "total_us": update + mutes,
        "muted_pct": 100 * muted / (BATCH * BATCHES),
    }


def table(rows: list[dict[str, float]]) -> str:
    base = rows[0]["total_us"]
    lines = [
        "| scale | rules | generic rules | firing alerts | build ms | initial load µs/alert | update µs/alert "
        "| mutes µs/alert | hold_down µs/alert | update+mutes µs/alert | vs first row | muted % |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['rules'] / RULES:.0f}x | {row['rules']:,.0f} | {row['generic']:.0f} | {row['alerts']:,.0f} "
            f"| {row['build_ms']:.0f} | {row['load_us']:.1f} | {row['update_us']:.2f} | {row['mutes_us']:.2f} "
            f"| {row['hold_us']:.2f} | {row['total_us']:.2f} | {row['total_us'] / base:.2f} | {row['muted_pct']:.0f} |"
        )
    return "\n".join(lines)


def main(out: Callable[[str], object] = print) -> None:
    started = time.monotonic()
    scaled = [run(scale) for scale in SCALES]
    generic = [run(1, count) for count in GENERIC_COUNTS]
    text = "\n".join(
        [
            "# Inhibitor benchmark",
            "",
            f"Batches of {BATCH} alerts (60% refresh, 30% new, 10% resolve), median of {BATCHES} batches;"
            " `update` then `mutes` per alert, as one webhook does.",
            f"Python {sys.version.split()[0]} on {platform.machine()}, run took {time.monotonic() - started:.0f} s.",
            "",
            "## Rules, alertnames and alerts scaled together (1,000 nodes)",
            "",
            table(scaled),
            "",
            "## Generic rules (target without an alertname equality) at 1x",
            "",
            "Each is checked for every alert, as Alertmanager checks every rule: cost grows linearly in them.",
            "",
            table(generic),
            "",
        ]
    )
    out(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
