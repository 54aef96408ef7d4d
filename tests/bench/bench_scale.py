"""Scale benchmark: a real `alertrouter serve` holding 10,000 GPU nodes' alerts, then a storm on 1,000 nodes.

    .venv/bin/python tests/bench/bench_scale.py [--quick] [--stores sqlite,postgresql] [--keep DIR] [--settle S]

For each store (SQLite, PostgreSQL), one `serve` process on the shipped rules (channels pointed at
fake DingTalk and WeCom robots; SMS and email left unconfigured, as shipped; every 30 s wait cut to
3 s so the run does not sit idle) is fed, in Alertmanager webhooks of 100 from 4 keep-alive clients:

1. GPU alerts with bare-metal dcgm-exporter labels (`instance=<ip>:9400`, `Hostname`, `gpu`, `UUID`,
   `pci_bus_id`, `device`, `modelName`; `region`/`rack`/`cluster` as Prometheus relabeling adds
   them), 8 per node, loaded in four steps to 1,250/2,500/5,000/10,000 nodes (1x-8x: 10,000 to
   80,000 live). At each step, 8 webhooks of 100 changes each (100 GPU alerts resolved, then fired
   again), each from rest, and the engine pass each one causes, read from `/metrics`
   (`alertrouter_engine_pass_duration_seconds` sum and count before and after; after, 1.5 s after the
   webhook (`--settle`), not while the pass runs, which a read of `/metrics` would slow down).
2. Two node-exporter alerts per node (`instance=<ip>:9100`, no node name: joined to the GPU alerts
   through the addresses learned from dcgm-exporter's alerts): 100,000 active alerts. RSS of `serve`
   (VmRSS, VmHWM of /proc/PID/status).
3. The storm: 1,000 nodes' GPUs cross the critical temperature (8,000 alerts) and a 40-node rack
   among them goes down (NodeDown), all at once; meanwhile `/incidents` (console) and
   `/api/v1/incidents` are read in turn and timed (each read once before, untimed, as by a console
   already open: the first view after a start reads the filter menus). Messages out = requests the
   fake robots accepted.
4. `serve` restarted on the same store: RSS after its first pass, which reads every live alert back.

`--quick`: 2,000 nodes, 2 webhooks timed per step, a 200-node storm. `--keep DIR` leaves the SQLite
store there, and PostgreSQL's as the database `alertrouter_scale` (for `tests/bench/scale_memory.py`).
Results: markdown on stdout and tests/bench/results/scale[-quick].md.
No thresholds: figures are for docs/en/benchmarks.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from e2e.harness import gpu_annotations, read_metric, webhook, webhook_alert  # noqa: E402
from support import pg  # noqa: E402
from support.fakes.dingtalk import FakeDingTalk  # noqa: E402
from support.fakes.wecom import FakeWeCom  # noqa: E402
from support.procs import Proc, start_alertrouter  # noqa: E402
from support.scenario import dcgm_labels, node_exporter_down_labels  # noqa: E402

TOKEN = "bench-token-scale-7a4e21"  # a literal credential for a throwaway process
RESULTS = REPO / "tests" / "bench" / "results"
PASS_SETTLES = 1.5  # seconds after a timed webhook before /metrics is read for its pass (`--settle`)
GPU_ALERTS = ("GPUHighTemp", "GPUMemoryNearFull", "GPUHighUtilSustained", "GPUPowerNearLimit")
BATCH = 100
CLIENTS = 4
KEPT_PG = "alertrouter_scale"  # the PostgreSQL database `--keep` leaves
STARTED = time.monotonic()


def progress(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.0f}s] {text}", flush=True)


# -- the fleet ------------------------------------------------------------------------------------


def ip(n: int) -> str:
    return f"10.{20 + n // 65536}.{(n // 256) % 256}.{n % 256}"


def host(n: int) -> str:
    return f"gpu-node-{n:05d}"


def place(n: int, nodes: int) -> dict[str, str]:
    """What relabeling adds: the region (half the fleet each) and the rack (40 nodes)."""
    return {"region": "north" if n < nodes // 2 else "south", "rack": f"r{n // 40:03d}", "cluster": "train-a"}


def gpu_alert(
    n: int, gpu: int, nodes: int, *, severity: str = "warning", alertname: str | None = None
) -> dict[str, str]:
    name = alertname or GPU_ALERTS[n % len(GPU_ALERTS)]
    return dcgm_labels(ip(n), host(n), gpu, alertname=name, severity=severity, **place(n, nodes))


def node_alerts(n: int, nodes: int) -> list[dict[str, str]]:
    """Two node-exporter mixin alerts, as node-exporter scraped by address labels them."""
    base = {"instance": f"{ip(n)}:9100", "job": "node", "severity": "warning", **place(n, nodes)}
    return [
        {
            "alertname": "NodeFilesystemAlmostOutOfSpace",
            "device": "/dev/nvme0n1p2",
            "fstype": "ext4",
            "mountpoint": "/",
            **base,
        },
        {"alertname": "NodeClockNotSynchronising", **base},
    ]


def notes(labels: dict[str, str]) -> dict[str, str]:
    if "gpu" in labels:
        return gpu_annotations(labels)
    return {"summary": f"{labels['alertname']} on {labels['instance']}", "description": "node-exporter mixin alert"}


def bodies(alerts: list[dict[str, str]], *, at: datetime, resolved: bool = False) -> Iterator[bytes]:
    for i in range(0, len(alerts), BATCH):
        chunk = [
            webhook_alert(a, starts_at=at, ends_at=at if resolved else None, annotations=notes(a))
            for a in alerts[i : i + BATCH]
        ]
        yield json.dumps(webhook(chunk, group_by=("alertname",))).encode()


# -- talking to serve -----------------------------------------------------------------------------


class Poster:
    """Keep-alive webhook clients (one connection per thread), retrying a 503 as Alertmanager would."""

    def __init__(self, url: str) -> None:
        self.host, self.port = url.removeprefix("http://").split(":")
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPConnection:
        if not hasattr(self._local, "conn"):
            self._local.conn = http.client.HTTPConnection(self.host, int(self.port), timeout=60)
        conn: http.client.HTTPConnection = self._local.conn
        return conn

    def post(self, body: bytes) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        for _ in range(20):
            conn = self._conn()
            try:
                conn.request("POST", "/webhook/alertmanager", body=body, headers=headers)
                r = conn.getresponse()
                r.read()
            except (OSError, http.client.HTTPException):
                del self._local.conn
                time.sleep(0.5)
                continue
            if r.status == 200:
                return
            if r.status != 503:
                raise RuntimeError(f"webhook answered {r.status}")
            time.sleep(0.5)
        raise RuntimeError("webhook kept failing")

    def post_all(self, payloads: Iterator[bytes]) -> int:
        with ThreadPoolExecutor(CLIENTS) as pool:
            return sum(1 for _ in pool.map(self.post, payloads))


@dataclass
class Server:
    proc: Proc
    http: httpx.Client
    poster: Poster
    live: int = 0  # alerts sent, firing or resolved within the hour: what the engine holds

    def close(self) -> None:
        self.http.close()
        self.proc.stop()

    def metrics(self) -> str:
        return self.http.get("/metrics").text

    def passes(self) -> tuple[float, float]:
        text = self.metrics()
        return (
            read_metric(text, "alertrouter_engine_pass_duration_seconds_count"),
            read_metric(text, "alertrouter_engine_pass_duration_seconds_sum"),
        )

    def collections(self) -> dict[str, tuple[float, float]]:
        """Garbage collections so far by generation: (count, seconds the process stood still)."""
        text = self.metrics()
        return {
            g: (
                read_metric(text, "alertrouter_gc_pause_seconds_count", generation=g),
                read_metric(text, "alertrouter_gc_pause_seconds_sum", generation=g),
            )
            for g in ("0", "1", "2")
        }

    def rss(self) -> dict[str, int]:
        status = Path(f"/proc/{self.proc.popen.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {k: int(fields[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM")}

    def at_rest(self, timeout: float = 600.0, quiet: float = 2.0) -> None:
        """Every alert sent has a decision, none is held, and no pass ran for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        last, since = -1.0, time.monotonic()
        while time.monotonic() < deadline:
            text = self.metrics()
            decided = read_metric(text, "alertrouter_alert_decisions")
            held = read_metric(text, "alertrouter_alert_decisions", decision="held")
            count = read_metric(text, "alertrouter_engine_pass_duration_seconds_count")
            if count != last:
                last, since = count, time.monotonic()
            elif decided >= self.live and held == 0 and time.monotonic() - since >= quiet:
                return
            time.sleep(0.25)
        raise TimeoutError(f"engine not at rest after {timeout:.0f}s")


