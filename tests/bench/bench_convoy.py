"""What a computing worker thread does to everything else `serve` answers, with and without its courtesy.

    .venv/bin/python tests/bench/bench_convoy.py [--nodes 1000] [--seconds 4] [--rounds 2]

The engine evaluates in a worker thread; the event loop answers webhooks and pages meanwhile, and
only one thread runs Python at a time: a thread that wants the interpreter waits for the switch
interval (CPython's default 5 ms) before the running one is made to let go, and the event loop
wants it back after every trip to the store's thread. Two remedies are compared with neither: a
shorter switch interval for the whole process (0.5 ms; tried and not kept), and the engine's own
(`alertrouter.process.courtesy`: the evaluating thread sleeps briefly every 2 ms of its work, so that a thread
waiting for the interpreter takes it at once). In-process: the app on a fresh SQLite store and the
shipped rules; 8 GPU alerts per node (dcgm-exporter labels, scraped by IP) posted as Alertmanager
webhooks and decided by the engine. Then, arm after arm in interleaved rounds: the console's incident
list (`GET /incidents`), the API's (`GET /api/v1/incidents`) and a webhook of one new alert, in turn,
alone for half of `--seconds`; a worker thread evaluating every live alert again and again with the
engine's own evaluator (what a full pass, or a storm's pass, runs) alone for half; then both together
for `--seconds`. Reported: latency p50/p95/max per request kind, alone and with the thread, and the
thread's evaluations per second alone and meanwhile. The requests are made by an httpx client in the
same process (ASGI transport), so its own time counts as well, the same for every arm. Results:
markdown on stdout and tests/bench/results/convoy.md. No thresholds: figures are for docs/en/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from alertrouter.app import create_app  # noqa: E402
from alertrouter.model import utcnow  # noqa: E402
from alertrouter.pipeline.evaluate import Evaluator  # noqa: E402
from alertrouter.process.courtesy import Courtesy  # noqa: E402
from alertrouter.ruleset import load_ruleset  # noqa: E402
from alertrouter.runtime import Runtime  # noqa: E402
from alertrouter.settings import Settings  # noqa: E402
from e2e.harness import webhook, webhook_alert  # noqa: E402
from support.scenario import dcgm_labels  # noqa: E402

TOKEN = "bench-token-convoy-5c0e19"  # a literal credential for a throwaway app
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RESULTS = REPO / "tests" / "bench" / "results"
WEBHOOK = "POST /webhook/alertmanager (1 new alert)"
KINDS = ("/incidents", "/api/v1/incidents", WEBHOOK)
# (what the arm is called, the process's switch interval in seconds, whether the evaluator pauses)
ARMS = (
    ("5 ms, no courtesy", 0.005, False),
    ("5 ms, courtesy", 0.005, True),
    ("0.5 ms, no courtesy", 0.0005, False),
)


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def load(client: httpx.AsyncClient, runtime: Runtime, nodes: int) -> int:
    """Post 8 GPU alerts per node in webhooks of 100; wait until the engine holds them all."""
    at = datetime.now(UTC)
    alerts = [
        webhook_alert(dcgm_labels(f"10.{n // 250}.{n % 250}.1", f"gpu-node-{n:04d}", g, "GPUHighTemp"), starts_at=at)
        for n in range(nodes)
        for g in range(8)
    ]
    for i in range(0, len(alerts), 100):
        r = await client.post("/webhook/alertmanager", json=webhook(alerts[i : i + 100]), headers=AUTH)
        r.raise_for_status()
    deadline = time.monotonic() + 300
    while len(runtime.engine.live_alerts()) < len(alerts):
        if time.monotonic() > deadline:
            raise TimeoutError("the engine did not take every alert")
        await asyncio.sleep(0.2)
    return len(alerts)


def evaluations(runtime: Runtime, stop: threading.Event, done: list[int], courtesy: bool) -> None:
    """The engine's evaluation of every live alert, over and over, as a full pass runs it."""
    alerts = list(runtime.engine.live_alerts().values())
    while not stop.is_set():
        Evaluator(runtime.engine.pipeline, courtesy=Courtesy() if courtesy else None).evaluate(alerts, {}, now=utcnow())
        done[0] += 1


