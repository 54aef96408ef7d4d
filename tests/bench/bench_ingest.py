"""Ingest benchmark: alertrouter on SQLite and on PostgreSQL, with a real Alertmanager as the reference.

    .venv/bin/python tests/bench/bench_ingest.py [--quick] [--rounds N] [--store sqlite|postgresql] [--profile]

8,000 GPU alerts (1,000 nodes x 8 GPUs, dcgm-exporter labels) in payloads of 100 alerts, sent by a
lean load generator (`LeanClient`: 4 keep-alive connections, one thread each, pre-encoded bodies,
`http.client`) in three phases: `new` (all alerts new), `unchanged, busy` (the same payloads re-sent
while alertrouter's engine decides the new ones) and `unchanged` (re-sent once it has settled: what
Alertmanager does every group_interval, and Prometheus every evaluation). Systems, each a real
process on a fresh store, rounds interleaved:

- Alertmanager 0.25, `POST /api/v2/alerts` (the reference: in memory, nothing durable);
- alertrouter on SQLite and on PostgreSQL, `POST /webhook/alertmanager` (version 4 webhooks);
- alertrouter on SQLite and on PostgreSQL, `POST /api/v2/alerts` (the same bodies as Alertmanager got).

alertrouter runs the code of the tree this file is in. After phase `new` every alertrouter is checked
to hold all alerts, through its API and by counting rows in the database itself. After phase
`unchanged`, the client-speed check sends the same re-sends from the lean client and from Debian's
`wrk` (C) for the same time: if wrk measures more, the lean client was the bottleneck. `--profile`
adds one server per store and endpoint under cProfile (profiling/sitecustomize.py) and reports where
its event loop's CPU goes. Results: a markdown table on stdout and in tests/bench/results/ingest.md,
and the raw numbers in tests/bench/results/ingest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import json
import math
import os
import platform
import pstats
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
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
from alertrouter.fingerprints import fingerprint
from support import pg, procs

RESULTS = Path(__file__).resolve().parent / "results"
PROFILING = Path(__file__).resolve().parent / "profiling"  # the server-side profiler (sitecustomize.py)
TOKEN = "bench-token-0d5e-7a91c3"  # a literal credential for a throwaway process
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GPUS_PER_NODE = 8
BATCH = 100
CLIENTS = 4
SETTLE_QUIET = 2.0  # seconds without an engine pass before the re-send phase
WRK = shutil.which("wrk")
WRK_SECONDS = 2.0  # each of lean, wrk, lean in the client-speed check
BUSY_DELAY = 0.3  # seconds between phase `new` and the re-send while the engine decides
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


def alert_annotations(labels: dict[str, str], celsius: int) -> dict[str, str]:
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
            alerts.append((labels, alert_annotations(labels, 86 + (node + gpu) % 9), starts))
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
    cpu_us_per_alert: float  # the server's CPU time per alert (median round)
    main_us_per_alert: float  # ... of its main thread


@dataclass
class Sample:
    """One round of one phase on one system."""

    system: str
    endpoint: str
    phase: str
    alerts: int
    seconds: float
    latencies: list[float]
    cpu: float  # CPU seconds the server process used during the phase
    cpu_main: float  # ... of which its main thread (alertrouter's event loop; Alertmanager's is Go: all threads)


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


class LeanClient:
    """The load generator: `connections` keep-alive HTTP/1.1 connections, one thread each, posting
    pre-encoded bodies with `http.client` (no client library on the hot path: a request is one
    `send` of headers and body and one response read, about 100 µs of Python, most of it with the
    GIL released). Connections are opened before the clock starts."""

    def __init__(self, url: str, headers: dict[str, str], connections: int = CLIENTS) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path
        self.headers = {"Content-Type": "application/json", **headers}
        self.connections = connections

    def _connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        conn.connect()
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def post_all(self, bodies: list[bytes]) -> tuple[float, list[float]]:
        """POST every body once, `connections` at a time; wall time and per-request latencies."""
        seconds, latencies = self._run(bodies, None)
        return seconds, latencies

    def post_for(self, bodies: list[bytes], seconds: float) -> tuple[int, float]:
        """POST the bodies round and round for `seconds` (as wrk does); requests answered and wall time."""
        took, latencies = self._run(bodies, seconds)
        return len(latencies), took

    def _run(self, bodies: list[bytes], duration: float | None) -> tuple[float, list[float]]:
        conns = [self._connect() for _ in range(self.connections)]
        queue: Iterator[bytes] = iter(bodies) if duration is None else itertools.cycle(bodies)
        lock = threading.Lock()
        latencies: list[float] = []
        failures: list[str] = []
        start = threading.Barrier(self.connections + 1)
        until = math.inf

        def worker(conn: http.client.HTTPConnection) -> None:
            start.wait()
            while not failures and time.perf_counter() < until:
                with lock:
                    body = next(queue, None)
                if body is None:
                    return
                sent = time.perf_counter()
                try:
                    conn.request("POST", self.path, body, self.headers)
                    response = conn.getresponse()
                    answer = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    failures.append(f"POST {self.path}: {exc!r}")
                    return
                latencies.append(time.perf_counter() - sent)
                if response.status != 200:
                    failures.append(f"POST {self.path} answered {response.status}: {answer[:500]!r}")

        threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in conns]
        for thread in threads:
            thread.start()
        began = time.perf_counter()
        if duration is not None:
            until = began + duration
        start.wait()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
        for conn in conns:
            conn.close()
        if failures:
            raise RuntimeError(failures[0])
        return seconds, latencies


WRK_SCRIPT = """\
-- Cycles through pre-built request bodies (one JSON document per line of args[1]), each thread
-- starting at its own offset; args[2] is an optional Authorization header.
local counter = 0
function setup(thread)
  thread:set("offset", counter)
  counter = counter + 1
