"""Delivery benchmark: webhook in -> message at a fake DingTalk robot, through a real alertrouter process.

    .venv/bin/python tests/bench/bench_delivery.py [--quick] [--background N]

1. Latency: one critical alert at a time (each a new incident, `group_wait: 0s`), from the webhook POST
   to the fake robot's receipt of the message, so what is measured is alertrouter's own path: ingest,
   engine pass, outbox, delivery, signing, HTTP. Measured twice: on an empty store, and under a
   background of N (10,000) live firing alerts with real dcgm-exporter and node-exporter labels.
   Each run is traced from the server's DEBUG log: the waits before the engine pass (held back by
   the cadence, waiting for ingest to pause), the pass itself, and the rest of the path, so the split
   between waiting and working is visible.
2. Throughput: 500 incidents over 50 robots (10 each, within a robot's 20 messages a minute), from the
   first webhook to the last message received (before the background is loaded).
On SQLite (the embedded default), with the shipped inhibition and aggregation rules. The fake robot
checks signatures exactly as DingTalk does. Results: markdown on stdout and in
tests/bench/results/delivery.md. (Alertmanager has no DingTalk channel to compare with: it would need a
separate bridge, which is what alertrouter replaces.) About one minute with --quick, two without.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from e2e.harness import webhook, webhook_alert  # noqa: E402
from support.fakes.dingtalk import FakeDingTalk  # noqa: E402
from support.fakes.server import Received, Reply  # noqa: E402
from support.procs import Proc, start_alertrouter  # noqa: E402
from support.scenario import dcgm_labels, node_exporter_down_labels  # noqa: E402

BENCH_TOKEN = "bench-token-delivery-5e1f"  # a literal credential for a throwaway process (16+ characters)
ROBOTS = 50
RESULTS = REPO / "tests" / "bench" / "results"
PASS_LINE = re.compile(
    r"engine pass(?P<urgent> \(new firing alert\))?: held back (?P<held>[\d.]+) ms by the cadence, "
    r"(?P<paused>[\d.]+) ms for ingest to pause; took (?P<took>[\d.]+) ms, (?P<intents>\d+) intents"
)


def rules(url: str, robots: int) -> str:
    channels = "\n".join(
        f"  - {{name: r{i}, type: dingtalk, url: '{url}/robot/send', access_token: '${{T{i}}}', secret: '${{S{i}}}'}}"
        for i in range(robots)
    )
    receivers = "\n".join(f"  - {{name: rcv{i}, channels: [r{i}]}}" for i in range(robots))
    routes = "\n".join(f"    - {{matchers: ['robot=\"{i}\"'], receiver: rcv{i}}}" for i in range(robots))
    return f"""\
global:
  node_labels: [node, hostname, Hostname, nodename, kubernetes_node, instance]