def rules_dir(work: Path, dingtalk: str, wecom: str) -> Path:
    """The shipped rules, channels pointed at the fakes, 30 s waits cut to 3 s."""
    rules = work / "rules"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("deploy", "prometheus"))
    channels = yaml.safe_load((rules / "channels.yml").read_text())
    for ch in channels["channels"]:
        if ch["type"] == "dingtalk":
            ch["url"] = f"{dingtalk}/robot/send"
        elif ch["type"] == "wecom":
            ch["url"] = f"{wecom}/cgi-bin/webhook/send"
    (rules / "channels.yml").write_text(yaml.safe_dump(channels, sort_keys=False))
    inhibit = yaml.safe_load((rules / "inhibit.yml").read_text())
    for rule in inhibit["inhibit_rules"]:  # the default hold-down is 30 s too
        rule["hold_down"] = "0s" if rule.get("hold_down") == "0s" else "3s"
    (rules / "inhibit.yml").write_text(yaml.safe_dump(inhibit, sort_keys=False))
    for name in ("aggregation.yml", "routes.yml"):
        path = rules / name
        path.write_text(path.read_text().replace("group_wait: 30s", "group_wait: 3s"))
    return rules


ROBOTS = ("CORE", "CORE_BACKUP", "NORTH", "SOUTH", "OPS")