end
function init(args)
  local headers = {["Content-Type"] = "application/json"}
  if args[2] and args[2] ~= "" then headers["Authorization"] = args[2] end
  requests = {}
  for line in io.lines(args[1]) do requests[#requests + 1] = wrk.format("POST", nil, headers, line) end
  next_index = (offset * 7) % #requests
end
function request()
  next_index = next_index % #requests + 1
  return requests[next_index]
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("wrk-result %d %d %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    e.status, e.connect, e.read + e.write, e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass
class WrkResult:
    requests: int
    seconds: float
    errors: int  # non-2xx answers, connect, read/write errors and timeouts
    p50_ms: float
    p99_ms: float


def wrk(url: str, bodies: list[bytes], headers: dict[str, str], workdir: Path, seconds: float) -> WrkResult:
    """Debian's `wrk` (C, epoll) posting `bodies` round and round for `seconds` over CLIENTS connections
    (one thread each): the faster client of the client-speed check."""
    script, lines = workdir / "bodies.lua", workdir / "bodies.jsonl"
    script.write_text(WRK_SCRIPT)
    lines.write_bytes(b"\n".join(bodies) + b"\n")  # json.dumps puts no raw newline in a body
    if WRK is None:
        raise RuntimeError("wrk is not installed (apt-get install -y wrk)")
    command = [WRK, f"-t{CLIENTS}", f"-c{CLIENTS}", f"-d{round(seconds)}s", "--timeout", "30s", "-s", str(script), url]
    command += ["--", str(lines), headers.get("Authorization", "")]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    fields = next(line for line in out.splitlines() if line.startswith("wrk-result")).split()[1:]
    requests, micros, status, connect, rw, timeout, p50, p99 = (int(f) for f in fields)
    return WrkResult(requests, micros / 1e6, status + connect + rw + timeout, p50 / 1000, p99 / 1000)


def process_cpu(pid: int, *, thread: int | None = None) -> float:
    """User plus system CPU seconds of a process (all its threads) so far, or of one of its threads
    (the main thread's id is the process's), from /proc; 0 once it is gone."""
    path = Path(f"/proc/{pid}/stat") if thread is None else Path(f"/proc/{pid}/task/{thread}/stat")
    try:
        fields = path.read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    system: str,
    endpoint: str,
    phase: str,
    url: str,
    bodies: list[bytes],
    alerts: int,
    headers: dict[str, str],
    pid: int,
) -> Sample:
    client = LeanClient(url, headers)
    cpu, main = process_cpu(pid), process_cpu(pid, thread=pid)
    seconds, latencies = client.post_all(bodies)
    cpu, main = process_cpu(pid) - cpu, process_cpu(pid, thread=pid) - main
    latencies.sort()
    progress(
        f"{system:<24} {endpoint:<26} {phase:<16} {alerts} alerts / {len(bodies)} requests in {seconds:.2f}s: "
        f"{alerts / seconds:,.0f} alerts/s, p50 {percentile(latencies, 50) * 1000:.1f} ms, "
        f"p99 {percentile(latencies, 99) * 1000:.1f} ms, server CPU {cpu:.2f}s ({main:.2f}s main thread)"
    )
    return Sample(system, endpoint, phase, alerts, seconds, latencies, cpu, main)


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
                round(statistics.median(s.cpu for s in group) / group[0].alerts * 1e6, 1),
                round(statistics.median(s.cpu_main for s in group) / group[0].alerts * 1e6, 1),
            )
        )
    return rows


