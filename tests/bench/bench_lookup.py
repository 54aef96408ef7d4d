"""The Prometheus node lookup (`topology.prometheus`) on a big Kubernetes cluster: what a refresh costs
and how long the event loop waits meanwhile.

    .venv/bin/python tests/bench/bench_lookup.py [--nodes 10000] [--pods 10] [--refreshes 4]
    PYTHONPATH=/tmp/base .venv/bin/python tests/bench/bench_lookup.py   # another tree (git worktree add)

In-process, with `serve`'s garbage-collector settings (`heap.settle_heap`): the lookup reads the four
default series from a fake Prometheus (an httpx MockTransport) that answers as Prometheus does, from
series shaped as kube-state-metrics v2 and node-exporter expose them and Prometheus's scrape labels them:
`kube_pod_info` with a dozen labels per pod (`--pods` per node, three of them host-network daemons
whose pod IP is the node's), `kube_node_info`, `kube_node_labels` (region, zone, rack) and
`node_uname_info` (scraped by the node's IP). A query `count by (labels) (series)` is answered with
those labels alone, one series per distinct set, as Prometheus does; a bare series name with every
label. Meanwhile a coroutine asks the event loop for a 1 ms sleep again and again; every late wake-up
is a time the loop (which answers webhooks and pages in `serve`) could not run. The first refresh
takes the names in; the ones timed after it find the same answers (a lookup's every minute).

Reported per timed refresh: wall time, the process's CPU time, the loop's longest wait and its 99th
percentile; the garbage collections over them (count, time, longest, by generation); the answers'
sizes. Results: markdown on stdout and tests/bench/results/lookup.md. No thresholds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import re
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.process.heap import settle_heap
from alertrouter.ruleset.topology import PrometheusLookupConfig

RESULTS = Path(__file__).resolve().parent / "results"
SCRAPED_AT = 1764400000.123
_COUNT_BY = re.compile(r"count by \((.*)\) \((\w+)\)")


def _ip(base: int, n: int) -> str:
    v = base + n
    return f"{v >> 24}.{(v >> 16) & 255}.{(v >> 8) & 255}.{v & 255}"


def stored_series(series: str, nodes: int, pods: int) -> list[dict[str, str]]:
    """The series as Prometheus stores them (exporter labels plus `job`/`instance` of the scrape)."""
    ksm = {"job": "kube-state-metrics", "instance": "10.96.0.5:8080", "service": "kube-state-metrics"}
    node_ip = [_ip(0x0A000000, n) for n in range(nodes)]  # 10.0.0.0/8
    out: list[dict[str, str]] = []
    for n in range(nodes):
        name = f"gpu-node-{n:05d}"
        if series == "kube_pod_info":
            for p in range(pods):
                host_network = p < 3  # node-exporter, kube-proxy, the device plugin's validator
                out.append(
                    {
                        "__name__": series,
                        **ksm,
                        "namespace": "kube-system" if host_network else "gpu-jobs",
                        "pod": f"daemon-{p}-{n:05d}" if host_network else f"trainer-{n:05d}-{p}-7f9c4",
                        "uid": f"{n:08x}-{p:04x}-4c4b-9f1a-0242ac120002",
                        "host_ip": node_ip[n],
                        "pod_ip": node_ip[n] if host_network else _ip(0x0A800000, n * pods + p),  # 10.128/9
                        "node": name,
                        "created_by_kind": "DaemonSet" if host_network else "ReplicaSet",
                        "created_by_name": f"daemon-{p}" if host_network else f"trainer-{n:05d}-{p}",
                        "priority_class": "system-node-critical" if host_network else "",
                        "host_network": "true" if host_network else "false",
                    }
                )
        elif series == "kube_node_info":
            out.append(
                {
                    "__name__": series,
                    **ksm,
                    "node": name,
                    "internal_ip": node_ip[n],
                    "kernel_version": "5.15.0-105-generic",
                    "os_image": "Ubuntu 22.04.4 LTS",
                    "container_runtime_version": "containerd://1.7.12",
                    "kubelet_version": "v1.29.4",
                    "pod_cidr": f"10.244.{n % 256}.0/24",
                }
            )
        elif series == "kube_node_labels":
            out.append(
                {
                    "__name__": series,
                    **ksm,
                    "node": name,
                    "label_kubernetes_io_hostname": name,
                    "label_topology_kubernetes_io_region": f"region-{n % 4}",
                    "label_topology_kubernetes_io_zone": f"region-{n % 4}-{n % 3}",
                    "label_rack": f"r{n // 40}",
                }
            )
        elif series == "node_uname_info":
            out.append(
                {
                    "__name__": series,
                    "job": "node",
                    "instance": f"{node_ip[n]}:9100",
                    "nodename": name,
                    "domainname": "(none)",
                    "machine": "x86_64",
                    "release": "5.15.0-105-generic",
                    "sysname": "Linux",
                    "version": "#115-Ubuntu SMP",
                }
            )
    return out


class FakePrometheus:
    """Answers `GET /api/v1/query` as Prometheus would over the stored series; each answer built once."""

    def __init__(self, nodes: int, pods: int) -> None:
        self.nodes, self.pods = nodes, pods
        self.answers: dict[str, bytes] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        query = request.url.params["query"]
        if query not in self.answers:
            self.answers[query] = json.dumps(self._answer(query)).encode()
        return httpx.Response(200, content=self.answers[query])

    def _answer(self, query: str) -> dict[str, Any]:
        match = _COUNT_BY.fullmatch(query)
        series = match[2] if match else query
        stored = stored_series(series, self.nodes, self.pods)
        if match is None:
            result = [{"metric": labels, "value": [SCRAPED_AT, "1"]} for labels in stored]
        else:
            by = match[1].split(", ")
            counts: dict[tuple[tuple[str, str], ...], int] = {}
            for labels in stored:
                kept = tuple((name, labels[name]) for name in by if labels.get(name, ""))
                counts[kept] = counts.get(kept, 0) + 1
            result = [{"metric": dict(k), "value": [SCRAPED_AT, str(v)]} for k, v in counts.items()]
        return {"status": "success", "data": {"resultType": "vector", "result": result}}


class Ticker:
    """Asks the event loop for a 1 ms sleep again and again; how late each wake-up came."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self.done = False

    async def run(self) -> None:
        while not self.done:
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            self.late.append(time.perf_counter() - asked - 0.001)