async def reads(client: httpx.AsyncClient, seconds: float, out: dict[str, list[float]]) -> int:
    """Each kind of request in turn for `seconds`: the console's incident list, the API's, and a webhook of
    one new alert (stored and answered; its decision is the engine's business). Returns how many."""
    ended = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < ended:
        kind = KINDS[i % len(KINDS)]
        started = time.perf_counter()
        if kind == WEBHOOK:
            labels = dcgm_labels(f"10.250.{i // 250 % 250}.{i % 250}", f"probe-{time.time_ns()}", 0, "GPUXidError")
            body = webhook([webhook_alert(labels, starts_at=datetime.now(UTC))])
            r = await client.post("/webhook/alertmanager", json=body, headers=AUTH)
        else:
            r = await client.get(kind, headers=AUTH)
        out.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
        r.raise_for_status()
        i += 1
    return i


async def rate_alone(runtime: Runtime, seconds: float, courtesy: bool) -> float:
    stop, done = threading.Event(), [0]
    worker = threading.Thread(target=evaluations, args=(runtime, stop, done, courtesy))
    started = time.perf_counter()
    worker.start()
    await asyncio.to_thread(time.sleep, seconds)
    stop.set()
    await asyncio.to_thread(worker.join)
    return done[0] / (time.perf_counter() - started)


async def shared(
    client: httpx.AsyncClient, runtime: Runtime, seconds: float, out: dict[str, list[float]], courtesy: bool
) -> float:
    """Requests as `reads` makes them while a worker thread evaluates; the thread's evaluations per second."""
    stop, done = threading.Event(), [0]
    worker = threading.Thread(target=evaluations, args=(runtime, stop, done, courtesy))
    started = time.perf_counter()
    worker.start()
    try:
        await reads(client, seconds, out)
    finally:
        stop.set()
        await asyncio.to_thread(worker.join)
    return done[0] / (time.perf_counter() - started)


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(ordered):.1f} / {p95:.1f} / {ordered[-1]:.1f}"


async def run(nodes: int, seconds: float, rounds: int) -> str:
    names = [name for name, _, _ in ARMS]
    alone: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    busy: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    rates_alone: dict[str, list[float]] = {n: [] for n in names}
    rates: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="bench-convoy-") as work:
        settings = Settings(database_url=f"sqlite:///{work}/convoy.db", bearer_token=TOKEN)
        app = create_app(settings, load_ruleset(REPO / "rules", {}))
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as c:
            runtime: Runtime = app.state.runtime
            progress(f"loading {nodes * 8:,} GPU alerts ...")
            live = await load(c, runtime, nodes)
            progress(f"{live:,} live alerts")
            for r in range(rounds):
                for name, interval, courtesy in ARMS:
                    previous = sys.getswitchinterval()
                    sys.setswitchinterval(interval)
                    try:
                        await reads(c, seconds / 2, alone[name])
                        rates_alone[name].append(await rate_alone(runtime, seconds / 2, courtesy))
                        rates[name].append(await shared(c, runtime, seconds, busy[name], courtesy))
                    finally:
                        sys.setswitchinterval(previous)
                    hook = busy[name][WEBHOOK]
                    progress(f"round {r + 1}, {name}: webhooks while evaluating {summary(hook)} ms")
    lines = [
        f"Convoy benchmark (CPython {platform.python_version()}, {platform.machine()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC): {live:,} live alerts, {rounds} rounds of {seconds:g} s per arm",
        "",
        "| request | arm | alone: p50 / p95 / max ms | while a thread evaluates: p50 / p95 / max ms "
        "| requests | evaluations/s alone / meanwhile |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        for name in names:
            lines.append(
                f"| `{kind}` | {name} | {summary(alone[name][kind])} | {summary(busy[name][kind])} "
                f"| {len(busy[name][kind])} | {statistics.median(rates_alone[name]):.2f} / "
                f"{statistics.median(rates[name]):.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000, help="8 GPU alerts each (default 1,000: 8,000 alerts)")
    parser.add_argument("--seconds", type=float, default=4.0, help="of reads with the thread, per arm and round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    report = asyncio.run(run(args.nodes, args.seconds, args.rounds))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "convoy.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