# --- the systems ---------------------------------------------------------------------------------


def engine_passes(url: str, headers: dict[str, str]) -> tuple[int, float]:
    """alertrouter's engine passes finished so far, and the seconds they took (from /metrics)."""
    text = httpx.get(url + "/metrics", headers=headers, timeout=30).text
    values = {
        line.split()[0]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("alertrouter_engine_pass_duration_seconds_")
    }
    return (
        int(values.get("alertrouter_engine_pass_duration_seconds_count", 0)),
        values.get("alertrouter_engine_pass_duration_seconds_sum", 0.0),
    )


def wait_settled(url: str, headers: dict[str, str], quiet: float = 2.0, limit: float = 120.0) -> float:
    """Wait until alertrouter's engine stops running passes (it has decided every alert of phase `new`):
    re-sends come a `group_interval` after the first send, not in the same second. Returns the wait."""
    started = time.monotonic()
    last, since = -1, started
    while time.monotonic() - started < limit:
        count, _ = engine_passes(url, headers)
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit(f"engine still busy after {limit}s")


@dataclass
class Check:
    """The client-speed check of one round: the same re-sends for the same time from the lean client
    (before and after) and from wrk (between), in steady state."""

    system: str
    endpoint: str
    lean: float  # alerts/s, the mean of the two lean runs
    wrk: float
    wrk_errors: int


def wrk_check(
    system: str, endpoint: str, url: str, bodies: list[bytes], headers: dict[str, str], alerts: int, workdir: Path
) -> Check | None:
    if WRK is None:
        return None
    per_request = alerts / len(bodies)
    lean = LeanClient(url, headers)
    before, before_s = lean.post_for(bodies, WRK_SECONDS)
    result = wrk(url, bodies, headers, workdir, WRK_SECONDS)
    after, after_s = lean.post_for(bodies, WRK_SECONDS)
    lean_rate = (before + after) * per_request / (before_s + after_s)
    rate = result.requests * per_request / result.seconds
    progress(
        f"{system:<24} {endpoint:<26} client check: lean {lean_rate:,.0f} alerts/s, wrk {rate:,.0f} alerts/s "
        f"(p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, errors {result.errors})"
    )
    return Check(system, endpoint, lean_rate, rate, result.errors)


def bench_alertmanager(workdir: Path, load: Load, checks: list[Check]) -> list[Sample]:
    am = procs.start_alertmanager(workdir, AM_CONFIG)
    system, endpoint = "alertmanager 0.25", "POST /api/v2/alerts"
    try:
        url = am.url + "/api/v2/alerts"
        pid = am.popen.pid
        rows = [measure(system, endpoint, "new", url, load.pushes, load.alerts, {}, pid)]
        time.sleep(SETTLE_QUIET)  # the same pause alertrouter gets at least
        rows.append(measure(system, endpoint, "unchanged", url, load.pushes, load.alerts, {}, pid))
        if (check := wrk_check(system, endpoint, url, load.pushes, {}, load.alerts, workdir)) is not None:
            checks.append(check)
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