class Collections:
    """Every garbage collection's generation and duration (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.done: list[tuple[int, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.done.append((info["generation"], time.perf_counter() - self._started))


async def run(nodes: int, pods: int, refreshes: int) -> str:
    settle_heap()
    fake = FakePrometheus(nodes, pods)
    config = PrometheusLookupConfig(url="http://prometheus:9090")
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake))
    lookup = PrometheusLookup(config, keep_for=timedelta(hours=1), client=client)
    print(f"building the answers and taking them in (the first refresh): {nodes:,} nodes ...", file=sys.stderr)
    await lookup.refresh()
    entries = len(lookup.resolved.entries)
    collections = Collections()
    gc.callbacks.append(collections)
    rows = []
    waits: list[float] = []
    for i in range(refreshes):
        ticker = Ticker()
        task = asyncio.create_task(ticker.run())
        await asyncio.sleep(0.01)
        wall, cpu = time.perf_counter(), time.process_time()
        await lookup.refresh()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        ticker.done = True
        await task
        late = sorted(ticker.late)
        waits += late
        p99 = late[int(len(late) * 0.99)] if late else 0.0
        rows.append((i + 1, wall, cpu, max(late, default=0.0), p99))
        print(f"refresh {i + 1}: {wall * 1000:.0f} ms, the loop waited {rows[-1][3] * 1000:.0f} ms", file=sys.stderr)
    gc.callbacks.remove(collections)
    await client.aclose()

    sizes = ", ".join(f"`{q}` {len(b) / 1e6:.1f} MB" for q, b in fake.answers.items())
    lines = [
        f"Node lookup benchmark (CPython {platform.python_version()}, {platform.machine()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC): {nodes:,} nodes, {pods} pods each, "
        f"{entries:,} names in force; answers: {sizes}",
        "",
        "| refresh | wall ms | CPU ms | loop's longest wait ms | loop's p99 wait ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {n} | {w * 1000:.0f} | {c * 1000:.0f} | {m * 1000:.0f} | {p * 1000:.1f} |" for n, w, c, m, p in rows]
    lines += ["", "| generation | collections | ms in all | longest ms |", "|---:|---:|---:|---:|"]
    for gen in range(3):
        times = [t for g, t in collections.done if g == gen]
        lines.append(f"| {gen} | {len(times)} | {sum(times) * 1000:.0f} | {max(times, default=0.0) * 1000:.0f} |")
    if waits:
        lines += [
            "",
            f"Loop wake-ups over all timed refreshes: median lateness {statistics.median(waits) * 1000:.2f} ms.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=10, help="pods per node (three of them host-network)")
    parser.add_argument("--refreshes", type=int, default=4, help="timed refreshes after the first")
    args = parser.parse_args()
    report = asyncio.run(run(args.nodes, args.pods, args.refreshes))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lookup.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
