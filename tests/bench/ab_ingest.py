"""A/B of one ingest path: this working tree against a git revision (or against itself with other
environment variables), interleaved rounds on the same machine within minutes.

    .venv/bin/python tests/bench/ab_ingest.py --base HEAD~1 [--store sqlite|postgresql]
        [--endpoint webhook|api_v2] [--rounds 5] [--arm NAME:VAR=VALUE,VAR=VALUE ...]

This machine's speed drifts by up to 2x within an hour, so only arms measured side by side, round
after round, can be compared; a change that is not clearly ahead in most rounds is noise. The arms
run in turn first and last, round by round. Each round starts every arm on a fresh store and sends
the load of `bench_ingest.py` (8,000 GPU alerts, 4 keep-alive connections of its lean client,
payloads of 100): phase `new`, `unchanged, busy` (re-sent while the engine decides) and, after
the engine settles, `unchanged`. For each arm: the median round's alerts/s with every round's
figure, latency over all requests, and the CPU seconds the server process used per phase (against
the wall time: a server far from one busy core is waiting, on the database or on itself, rather
than computing).

`--base REV` checks REV out in a temporary git worktree and runs the server from it (PYTHONPATH),
with this tree's venv; the tree under test is the current one (uncommitted changes included).
`--arm NAME:VAR=VALUE,...` adds an arm running the current tree with extra environment (e.g.
`--arm slow-engine:ALERTROUTER_ENGINE_INTERVAL=5s`). Nothing is written but stdout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_ingest as bench

from support import pg

REPO = Path(__file__).resolve().parents[2]
PHASES = bench.PHASES


@dataclass
class Arm:
    name: str
    env: dict[str, str]
    rates: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    latencies: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    cpu: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: {p: [] for p in PHASES})
    machine: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})


def machine_busy() -> float:
    """CPU seconds all cores spent on anything but idle and iowait so far (from /proc/stat)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def parse_arm(text: str) -> Arm:
    name, _, assignments = text.partition(":")
    env = {}
    for item in filter(None, assignments.split(",")):
        var, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"--arm {text!r}: {item!r} is not VAR=VALUE")
        env[var] = value
    if not name:
        raise argparse.ArgumentTypeError(f"--arm {text!r}: no name before ':'")
    return Arm(name, env)


def worktree(stack: ExitStack, rev: str) -> Path:
    path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="alertrouter-ab-"))) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(path), rev], check=True)
    stack.callback(subprocess.run, ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False)
    return path


def run_round(arm: Arm, store: str, endpoint: str, load: bench.Load) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        busy = machine_busy()
        run = bench.run_alertrouter(Path(tmp), store, endpoint, load, name=arm.name, env=arm.env, client_check=False)
        for sample in run.samples:
            arm.cpu[sample.phase].append((sample.cpu, sample.seconds))
            arm.rates[sample.phase].append(load.alerts / sample.seconds)
            arm.latencies[sample.phase] += sample.latencies
        # The whole round's machine CPU (server, clients, database and everyone else), per round.
        arm.machine[PHASES[0]].append(machine_busy() - busy)


def report(arms: list[Arm]) -> str:
    lines = [
        "| arm | phase | alerts/s (median) | rounds | p50 ms | p99 ms | server CPU s / wall s | machine CPU s |",
        "|---|---|---:|---|---:|---:|---|---|",
    ]
    for arm in arms:
        for phase in PHASES:
            lat = sorted(arm.latencies[phase])
            rounds = ", ".join(f"{r:,.0f}" for r in arm.rates[phase])
            cpu = ", ".join(f"{c:.2f}/{w:.2f}" for c, w in arm.cpu[phase])
            machine = ", ".join(f"{m:.1f}" for m in arm.machine[phase]) or "–"
            lines.append(
                f"| {arm.name} | {phase} | {statistics.median(arm.rates[phase]):,.0f} | {rounds} | "
                f"{bench.percentile(lat, 50) * 1000:.1f} | {bench.percentile(lat, 99) * 1000:.1f} | {cpu} | {machine} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", metavar="REV", help="git revision to compare this working tree with")
    parser.add_argument("--arm", action="append", type=parse_arm, default=[], metavar="NAME:VAR=VALUE,...")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--endpoint", choices=("webhook", "api_v2"), default="webhook")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=1000, help="GPU nodes of 8 alerts each (default 1,000)")
    args = parser.parse_args()
    if args.base is None and not args.arm:
        parser.error("nothing to compare: give --base REV and/or --arm")
    if args.store == "postgresql" and (problem := pg.available()):
        parser.error(f"PostgreSQL is not usable here: {problem}")
    with ExitStack() as stack:
        arms = [Arm("this tree", {})]
        if args.base is not None:
            tree = worktree(stack, args.base)
            arms.insert(0, Arm(f"base {args.base}", {"PYTHONPATH": str(tree)}))
        arms += args.arm
        load = bench.build_load(args.nodes)
        for round_ in range(args.rounds):
            bench.progress(f"round {round_ + 1} of {args.rounds}")
            # In turn first and last: a fixed order would hand one arm whatever the previous one left
            # behind (a checkpoint, a dropped database's cleanup) every round.
            for arm in arms if round_ % 2 == 0 else arms[::-1]:
                run_round(arm, args.store, args.endpoint, load)
    print(f"\n{args.store}, {args.endpoint}, {load.alerts:,} alerts, {args.rounds} rounds\n")
    print(report(arms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