PHASES = ("new", "unchanged, busy", "unchanged")


@dataclass
class Run:
    """What one alertrouter server gave in one round."""

    samples: list[Sample]
    durable: str  # the durability check's finding
    check: Check | None
    profiles: dict[str, Path]  # phase -> cProfile stats, with --profile


@contextmanager
def profiled(proc: procs.Proc, profile_dir: Path | None, name: str, into: dict[str, Path]) -> Iterator[None]:
    """A cProfile of the server's main thread while the body runs (see profiling/sitecustomize.py)."""
    if profile_dir is None:
        yield
        return
    dump = profile_dir / "profile.prof"
    dump.unlink(missing_ok=True)
    proc.popen.send_signal(signal.SIGUSR1)
    time.sleep(0.1)  # the handler runs at the event loop's next wake-up
    yield
    proc.popen.send_signal(signal.SIGUSR2)
    deadline = time.monotonic() + 60
    while not dump.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no profile from the server in {profile_dir}")
        time.sleep(0.05)
    target = profile_dir / f"{len(into):02d}-{name.replace(', ', '-')}.prof"
    dump.rename(target)
    into[name] = target


def run_alertrouter(
    workdir: Path,
    kind: str,
    endpoint: str,
    load: Load,
    *,
    name: str | None = None,
    env: dict[str, str] | None = None,
    profile_dir: Path | None = None,
    client_check: bool = True,
) -> Run:
    """One fresh store and server: phase `new`, a re-send while the engine decides (`unchanged, busy`),
    the durability check, the wait for the engine to settle, phase `unchanged`, and the client check."""
    path, bodies = (
        ("/webhook/alertmanager", load.webhooks) if endpoint == "webhook" else ("/api/v2/alerts", load.pushes)
    )
    system = name or f"alertrouter ({kind})"
    # The server runs the code of the tree this file is in (not whatever the venv has installed) unless told.
    server_env = {
        "ALERTROUTER_BEARER_TOKEN": TOKEN,
        "ALERTROUTER_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(procs.REPO),
        **(env or {}),
    }
    if profile_dir is not None:
        server_env["BENCH_PROFILE_DIR"] = str(profile_dir)
        server_env["PYTHONPATH"] = os.pathsep.join([str(PROFILING), server_env["PYTHONPATH"]])
    profiles: dict[str, Path] = {}
    with fresh_store(kind, workdir) as (database_url, count_rows):
        proc = procs.start_alertrouter(workdir, database_url=database_url, env=server_env)
        pid = proc.popen.pid
        try:
            url = proc.url + path

            def phase(name: str) -> Sample:
                with profiled(proc, profile_dir, name, profiles):
                    return measure(system, f"POST {path}", name, url, bodies, load.alerts, AUTH, pid)

            samples = [phase("new")]
            # The re-send of the 0.38x: a moment after the new alerts, while the engine decides them
            # (it starts a pass once the ingest pauses for 50 ms; over 8,000 new alerts a pass takes seconds).
            time.sleep(BUSY_DELAY)
            passes, busy = engine_passes(proc.url, AUTH)
            samples.append(phase("unchanged, busy"))
            passes_after, busy_after = engine_passes(proc.url, AUTH)
            progress(f"engine passes finished during it: {passes_after - passes} ({busy_after - busy:.2f}s)")
            page = httpx.get(proc.url + "/api/v1/alerts", params={"limit": 1}, headers=AUTH, timeout=60)
            total = page.json()["total"]
            in_db = count_rows()
            ok = total == in_db == load.alerts
            durable = (
                f"{system} {path}: after phase new, API total {total}, rows in the database {in_db}, "
                f"expected {load.alerts}: {'every alert durably committed' if ok else 'ALERTS MISSING'}"
            )
            progress(durable)
            if not ok:
                raise SystemExit(f"durability check failed: {durable}")
            waited = wait_settled(proc.url, AUTH, quiet=SETTLE_QUIET)
            progress(f"engine settled after {waited:.1f}s")
            samples.append(phase("unchanged"))
            check = (
                None
                if profile_dir or not client_check
                else wrk_check(system, f"POST {path}", url, bodies, AUTH, load.alerts, workdir)
            )
            return Run(samples, durable, check, profiles)
        finally:
            proc.stop()