route:
  receiver: rcv0
  group_wait: 0s
  group_interval: 1s
  routes:
    - {{matchers: ['job=~"dcgm-exporter|node"'], receiver: background}}
{routes}
receivers:
  - {{name: background, description: "the live background: decided, told no one"}}
{receivers}
channels:
{channels}
"""


def probe(node: int, robot: int) -> dict[str, Any]:
    """A critical alert no shipped aggregation rule takes (so the route's `group_wait: 0s` holds) and
    no background alert shares a node with."""
    labels = {"alertname": "InfiniBandPortDown", "node": f"probe-{node:05d}", "severity": "critical"}
    start = datetime.now(UTC) - timedelta(seconds=5)
    return webhook([webhook_alert(labels | {"robot": str(robot)}, starts_at=start, annotations={"summary": "down"})])


def background(count: int) -> Iterator[dict[str, Any]]:
    """`count` live firing alerts in webhooks of 100: dcgm-exporter GPU alerts, 8 per node, and one
    node-exporter NodeDown (scraped by IP) per 25 nodes, on other nodes than the GPU alerts."""
    start = datetime.now(UTC) - timedelta(hours=1)
    alerts: list[dict[str, Any]] = []
    n = 0
    while len(alerts) < count:
        ip = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
        if n % 25 == 24:
            down = {"summary": f"node-exporter on {ip} is down"}
            alerts.append(webhook_alert(node_exporter_down_labels(ip), starts_at=start, annotations=down))
        else:
            for gpu in range(min(8, count - len(alerts))):
                labels = dcgm_labels(ip, f"gpu-node-{n:05d}", gpu, alertname="GPUHighTemp", region="north")
                alerts.append(webhook_alert(labels, starts_at=start))
        n += 1
    for i in range(0, len(alerts), 100):
        yield webhook(alerts[i : i + 100])


class Robot(FakeDingTalk):
    """The fake robot, noting the wall-clock time each request arrived (for the trace)."""

    def __init__(self, tokens: dict[str, str]) -> None:
        super().__init__(tokens)
        self.arrived: list[float] = []

    def handle(self, request: Received) -> Reply:
        self.arrived.append(time.time())
        return super().handle(request)


@dataclass
class Run:
    posted: float  # wall clock
    answered: float
    arrived: float
    held: float = 0.0  # the engine pass that decided it, from the server's log (seconds)
    paused: float = 0.0
    took: float = 0.0
    pass_end: float = 0.0
    claimed: float = 0.0  # the delivery claimed, about to render, sign and send

    @property
    def total(self) -> float:
        return self.arrived - self.posted


def logged(log: Path) -> Iterator[tuple[float, str, str]]:
    """(wall-clock time, logger, message) of each line of the server's JSON log."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            yield datetime.fromisoformat(entry["ts"]).timestamp(), entry["logger"], entry["msg"]


def trace(runs: list[Run], log: Path) -> None:
    """Each run's engine pass (the first with intents logged after its webhook was posted) and the
    first delivery claimed after the webhook was posted (runs go one at a time, and the background is
    routed to no channel): the pass commits the outbox and nudges delivery before it logs its end, so
    the claim may come first. The log's times are in milliseconds."""
    passes: list[tuple[float, dict[str, float]]] = []
    claims: list[float] = []
    for at, logger, msg in logged(log):
        if logger == "alertrouter.engine.runner" and (m := PASS_LINE.match(msg)) and int(m["intents"]):
            passes.append((at, {k: float(m[k]) / 1000 for k in ("held", "paused", "took")}))
        elif logger == "alertrouter.delivery.worker" and msg.endswith(": claimed, sending"):
            claims.append(at)
    for run in runs:
        at, figures = next((at, f) for at, f in passes if at >= run.posted - 0.002)
        run.held, run.paused, run.took, run.pass_end = figures["held"], figures["paused"], figures["took"], at
        run.claimed = next(c for c in claims if c >= run.posted)


def latency(http: httpx.Client, robot: Robot, count: int, first_node: int) -> list[Run]:
    """`count` lone alerts, each sent once the previous one's message arrived and a random pause
    (0.2-1.0 s: arriving at any point of the engine's cycle, as a lone alert does) passed."""
    pauses = random.Random(first_node)
    runs = []
    for n in range(count):
        before = len(robot.accepted)
        posted = time.time()
        assert http.post("/webhook/alertmanager", json=probe(first_node + n, n % ROBOTS)).status_code == 200
        answered = time.time()
        deadline = time.monotonic() + 30
        while len(robot.accepted) == before:
            assert time.monotonic() < deadline, "no message within 30 s"
            time.sleep(0.001)
        runs.append(Run(posted, answered, robot.arrived[-1]))
        time.sleep(pauses.uniform(0.2, 1.0))
    return runs


def decided(http: httpx.Client) -> float:
    """Live alerts with a decision, from /metrics."""
    total = 0.0
    for line in http.get("/metrics").text.splitlines():
        if line.startswith("alertrouter_alert_decisions{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def load_background(http: httpx.Client, count: int, live_before: float) -> float:
    started = time.perf_counter()
    for body in background(count):
        assert http.post("/webhook/alertmanager", json=body).status_code == 200
    deadline = time.monotonic() + 120
    while decided(http) < live_before + count:
        assert time.monotonic() < deadline, "the background was not decided within 120 s"
        time.sleep(0.2)
    return time.perf_counter() - started


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rows(label: str, runs: list[Run]) -> list[str]:
    def ms(values: Sequence[float]) -> str:
        return f"{statistics.median(values) * 1000:.0f} / {pct(values, 0.99) * 1000:.0f} ms"

    totals = [r.total for r in runs]
    waits = [r.held + r.paused for r in runs]
    claim = [max(0.0, r.claimed - r.pass_end) for r in runs]
    send = [r.arrived - r.claimed for r in runs]
    return [
        f"| {label}: webhook -> robot, p50 / p99 ({len(runs)} runs) | **{ms(totals)}** |",
        f"| {label}: webhook answered (ingest committed) | {ms([r.answered - r.posted for r in runs])} |",
        f"| {label}: engine waits before the pass (cadence + ingest pause) | {ms(waits)} |",
        f"| {label}: engine pass | {ms([r.took for r in runs])} |",
        f"| {label}: end of pass -> delivery claimed (outbox expanded, claims committed; 0 if before) | {ms(claim)} |",
        f"| {label}: delivery claimed -> robot (render, sign, HTTP) | {ms(send)} |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="15 latency runs each, 100 incidents of throughput")
    parser.add_argument("--background", type=int, default=10_000, help="live alerts behind the second series")
    parser.add_argument("--log", type=Path, help="keep the server's log (JSON lines, DEBUG) here")
    args = parser.parse_args()
    singles, spread = (15, 100) if args.quick else (40, 500)  # at most 12 messages per robot a minute: within budget
    tokens = {f"tok{i}": f"SEC{i:04d}secret" for i in range(ROBOTS)}
    with tempfile.TemporaryDirectory() as tmp, Robot(tokens) as robot:
        work = Path(tmp)
        (work / "rules").mkdir()
        for shipped in ("inhibit.yml", "aggregation.yml"):
            shutil.copy(REPO / "rules" / shipped, work / "rules" / shipped)
        (work / "rules" / "bench.yml").write_text(rules(robot.url, ROBOTS))
        env = {f"T{i}": f"tok{i}" for i in range(ROBOTS)} | {f"S{i}": tokens[f"tok{i}"] for i in range(ROBOTS)}
        env |= {"ALERTROUTER_LOG_LEVEL": "DEBUG", "ALERTROUTER_LOG_FORMAT": "json"}
        env |= {"ALERTROUTER_BEARER_TOKEN": BENCH_TOKEN}
        proc: Proc = start_alertrouter(
            work, database_url=f"sqlite+aiosqlite:///{work / 'ar.db'}", env=env, config=work / "rules"
        )
        http = httpx.Client(base_url=proc.url, headers={"Authorization": f"Bearer {BENCH_TOKEN}"}, timeout=30)
        try:
            empty = latency(http, robot, singles, 0)
            base = len(robot.accepted)
            started = time.perf_counter()
            for n in range(spread):
                assert http.post("/webhook/alertmanager", json=probe(10_000 + n, n % ROBOTS)).status_code == 200
            while len(robot.accepted) < base + spread:
                time.sleep(0.01)
            elapsed = time.perf_counter() - started
            loaded = load_background(http, args.background, decided(http))
            time.sleep(3)  # the first run does not follow the background's own last pass (measured above)
            busy = latency(http, robot, singles, 20_000)
        finally:
            proc.stop()
        trace(empty + busy, proc.log)
        if args.log is not None:
            shutil.copy(proc.log, args.log)
    lines = [
        f"Delivery benchmark ({platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, SQLite, quick={args.quick}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        "| measure | p50 / p99 |",
        "|---|---|",
        *rows("empty store", empty),
        *rows(f"{args.background:,} live alerts", busy),
        "",
        "| measure | result |",
        "|---|---|",
        f"| {spread} incidents over {ROBOTS} robots, first webhook to last message | {elapsed:.1f} s "
        f"({spread / elapsed:.0f} messages/s) |",
        f"| robots over 20 messages/min (fake's count) | {len(robot.rate.violations)} |",
        f"| {args.background:,} background alerts stored and decided | {loaded:.1f} s |",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "delivery.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