# -- the phases -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    nodes: int
    storm_nodes: int
    samples: int  # webhooks timed per scale
    settle: float = PASS_SETTLES  # seconds after a timed webhook before /metrics is read for its pass


FULL, QUICK = Size(10_000, 1_000, 8), Size(2_000, 200, 2)


@dataclass
class Result:
    store: str
    scales: list[tuple[int, int, float, float, float]] = field(
        default_factory=list
    )  # x, live, p50, max, passes/webhook
    load_s: dict[str, float] = field(default_factory=dict)
    rss: dict[str, int] = field(default_factory=dict)
    rss_restarted: dict[str, int] = field(default_factory=dict)
    active: int = 0
    incidents: int = 0
    messages_before: int = 0
    messages_storm: int = 0
    storm_alerts: int = 0
    storm_settled_s: float = 0.0
    reads: dict[str, list[float]] = field(default_factory=dict)
    violations: int = 0
    storm_gc: dict[str, tuple[float, float]] = field(default_factory=dict)  # generation -> (collections, s)
    load_gc: dict[str, tuple[float, float]] = field(default_factory=dict)  # the same, from the start to the storm


def load(server: Server, alerts: list[dict[str, str]], what: str, result: Result) -> None:
    progress(f"{result.store}: {what}: {len(alerts):,} alerts ...")
    started = time.perf_counter()
    server.poster.post_all(bodies(alerts, at=datetime.now(UTC) - timedelta(minutes=5)))
    server.live += len(alerts)
    posted = time.perf_counter() - started
    server.at_rest()
    result.load_s[what] = time.perf_counter() - started
    progress(f"{result.store}: {what}: posted in {posted:.1f} s, engine at rest after {result.load_s[what]:.1f} s")


