"""Delivery benchmark: webhook in -> message at a fake DingTalk robot, through a real alertrouter process.

    .venv/bin/python tests/bench/bench_delivery.py [--quick]

1. Latency: one critical alert at a time (each a new node incident), from the webhook POST to the fake
   robot's receipt of the message, with every configured wait (group_wait, hold-down) set to zero, so
   what is measured is alertrouter's own path: ingest, engine pass, outbox, delivery, signing, HTTP.
2. Throughput: 500 incidents over 50 robots (10 each, within a robot's 20 messages a minute), from the
   first webhook to the last message received.
Both on SQLite (the embedded default). The fake robot checks signatures exactly as DingTalk does.
Results: markdown on stdout and in tests/bench/results/delivery.md. (Alertmanager has no DingTalk
channel to compare with: it would need a separate bridge, which is what alertrouter replaces.)
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e.harness import webhook, webhook_alert
from support.fakes.dingtalk import FakeDingTalk
from support.procs import start_alertrouter

BENCH_TOKEN = "bench-token-delivery-5e1f"  # a literal credential for a throwaway process (16+ characters)
ROBOTS = 50
RESULTS = Path(__file__).resolve().parent / "results"


def rules(url: str, robots: int) -> str:
    channels = "\n".join(
        f"  - {{name: r{i}, type: dingtalk, url: '{url}/robot/send', access_token: '${{T{i}}}', secret: '${{S{i}}}'}}"
        for i in range(robots)
    )
    receivers = "\n".join(f"  - {{name: rcv{i}, channels: [r{i}]}}" for i in range(robots))
    routes = "\n".join(f"    - {{matchers: ['robot=\"{i}\"'], receiver: rcv{i}}}" for i in range(robots))
    return f"""\
route:
  receiver: rcv0
  group_wait: 0s
  group_interval: 1s
  routes:
{routes}
receivers:
{receivers}
channels:
{channels}
"""


def alert(node: int, robot: int) -> dict[str, object]:
    labels = {"alertname": "NodeDown", "node": f"node-{node:05d}", "severity": "critical", "robot": str(robot)}
    start = datetime.now(UTC) - timedelta(seconds=5)
    return webhook([webhook_alert(labels, starts_at=start, annotations={"summary": "down"})])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    singles, spread = (10, 100) if args.quick else (40, 500)  # at most 11 messages per robot: within budget
    tokens = {f"tok{i}": f"SEC{i:04d}secret" for i in range(ROBOTS)}
    with tempfile.TemporaryDirectory() as tmp, FakeDingTalk(tokens) as fake:
        work = Path(tmp)
        (work / "rules").mkdir()
        (work / "rules" / "rules.yml").write_text(rules(fake.url, ROBOTS))
        env = {f"T{i}": f"tok{i}" for i in range(ROBOTS)} | {f"S{i}": tokens[f"tok{i}"] for i in range(ROBOTS)}
        env |= {"ALERTROUTER_LOG_LEVEL": "WARNING", "ALERTROUTER_BEARER_TOKEN": BENCH_TOKEN}
        proc = start_alertrouter(
            work, database_url=f"sqlite+aiosqlite:///{work / 'ar.db'}", env=env, config=work / "rules"
        )
        http = httpx.Client(base_url=proc.url, headers={"Authorization": f"Bearer {BENCH_TOKEN}"}, timeout=30)
        try:
            latencies = []
            for n in range(singles):
                before = len(fake.accepted)
                sent = time.perf_counter()
                assert http.post("/webhook/alertmanager", json=alert(n, n % ROBOTS)).status_code == 200
                while len(fake.accepted) == before:
                    time.sleep(0.002)
                latencies.append(time.perf_counter() - sent)
                time.sleep(0.3)
            base = len(fake.accepted)
            started = time.perf_counter()
            for n in range(spread):
                assert http.post("/webhook/alertmanager", json=alert(10_000 + n, n % ROBOTS)).status_code == 200
            while len(fake.accepted) < base + spread:
                time.sleep(0.01)
            elapsed = time.perf_counter() - started
        finally:
            proc.stop()
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
    lines = [
        f"Delivery benchmark ({platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, SQLite, quick={args.quick})",
        "",
        "| measure | result |",
        "|---|---|",
        f"| webhook -> robot, single critical alert, p50 ({singles} runs) "
        f"| {statistics.median(latencies) * 1000:.0f} ms |",
        f"| webhook -> robot, single critical alert, p99 | {p99 * 1000:.0f} ms |",
        f"| {spread} incidents over {ROBOTS} robots, first webhook to last message | {elapsed:.1f} s "
        f"({spread / elapsed:.0f} messages/s) |",
        f"| robots over 20 messages/min (fake's count) | {len(fake.rate.violations)} |",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "delivery.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
