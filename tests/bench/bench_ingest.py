"""Ingest benchmark: alertrouter on SQLite and on PostgreSQL, with a real Alertmanager as the reference.

    .venv/bin/python tests/bench/bench_ingest.py [--quick] [--rounds N]

8,000 GPU alerts (1,000 nodes x 8 GPUs, dcgm-exporter labels) in payloads of 100 alerts, sent by
4 concurrent clients, in two phases: (a) all alerts new, (b) the same payloads re-sent unchanged
(what Alertmanager does every group_interval, and Prometheus every evaluation). Systems, each a real
process on a fresh store:

- Alertmanager 0.25, `POST /api/v2/alerts` (the reference: in memory, nothing durable);
- alertrouter on SQLite and on PostgreSQL, `POST /webhook/alertmanager` (version 4 webhooks);
- alertrouter on SQLite and on PostgreSQL, `POST /api/v2/alerts` (the same bodies as Alertmanager got).

After phase (a) every alertrouter is checked to hold all alerts, through its API and by counting
rows in the database itself. Results: a markdown table on stdout and in tests/bench/results/ingest.md,
and the raw numbers in tests/bench/results/ingest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the shared support code
from alertrouter import __version__
from alertrouter.labels import fingerprint
from support import pg, procs

RESULTS = Path(__file__).resolve().parent / "results"
TOKEN = "bench-token-0d5e-7a91c3"  # a literal credential for a throwaway process
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GPUS_PER_NODE = 8
BATCH = 100
CLIENTS = 4
SETTLE_QUIET = 2.0  # seconds without an engine pass before the re-send phase
H100_PCI_BUS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
GENERATOR_URL = "http://prometheus-0.monitoring:9090/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+85&g0.tab=1"
AM_CONFIG = """\
route:
  receiver: blackhole
  group_by: [alertname, Hostname]
  group_wait: 30s
  group_interval: 5m
receivers:
  - name: blackhole