def pass_cost(server: Server, sample: list[dict[str, str]], size: Size) -> tuple[float, float, float]:
    """Median and max (ms) of the engine pass one webhook of 100 changes causes, each from rest (a
    re-fired alert's hold-down ends in a timer pass of its own, which is not counted); and how many
    passes started before the first one was observed (1.0: the webhook's pass alone)."""
    per_pass, counts, full = [], [], []
    for i in range(size.samples):
        server.at_rest(quiet=1.5)
        body = next(bodies(sample, at=datetime.now(UTC), resolved=i % 2 == 0))
        full0 = read_metric(server.metrics(), "alertrouter_engine_passes_total", scope="full")
        count0, sum0 = server.passes()
        server.poster.post(body)
        # Not read while the pass runs: a read of /metrics counts the stored alerts (5 ms of SQLite at
        # 100,000) and renders every series, on the same two cores and event loop as the pass it would
        # time. Prometheus reads it every 15-60 s; this benchmark read it every 0.1 s, and a read that
        # fell on the pass added its time to it. The pass starts within the engine's 1 s tick.
        time.sleep(size.settle)
        deadline = time.monotonic() + 120
        while (after := server.passes())[0] == count0:
            if time.monotonic() > deadline:
                raise TimeoutError("no engine pass after a webhook")
            time.sleep(0.1)
        count1, sum1 = after
        per_pass.append((sum1 - sum0) / (count1 - count0) * 1000)
        counts.append(count1 - count0)
        full.append(read_metric(server.metrics(), "alertrouter_engine_passes_total", scope="full") > full0)
    passes = ", ".join(f"{ms:.0f}{' (full)' if whole else ''}" for ms, whole in zip(per_pass, full, strict=True))
    progress(f"passes (ms, in order; resolve, fire, ...): {passes}")
    return statistics.median(per_pass), max(per_pass), statistics.mean(counts)