# --- the profile -----------------------------------------------------------------------------------

# Where a profiled function's own time is counted: the first rule whose text is in its file's path.
AREAS = (
    ("alertrouter/ingest/payloads.py", "validation (ingest/payloads, limits)"),
    ("alertrouter/ingest/limits.py", "validation (ingest/payloads, limits)"),
    ("pydantic", "validation (ingest/payloads, limits)"),
    ("alertrouter/fingerprints.py", "fingerprints (fingerprints.py)"),
    ("alertrouter/ingest/plan.py", "state comparison (ingest/plan)"),
    ("alertrouter/ingest/", "writer (ingest/writer, touches)"),
    ("alertrouter/store/", "store statements (store/bulk, alerts)"),
    ("sqlalchemy", "SQLAlchemy"),
    ("asyncpg", "database driver (asyncpg, aiosqlite)"),
    ("aiosqlite", "database driver (asyncpg, aiosqlite)"),
    ("sqlite3", "database driver (asyncpg, aiosqlite)"),
    ("alertrouter/web/", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("fastapi", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("starlette", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("uvicorn", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("httptools", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("h11", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("prometheus_client", "HTTP edge (FastAPI, Starlette, uvicorn, httptools)"),
    ("alertrouter/engine/", "engine pass (engine, pipeline, delivery)"),
    ("alertrouter/pipeline/", "engine pass (engine, pipeline, delivery)"),
    ("alertrouter/delivery/", "engine pass (engine, pipeline, delivery)"),
    ("asyncio", "event loop (asyncio)"),
    ("selectors", "event loop (asyncio)"),
    ("pstats", "other Python"),
)


def area(filename: str) -> str:
    for needle, name in AREAS:
        if needle in filename:
            return name
    return "other Python" if filename != "~" else "built-ins called by built-ins"


@dataclass
class Profile:
    phase: str
    alerts: int
    areas: dict[str, float]  # area -> own seconds
    top: list[tuple[str, float, float]]  # (function, own seconds, cumulative seconds)


def read_profile(phase: str, path: Path, alerts: int) -> Profile:
    stats = pstats.Stats(str(path))
    areas: dict[str, float] = {}
    top = []
    for (filename, line, function), (_cc, _nc, own, cumulative, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if filename != "~":
            areas[area(filename)] = areas.get(area(filename), 0.0) + own
        else:  # a built-in (len, orjson, hashlib, datetime, int.from_bytes...) counts for the code calling it
            for (caller_file, _line, _function), (_ncalls, _pcalls, caller_own, _cum) in callers.items():
                areas[area(caller_file)] = areas.get(area(caller_file), 0.0) + caller_own
        where = filename.split("site-packages/")[-1].split("/alertrouter/", 1)[-1] if filename != "~" else ""
        top.append((f"{where}:{line}({function})" if where else function, own, cumulative))
    top.sort(key=lambda t: -t[1])
    return Profile(phase, alerts, areas, top[:15])


def profile_markdown(title: str, profiles: list[Profile]) -> list[str]:
    """Shares of the profiled main-thread CPU: the profiler's own cost per call (it reads the thread's CPU
    clock at every call and return) inflates the absolute figures several times, most for code of many
    small calls, so read the shares against the unprofiled CPU per alert of the measured rounds."""
    lines = [f"### {title}", "", "| where (own CPU time) | " + " | ".join(f"{p.phase}" for p in profiles) + " |"]
    lines.append("|---|" + "---:|" * len(profiles))
    totals = [sum(p.areas.values()) or 1.0 for p in profiles]
    names = sorted({a for p in profiles for a in p.areas}, key=lambda a: -max(p.areas.get(a, 0) for p in profiles))
    for name in names:
        cells = " | ".join(f"{p.areas.get(name, 0) / t:.0%}" for p, t in zip(profiles, totals, strict=True))
        lines.append(f"| {name} | {cells} |")
    cells = " | ".join(f"**{t / p.alerts * 1e6:.0f} µs**" for p, t in zip(profiles, totals, strict=True))
    lines.append(f"| **profiled main-thread CPU per alert (inflated by the profiler)** | {cells} |")
    for p, total in zip(profiles, totals, strict=True):
        lines += ["", f"Top functions by own CPU time, {p.phase} (share own / cumulative):", ""]
        lines += [f"- `{f}` {own / total:.1%} / {cum / total:.1%}" for f, own, cum in p.top[:10]]
    return [*lines, ""]


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


def reference(rows: list[Row], phase: str) -> float | None:
    """Alertmanager's figure a phase of alertrouter is compared with (a re-send with a re-send)."""
    wanted = "new" if phase == "new" else "unchanged"
    return next((r.alerts_per_s for r in rows if r.system.startswith("alertmanager") and r.phase == wanted), None)


def check_lines(checks: list[Check]) -> list[str]:
    """The client-speed check: would a faster client have measured more?"""
    if not checks:
        return ["No client-speed check: wrk is not installed.", ""]
    lines = [
        f"**Client-speed check.** After phase `unchanged`, the same re-sends for {WRK_SECONDS:.0f} s each from the "
        f"lean client, from wrk (C, epoll, {CLIENTS} connections on {CLIENTS} threads, a Lua script cycling through "
        "the same bodies) and from the lean client again, all in steady state. If the lean client held a system back, "
        "wrk's figure would be higher; a ratio near 1 says the system, not the client, sets the figure.",
        "",
        "| system | endpoint | lean client alerts/s | wrk alerts/s | wrk / lean | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    groups: dict[tuple[str, str], list[Check]] = {}
    for c in checks:
        groups.setdefault((c.system, c.endpoint), []).append(c)
    for (system, endpoint), group in groups.items():
        lean = statistics.median(c.lean for c in group)
        fast = statistics.median(c.wrk for c in group)
        ratio = fast / lean
        verdict = (
            "client not the bottleneck"
            if ratio < 1.15
            else "CLIENT-BOUND: the lean client held it back; the rows above are lower bounds"
        )
        if any(c.wrk_errors for c in group):
            verdict += f" (wrk saw {sum(c.wrk_errors for c in group)} errors)"
        lines.append(f"| {system} | `{endpoint}` | {lean:,.0f} | {fast:,.0f} | {ratio:.2f} | {verdict} |")
    return [*lines, ""]


def markdown(
    rows: list[Row],
    env: dict[str, str],
    load: Load,
    notes: list[str],
    skipped: list[str],
    checks: list[Check],
    profiles: list[str],
) -> str:
    lines = [
        "# alertrouter ingest benchmark",
        "",
        f"{load.alerts:,} GPU alerts ({load.alerts // GPUS_PER_NODE:,} nodes x {GPUS_PER_NODE} GPUs, dcgm-exporter "
        f"labels) in {len(load.webhooks)} payloads of {BATCH}, sent by a lean client ({CLIENTS} keep-alive "
        "connections, one thread each, pre-encoded bodies); phase `new`: all alerts new; `unchanged, busy`: the "
        f"same payloads re-sent {BUSY_DELAY} s later, while alertrouter's engine decides the new alerts; "
        "`unchanged`: re-sent again once the engine has settled. Latency is per payload (request).",
        "",
        f"Each system ran {rows[0].rounds if rows else 0} times on a fresh store (rounds interleaved): alerts/s is "
        "the median round (range in brackets), x AM is the ratio to Alertmanager's median for the same kind of "
        "phase, latencies are over every request of every round, CPU is the server process's per alert: all threads, "
        "and its main thread (alertrouter's event loop, where all its Python runs but SQLite's own work, which "
        "aiosqlite runs in a thread of its own; Alertmanager's main thread is one of Go's).",
        "",
        "| system | endpoint | phase | alerts/s | (range) | x AM | p50 ms | p99 ms | CPU µs/alert | main thread |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ref = reference(rows, r.phase)
        ratio = f"{r.alerts_per_s / ref:.2f}" if ref else "–"
        lines.append(
            f"| {r.system} | `{r.endpoint}` | {r.phase} | {r.alerts_per_s:,.0f} | "
            f"({r.alerts_per_s_min:,.0f}–{r.alerts_per_s_max:,.0f}) | {ratio} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | "
            f"{r.cpu_us_per_alert:.0f} | {r.main_us_per_alert:.0f} |"
        )
    lines += [
        "",
        *check_lines(checks),
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
    if profiles:
        title = "## Where alertrouter's CPU goes (cProfile of the server's event loop thread, in its own CPU time)"
        lines += ["", title, "", *profiles]
    return "\n".join(lines) + "\n"


def profile_run(workdir: Path, kind: str, endpoint: str, load: Load) -> list[str]:
    """One extra server under the profiler (slower than the measured rounds; the shares are what matter)."""
    profile_dir = workdir / f"profile-{kind}-{endpoint}"
    profile_dir.mkdir()
    run = run_alertrouter(workdir, kind, endpoint, load, profile_dir=profile_dir)
    profiles = [read_profile(phase, path, load.alerts) for phase, path in run.profiles.items()]
    cpu = ", ".join(
        f"{s.phase} {s.cpu / load.alerts * 1e6:.0f} ({s.cpu_main / load.alerts * 1e6:.0f} main thread)"
        for s in run.samples
    )
    lines = profile_markdown(f"{kind}, {endpoint}", profiles)
    return [*lines, f"Process CPU under the profiler, µs/alert (all threads): {cpu}.", ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 nodes (800 alerts) instead of 1,000: a smoke test")
    parser.add_argument(
        "--rounds", type=int, default=5, help="fresh runs of every system; the median round is reported (default 5)"
    )
    parser.add_argument("--store", choices=("sqlite", "postgresql"), action="append", help="only these stores")
    parser.add_argument(
        "--profile", action="store_true", help="after the rounds, one more run per store and endpoint under cProfile"
    )
    args = parser.parse_args()
    nodes = 100 if args.quick else 1000

    load = build_load(nodes)
    progress(f"built {load.alerts} alerts in {len(load.webhooks)} webhooks / {len(load.pushes)} pushes of {BATCH}")
    skipped: list[str] = []
    kinds = args.store or ["sqlite", "postgresql"]
    if "postgresql" in kinds and (problem := pg.available()):
        skipped.append(f"alertrouter on PostgreSQL: {problem}")
        progress(f"skipping PostgreSQL: {problem}")
        kinds.remove("postgresql")
    if WRK is None:
        skipped.append("client-speed check: wrk is not installed (apt-get install wrk)")

    samples: list[Sample] = []
    notes: list[str] = []
    checks: list[Check] = []
    profiles: list[str] = []
    with tempfile.TemporaryDirectory(prefix="alertrouter-bench-") as tmp:
        workdir = Path(tmp)
        if procs.ALERTMANAGER is None:
            skipped.append("Alertmanager reference: prometheus-alertmanager is not installed (bash .ci/setup)")
        # Rounds go through every system in turn, so a slow moment of the machine is shared out.
        for number in range(1, args.rounds + 1):
            if procs.ALERTMANAGER is not None:
                progress(f"round {number}/{args.rounds}: Alertmanager reference")
                samples += bench_alertmanager(workdir, load, checks)
            for kind in kinds:
                for endpoint in ("webhook", "api_v2"):
                    progress(f"round {number}/{args.rounds}: alertrouter on {kind}, {endpoint}, fresh database")
                    run = run_alertrouter(workdir, kind, endpoint, load)
                    samples += run.samples
                    checks += [run.check] if run.check else []
                    if run.durable not in notes:
                        notes.append(run.durable)
        if args.profile:
            for kind in kinds:
                for endpoint in ("webhook", "api_v2"):
                    progress(f"profile: alertrouter on {kind}, {endpoint}")
                    profiles += profile_run(workdir, kind, endpoint, load)
    rows = combine(samples)

    env = environment("postgresql" in kinds)
    report = markdown(rows, env, load, notes, skipped, checks, profiles)
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
                "client": "lean (http.client, keep-alive, one thread per connection)",
                "rounds": args.rounds,
                "rows": [asdict(r) for r in rows],
                "client_checks": [asdict(c) for c in checks],
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