"""

T0 = time.monotonic()


def progress(message: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {message}", flush=True)


# --- the load ------------------------------------------------------------------------------------


def gpu_labels(node: int, gpu: int) -> dict[str, str]:
    host = f"gpu-node-{node:04d}"
    return {
        "alertname": "GPUHighTemp",
        "gpu": str(gpu),
        "UUID": "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{host}/{gpu}")),
        "pci_bus_id": f"00000000:{H100_PCI_BUS[gpu]}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": host,
        "instance": f"10.{node // 65536}.{node // 256 % 256}.{node % 256}:9400",
        "job": "dcgm",
        "cluster": "gpu-prod-sh1",
        "severity": "warning",
    }


def annotations(labels: dict[str, str], celsius: int) -> dict[str, str]:
    return {
        "summary": f"GPU {labels['gpu']} on {labels['Hostname']} is running hot",
        "description": f"GPU {labels['gpu']} ({labels['pci_bus_id']}) on {labels['Hostname']} has been at "
        f"{celsius}°C (threshold 85°C) for 5 minutes.",
    }


def rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Load:
    alerts: int
    webhooks: list[bytes]  # version 4 webhook bodies, BATCH alerts each
    pushes: list[bytes]  # `POST /api/v2/alerts` bodies, the same alerts in the same batches


def build_load(nodes: int) -> Load:
    now = datetime.now(UTC).replace(microsecond=0)
    ends = rfc3339(now + timedelta(hours=1))  # Prometheus style: an explicit endsAt in the future
    alerts = []
    for node in range(nodes):
        for gpu in range(GPUS_PER_NODE):
            labels = gpu_labels(node, gpu)
            starts = rfc3339(now - timedelta(minutes=10, seconds=(node * GPUS_PER_NODE + gpu) % 600))
            alerts.append((labels, annotations(labels, 86 + (node + gpu) % 9), starts))
    webhooks, pushes = [], []
    for i in range(0, len(alerts), BATCH):
        chunk = alerts[i : i + BATCH]
        hosts = sorted({labels["Hostname"] for labels, _, _ in chunk})
        group = {"alertname": "GPUHighTemp", "cluster": "gpu-prod-sh1"}
        hook = {
            "receiver": "alertrouter",
            "status": "firing",
            "alerts": [
                {
                    "status": "firing",
                    "labels": labels,
                    "annotations": ann,
                    "startsAt": starts,
                    "endsAt": "0001-01-01T00:00:00Z",
                    "generatorURL": GENERATOR_URL,
                    "fingerprint": fingerprint(labels),
                }
                for labels, ann, starts in chunk
            ],
            "groupLabels": group,
            "commonLabels": {**group, "job": "dcgm", "modelName": "NVIDIA H100 80GB HBM3", "severity": "warning"},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager-0.monitoring:9093",
            "version": "4",
            # One Alertmanager group per batch of nodes (e.g. group_by: [alertname, cluster, rack]).
            "groupKey": f'{{}}:{{alertname="GPUHighTemp", cluster="gpu-prod-sh1", rack="{hosts[0]}..{hosts[-1]}"}}',
            "truncatedAlerts": 0,
        }
        push = [
            {"labels": labels, "annotations": ann, "startsAt": starts, "endsAt": ends, "generatorURL": GENERATOR_URL}
            for labels, ann, starts in chunk
        ]
        webhooks.append(json.dumps(hook).encode())
        pushes.append(json.dumps(push).encode())
    return Load(len(alerts), webhooks, pushes)


# --- measuring -----------------------------------------------------------------------------------


@dataclass
class Row:
    system: str
    endpoint: str
    phase: str
    alerts: int
    requests: int
    rounds: int
    seconds: float  # median over the rounds
    alerts_per_s: float  # median over the rounds
    alerts_per_s_min: float
    alerts_per_s_max: float
    p50_ms: float  # of every request of every round
    p99_ms: float


@dataclass
class Sample:
    """One round of one phase on one system."""

    system: str
    endpoint: str
    phase: str
    alerts: int
    seconds: float
    latencies: list[float]


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


async def send_all(url: str, bodies: list[bytes], headers: dict[str, str]) -> tuple[float, list[float]]:
    """POST every body, CLIENTS at a time (one AsyncClient each); wall time and per-request latencies."""
    latencies: list[float] = []
    queue: Iterator[bytes] = iter(bodies)
    send_headers = {"Content-Type": "application/json", **headers}

    async def client() -> None:
        async with httpx.AsyncClient(timeout=60, headers=send_headers) as http:
            for body in queue:
                started = time.perf_counter()
                r = await http.post(url, content=body)
                latencies.append(time.perf_counter() - started)
                if r.status_code != 200:
                    raise RuntimeError(f"POST {url} answered {r.status_code}: {r.text[:500]}")

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return time.perf_counter() - started, latencies


def measure(
    system: str, endpoint: str, phase: str, url: str, bodies: list[bytes], alerts: int, headers: dict[str, str]
) -> Sample:
    seconds, latencies = asyncio.run(send_all(url, bodies, headers))
    latencies.sort()
    progress(
        f"{system:<24} {endpoint:<26} {phase:<9} {alerts} alerts / {len(bodies)} requests in {seconds:.2f}s: "
        f"{alerts / seconds:,.0f} alerts/s, p50 {percentile(latencies, 50) * 1000:.1f} ms, "
        f"p99 {percentile(latencies, 99) * 1000:.1f} ms"
    )
    return Sample(system, endpoint, phase, alerts, seconds, latencies)


def combine(samples: list[Sample]) -> list[Row]:
    """One row per system, endpoint and phase: the median round's throughput (and the range), and the
    latency percentiles of all requests of all rounds."""
    groups: dict[tuple[str, str, str], list[Sample]] = {}
    for sample in samples:
        groups.setdefault((sample.system, sample.endpoint, sample.phase), []).append(sample)
    rows = []
    for (system, endpoint, phase), group in groups.items():
        rates = sorted(s.alerts / s.seconds for s in group)
        latencies = sorted(x for s in group for x in s.latencies)
        rows.append(
            Row(
                system,
                endpoint,
                phase,
                group[0].alerts,
                len(group[0].latencies),
                len(group),
                round(statistics.median(s.seconds for s in group), 3),
                round(statistics.median(rates), 1),
                round(rates[0], 1),
                round(rates[-1], 1),
                round(percentile(latencies, 50) * 1000, 2),
                round(percentile(latencies, 99) * 1000, 2),
            )
        )
    return rows


# --- the systems ---------------------------------------------------------------------------------


def wait_settled(url: str, headers: dict[str, str], quiet: float = 2.0, limit: float = 120.0) -> float:
    """Wait until alertrouter's engine stops running passes (it has decided every alert of phase `new`):
    re-sends come a `group_interval` after the first send, not in the same second. Returns the wait."""
    started = time.monotonic()
    last, since = None, started
    while time.monotonic() - started < limit:
        text = httpx.get(url + "/metrics", headers=headers, timeout=30).text
        count = next(
            (
                line.split()[-1]
                for line in text.splitlines()
                if line.startswith("alertrouter_engine_pass_duration_seconds_count")
            ),
            "0",
        )
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit(f"engine still busy after {limit}s")


def bench_alertmanager(workdir: Path, load: Load) -> list[Sample]:
    am = procs.start_alertmanager(workdir, AM_CONFIG)
    try:
        url = am.url + "/api/v2/alerts"
        rows = [measure("alertmanager 0.25", "POST /api/v2/alerts", "new", url, load.pushes, load.alerts, {})]
        time.sleep(SETTLE_QUIET)  # the same pause alertrouter gets at least
        rows.append(measure("alertmanager 0.25", "POST /api/v2/alerts", "unchanged", url, load.pushes, load.alerts, {}))
        held = httpx.get(am.url + "/api/v2/alerts", timeout=60).json()
        progress(f"alertmanager holds {len(held)} alerts (in memory only, nothing durable)")
        return rows
    finally:
        am.stop()


@contextmanager
def fresh_store(kind: str, workdir: Path) -> Iterator[tuple[str, Callable[[], int]]]:
    """A new empty database; yields its URL and a function counting alert rows in it directly."""
    if kind == "sqlite":
        path = workdir / f"alertrouter-{uuid.uuid4().hex[:8]}.db"

        def count_sqlite() -> int:
            with sqlite3.connect(path) as conn:
                return int(conn.execute("SELECT count(*) FROM alerts").fetchone()[0])

        yield f"sqlite+aiosqlite:///{path}", count_sqlite
        return
    name = pg.create_database("alertrouter_bench")
    url = pg.url_for(name)

    async def count_pg() -> int:
        conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1), timeout=10)
        try:
            return int(await conn.fetchval("SELECT count(*) FROM alerts"))
        finally:
            await conn.close()

    try:
        yield url, lambda: asyncio.run(count_pg())
    finally:
        pg.drop_database(name)


def bench_alertrouter(workdir: Path, kind: str, endpoint: str, load: Load, notes: list[str]) -> list[Sample]:
    path, bodies = (
        ("/webhook/alertmanager", load.webhooks) if endpoint == "webhook" else ("/api/v2/alerts", load.pushes)
    )
    system = f"alertrouter ({kind})"
    with fresh_store(kind, workdir) as (database_url, count_rows):
        proc = procs.start_alertrouter(
            workdir,
            database_url=database_url,
            env={"ALERTROUTER_BEARER_TOKEN": TOKEN, "ALERTROUTER_LOG_LEVEL": "WARNING"},
        )
        try:
            url = proc.url + path
            rows = [measure(system, f"POST {path}", "new", url, bodies, load.alerts, AUTH)]
            page = httpx.get(proc.url + "/api/v1/alerts", params={"limit": 1}, headers=AUTH, timeout=60)
            total = page.json()["total"]
            in_db = count_rows()
            ok = total == in_db == load.alerts
            note = (
                f"{system} {path}: after phase new, API total {total}, rows in the database {in_db}, "
                f"expected {load.alerts}: {'every alert durably committed' if ok else 'ALERTS MISSING'}"
            )
            progress(note)
            if note not in notes:
                notes.append(note)
            if not ok:
                raise SystemExit(f"durability check failed: {note}")
            waited = wait_settled(proc.url, AUTH, quiet=SETTLE_QUIET)
            progress(f"engine settled after {waited:.1f}s")
            rows.append(measure(system, f"POST {path}", "unchanged", url, bodies, load.alerts, AUTH))
            return rows
        finally:
            proc.stop()


# --- report ----------------------------------------------------------------------------------------


async def _pg_settings() -> str:
    conn = await asyncpg.connect(pg.ADMIN_URL.replace("postgresql+asyncpg://", "postgresql://", 1), timeout=10)
    try:
        version = await conn.fetchval("SHOW server_version")
        fsync = await conn.fetchval("SHOW fsync")
        sync_commit = await conn.fetchval("SHOW synchronous_commit")
    finally:
        await conn.close()
    return f"{version}, fsync={fsync}, synchronous_commit={sync_commit}"


def environment(with_pg: bool) -> dict[str, str]:
    am_version = subprocess.run(
        [procs.ALERTMANAGER or "prometheus-alertmanager", "--version"], capture_output=True, text=True, check=False
    )
    return {
        "postgresql": asyncio.run(_pg_settings()) if with_pg else "not used",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "alertrouter": __version__,
        "alertmanager": (am_version.stdout or am_version.stderr).splitlines()[0],
        "python": platform.python_version(),
        "sqlite": f"{sqlite3.sqlite_version}, WAL, synchronous=FULL (alertrouter's default)",
        "cpus": str(os.cpu_count()),
        "machine": platform.platform(),
    }


def markdown(rows: list[Row], env: dict[str, str], load: Load, notes: list[str], skipped: list[str]) -> str:
    lines = [
        "# alertrouter ingest benchmark",
        "",
        f"{load.alerts:,} GPU alerts ({load.alerts // GPUS_PER_NODE:,} nodes x {GPUS_PER_NODE} GPUs, dcgm-exporter "
        f"labels) in {len(load.webhooks)} payloads of {BATCH}, {CLIENTS} concurrent clients; phase `new`: all "
        "alerts new, phase `unchanged`: the same payloads re-sent. Latency is per payload (request).",
        "",
        f"Each system ran {rows[0].rounds if rows else 0} times on a fresh store (rounds interleaved): alerts/s is "
        "the median round (range in brackets), latencies are over every request of every round.",
        "",
        "| system | endpoint | phase | alerts/s | (range) | p50 ms | p99 ms |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.system} | `{r.endpoint}` | {r.phase} | {r.alerts_per_s:,.0f} | "
        f"({r.alerts_per_s_min:,.0f}–{r.alerts_per_s_max:,.0f}) | {r.p50_ms:.1f} | {r.p99_ms:.1f} |"
        for r in rows
    ]
    lines += [
        "",
        "- alertrouter answers 2xx only after the commit; Alertmanager keeps alerts in memory only.",
        "- webhook `unchanged`: alertrouter recognises a payload it already committed by its digest, in memory,"
        " and answers without a database round trip (after a restart the first re-send goes to the database).",
        "- `/api/v2/alerts` `unchanged`: every payload is compared with the stored state (one read per payload),"
        " the request writes nothing (last_seen refreshes are batched in the background).",
        *(f"- {n}" for n in notes),
        *(f"- skipped: {s}" for s in skipped),
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in env.items()]
    if len(load.webhooks) < 100:
        lines.append(f"- p99 of {len(load.webhooks)} requests is close to the slowest request of the phase")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 nodes (800 alerts) instead of 1,000: a smoke test")
    parser.add_argument(
        "--rounds", type=int, default=5, help="fresh runs of every system; the median round is reported (default 5)"
    )
    args = parser.parse_args()
    nodes = 100 if args.quick else 1000

    load = build_load(nodes)
    progress(f"built {load.alerts} alerts in {len(load.webhooks)} webhooks / {len(load.pushes)} pushes of {BATCH}")
    skipped: list[str] = []
    kinds = ["sqlite"]
    if problem := pg.available():
        skipped.append(f"alertrouter on PostgreSQL: {problem}")
        progress(f"skipping PostgreSQL: {problem}")
    else:
        kinds.append("postgresql")

    samples: list[Sample] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="alertrouter-bench-") as tmp:
        workdir = Path(tmp)
        if procs.ALERTMANAGER is None:
            skipped.append("Alertmanager reference: prometheus-alertmanager is not installed (bash .ci/setup)")
        # Rounds go through every system in turn, so a slow moment of the machine is shared out.
        for number in range(1, args.rounds + 1):
            if procs.ALERTMANAGER is not None:
                progress(f"round {number}/{args.rounds}: Alertmanager reference")
                samples += bench_alertmanager(workdir, load)
            for kind in kinds:
                for endpoint in ("webhook", "api_v2"):
                    progress(f"round {number}/{args.rounds}: alertrouter on {kind}, {endpoint}, fresh database")
                    samples += bench_alertrouter(workdir, kind, endpoint, load, notes)
    rows = combine(samples)

    env = environment("postgresql" in kinds)
    report = markdown(rows, env, load, notes, skipped)
    RESULTS.mkdir(exist_ok=True)
    name = "ingest-quick" if args.quick else "ingest"
    (RESULTS / f"{name}.md").write_text(report)
    (RESULTS / f"{name}.json").write_text(
        json.dumps(
            {
                "environment": env,
                "alerts": load.alerts,
                "batch": BATCH,
                "clients": CLIENTS,
                "rounds": args.rounds,
                "rows": [asdict(r) for r in rows],
                "notes": notes,
                "skipped": skipped,
            },
            indent=2,
        )
        + "\n"
    )
    print()
    print(report)
    progress(f"wrote {RESULTS / name}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