def timed_reads(server: Server, stop: threading.Event, out: dict[str, list[float]]) -> None:
    client = httpx.Client(base_url=server.proc.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    paths = ("/incidents", "/api/v1/incidents")
    i = 0
    while not stop.is_set():
        path = paths[i % 2]
        started = time.perf_counter()
        r = client.get(path)
        elapsed = time.perf_counter() - started
        if r.status_code != 200:
            raise RuntimeError(f"{path} answered {r.status_code}")
        out.setdefault(path, []).append(elapsed * 1000)
        i += 1
        time.sleep(0.05)
    client.close()


def run_store(url: str, work: Path, size: Size, result: Result) -> None:
    tokens = {f"tok-{r.lower()}": f"SEC{r}signing-secret" for r in ROBOTS}
    with FakeDingTalk(tokens) as dingtalk, FakeWeCom(["wecom-bench-key"]) as wecom:
        env = {f"DINGTALK_{r}_TOKEN": f"tok-{r.lower()}" for r in ROBOTS}
        env |= {f"DINGTALK_{r}_SECRET": tokens[f"tok-{r.lower()}"] for r in ROBOTS}
        env |= {
            "WECOM_CORE_KEY": "wecom-bench-key",
            "ALERTROUTER_BEARER_TOKEN": TOKEN,
            "ALERTROUTER_LOG_LEVEL": "WARNING",
            "ALERTROUTER_CONSOLE_ANONYMOUS_READ": "true",
        }
        rules = rules_dir(work, dingtalk.url, wecom.url)
        server = start(url, work, env, rules)
        try:
            run_phases(server, size, result, told=lambda: len(dingtalk.accepted) + len(wecom.accepted))
            result.violations = len(dingtalk.rate.violations) + len(wecom.rate.violations)
            result.messages_storm = len(dingtalk.accepted) + len(wecom.accepted) - result.messages_before
        finally:
            server.close()
        # a restart: the engine's first pass reads every live alert from the store
        progress(f"{result.store}: restarted on the same store ...")
        again = start(url, work, env, rules)
        again.live = server.live
        try:
            again.at_rest()
            result.rss_restarted = again.rss()
        finally:
            again.close()
        progress(f"{result.store}: restarted, RSS {result.rss_restarted}")


def start(url: str, work: Path, env: dict[str, str], rules: Path) -> Server:
    proc = start_alertrouter(work, database_url=url, env=env, config=rules)
    client = httpx.Client(base_url=proc.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return Server(proc, client, Poster(proc.url))


def run_phases(server: Server, size: Size, result: Result, *, told: Callable[[], int]) -> None:
    kind, nodes, storm_nodes, samples = result.store, size.nodes, size.storm_nodes, size.samples
    sample = [gpu_alert(n, g, nodes) for n in range(BATCH // 8 + 1) for g in range(8)][:BATCH]
    done = 0
    for scale in (1, 2, 4, 8):
        upto = nodes * scale // 8
        load(server, [gpu_alert(n, g, nodes) for n in range(done, upto) for g in range(8)], f"GPU {scale}x", result)
        done = upto
        progress(f"{kind}: timing {samples} webhooks of {BATCH} changes at {server.live:,} live ...")
        p50, worst, per = pass_cost(server, sample, size)
        result.scales.append((scale, server.live, p50, worst, per))
        progress(f"{kind}: {scale}x: pass p50 {p50:.0f} ms, max {worst:.0f} ms")
    load(server, [a for n in range(nodes) for a in node_alerts(n, nodes)], "node-exporter", result)
    result.active = server.live
    result.rss = server.rss()
    total = server.http.get("/api/v1/incidents", params={"limit": 1})
    result.incidents = int(total.json()["total"])
    progress(f"{kind}: {server.live:,} alerts, {result.incidents:,} incidents, RSS {result.rss}")

    # the storm: critical temperatures on storm_nodes nodes, a rack of 40 of them down
    wait_for_delivery(server)
    result.messages_before = told()
    first = nodes // 4  # from the north half and the south half
    hot = list(range(first, first + storm_nodes))
    storm = [gpu_alert(n, g, nodes, severity="critical", alertname="GPUHighTemp") for n in hot for g in range(8)]
    rack = hot[:40]
    storm += [node_exporter_down_labels(ip(n), **place(n, nodes)) for n in rack]
    result.storm_alerts = len(storm)
    # Each list read once before the storm, untimed, as by a console open before it: the first view after
    # a start reads the filter menus (a scan of every incident), which is that view's cost, not the storm's.
    for path in ("/incidents", "/api/v1/incidents"):
        server.http.get(path).raise_for_status()
    stop = threading.Event()
    reader = threading.Thread(target=timed_reads, args=(server, stop, result.reads))
    progress(f"{kind}: storm: {len(storm):,} alerts on {storm_nodes:,} nodes, reading the incident lists ...")
    gc_before = result.load_gc = server.collections()
    reader.start()
    started = time.perf_counter()
    try:
        server.poster.post_all(bodies(storm, at=datetime.now(UTC)))
        server.live += len(storm)
        server.at_rest()
        result.storm_settled_s = time.perf_counter() - started
        time.sleep(1)
    finally:
        stop.set()
        reader.join()
    gc_after = server.collections()
    result.storm_gc = {g: (gc_after[g][0] - gc_before[g][0], gc_after[g][1] - gc_before[g][1]) for g in gc_after}
    wait_for_delivery(server)
    progress(f"{kind}: storm decided after {result.storm_settled_s:.1f} s")


def wait_for_delivery(server: Server, timeout: float = 120.0) -> None:
    """Until nothing is pending in the outbox (read from the API's notifications)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = server.http.get("/api/v1/notifications", params={"limit": 1000}).json()["notifications"]
        if not any(r["status"] in ("pending", "sending") for r in rows):
            return
        time.sleep(0.5)


# -- report ---------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def _gc(counts: dict[str, tuple[float, float]]) -> str:
    return ", ".join(f"generation {g}: {n:.0f} ({sec * 1000:.0f} ms)" for g, (n, sec) in sorted(counts.items()))


def report(results: list[Result], quick: bool, size: Size) -> str:
    lines = [
        f"Scale benchmark ({platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
        f"quick={quick}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC): {size.nodes:,} nodes x 8 GPUs, "
        f"storm on {size.storm_nodes:,}",
        "",
        "Engine pass after one webhook of 100 changes (100 GPU alerts resolved, or fired again), by live alerts:",
        "",
        "| store | scale | live alerts | pass p50 ms | pass max ms | passes per webhook |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines += [
            f"| {r.store} | {x}x | {live:,} | {p50:.0f} | {worst:.0f} | {per:.1f} |"
            for x, live, p50, worst, per in r.scales
        ]
    lines += ["", "| store | measure | result |", "|---|---|---|"]
    for r in results:
        loads = ", ".join(f"{k} {v:.0f} s" for k, v in r.load_s.items())
        lines += [
            f"| {r.store} | RSS of serve at {r.active:,} active alerts ({r.incidents:,} incidents) | "
            f"{r.rss.get('VmRSS', 0)} MB (peak {r.rss.get('VmHWM', 0)} MB) |",
            f"| {r.store} | RSS of serve restarted on that store, after its first pass | "
            f"{r.rss_restarted.get('VmRSS', 0)} MB (peak {r.rss_restarted.get('VmHWM', 0)} MB) |",
            f"| {r.store} | load, posted to engine at rest | {loads} |",
            f"| {r.store} | storm: {r.storm_alerts:,} alerts in, engine at rest after | {r.storm_settled_s:.1f} s |",
            f"| {r.store} | messages out (fake robots' accepted requests): before the storm / for it | "
            f"{r.messages_before} / {r.messages_storm} (robots over 20/min: {r.violations}) |",
        ]
        lines += [
            f"| {r.store} | garbage collections from the start to the storm (time stopped) | {_gc(r.load_gc)} |",
            f"| {r.store} | garbage collections during the storm (time stopped) | {_gc(r.storm_gc)} |",
        ]
        for path, times in sorted(r.reads.items()):
            lines.append(
                f"| {r.store} | `GET {path}` during the storm ({len(times)} reads) | p50 {pct(times, 0.5):.0f} ms, "
                f"p95 {pct(times, 0.95):.0f} ms, max {max(times, default=float('nan')):.0f} ms |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 nodes and a 200-node storm")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument(
        "--keep",
        type=Path,
        help=f"leave the SQLite store in this directory, and PostgreSQL's as the database {KEPT_PG}",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=PASS_SETTLES,
        help=f"seconds after a timed webhook before /metrics is first read (default {PASS_SETTLES:g}; "
        "0: read it every 0.1 s from the start, as runs before 2026-11-29 did)",
    )
    args = parser.parse_args()
    size = replace(QUICK if args.quick else FULL, settle=args.settle)
    results = []
    for kind in args.stores.split(","):
        result = Result(kind)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            if kind == "sqlite":
                db = (args.keep or work) / "scale.db"
                db.parent.mkdir(parents=True, exist_ok=True)
                db.unlink(missing_ok=True)
                run_store(f"sqlite+aiosqlite:///{db}", work, size, result)
            else:
                if (why := pg.available()) is not None:
                    raise SystemExit(why)
                if args.keep:
                    pg.drop_database(KEPT_PG)
                    name = pg.create_database(KEPT_PG, suffix=False)
                else:
                    name = pg.create_database("alertrouter_bench")
                try:
                    run_store(pg.url_for(name), work, size, result)
                finally:
                    if not args.keep:
                        pg.drop_database(name)
                    else:
                        progress(f"PostgreSQL store kept: {pg.url_for(name)}")
        results.append(result)
        text = report(results, args.quick, size)  # after each store: a long run keeps what it measured
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / ("scale-quick.md" if args.quick else "scale.md")).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
