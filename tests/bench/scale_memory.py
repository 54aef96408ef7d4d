"""Where `serve`'s memory and time go with a big store: the engine's passes over it, profiled in-process.

    .venv/bin/python tests/bench/bench_scale.py --stores sqlite --keep /tmp/scale   # leaves scale.db
    .venv/bin/python tests/bench/scale_memory.py /tmp/scale/scale.db [--top 25] [--cpu]
    .venv/bin/python tests/bench/bench_scale.py --stores postgresql --keep /tmp/scale   # database alertrouter_scale
    .venv/bin/python tests/bench/scale_memory.py \
        postgresql+asyncpg://alertrouter:alertrouter@127.0.0.1/alertrouter_scale --passes 20

Memory (default): runs what `serve`'s engine holds after its first pass (the runner, its evaluator
and the last result, on the shipped rules) over every live alert of the store under tracemalloc, and
prints the allocations still alive afterwards, by source line, plus the bytes per live alert.
`--cpu`: after that first pass, 100 firing alerts are resolved in the store (as one webhook would),
and the pass that follows runs under cProfile: the functions by cumulative time.
`--passes N`: after that first pass, N passes each after 100 alerts of one alertname on consecutive
nodes (13 nodes, as a webhook about them would) are resolved, then fired again, in turn; the wall
time of each pass as `serve` runs it (evaluation in a worker thread), without a profiler: p50 and max.
The alerts must still be live (firing, or resolved within the hour); the store is changed by `--cpu`
and `--passes`. A profile to read, not a figure to compare across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from sqlalchemy import select, update

from alertrouter.engine.runner import EngineRunner
from alertrouter.model import utcnow
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database
from alertrouter.store.handles import alerts_t

REPO = Path(__file__).resolve().parents[2]


async def profile(url: str, top: int, frames: int) -> None:
    db = Database(url)
    runner = EngineRunner(db, compile_rules(load_ruleset(REPO / "rules", {})))
    gc.collect()
    tracemalloc.start(frames)
    before = tracemalloc.take_snapshot()
    result = await runner.run_once()
    gc.collect()
    after = tracemalloc.take_snapshot()
    live = len(runner.live_alerts())
    stats = after.compare_to(before, "traceback" if frames > 1 else "lineno")
    total = sum(s.size_diff for s in stats)
    print(f"{live:,} live alerts, {0 if result is None else len(result.incidents):,} incidents in the pass")
    print(f"held after the pass: {total / 2**20:.1f} MiB, {total / max(live, 1):,.0f} bytes per live alert\n")
    for s in stats[:top]:
        print(f"{s.size_diff / 2**20:8.1f} MiB {s.count_diff:>9,} blocks")
        for line in s.traceback.format()[-2 * frames :]:
            print("    " + line)
    tracemalloc.stop()
    await db.dispose()


async def time_passes(url: str, passes: int) -> None:
    db = Database(url)
    runner = EngineRunner(db, compile_rules(load_ruleset(REPO / "rules", {})), freeze_after_full=True)
    await runner.run_once()
    c = alerts_t.c
    async with db.read() as session:
        firing = c.status == "firing"
        alertname = await session.scalar(select(c.alertname).where(firing).order_by(c.node).limit(1))
        some = select(c.fingerprint).where(firing, c.alertname == alertname).order_by(c.node).limit(100)
        fps = list(await session.scalars(some))
    times = []
    for i in range(passes):
        now = utcnow()
        status, ends_at = ("resolved", now) if i % 2 == 0 else ("firing", None)
        async with db.write() as session:
            stmt = update(alerts_t).where(c.fingerprint.in_(fps)).values(status=status, ends_at=ends_at, updated_at=now)
            await session.execute(stmt)
            await session.commit()
        started = time.perf_counter()
        await runner.run_once()
        times.append((time.perf_counter() - started) * 1000)
    live = len(runner.live_alerts())
    print(f"{live:,} live alerts; {passes} passes, each after 100 {alertname} alerts changed")
    print(f"pass ms: p50 {statistics.median(times):.1f}, max {max(times):.1f}")
    print("each: " + " ".join(f"{t:.0f}" for t in times))
    await db.dispose()


async def profile_cpu(url: str, top: int) -> None:
    db = Database(url)
    runner = EngineRunner(db, compile_rules(load_ruleset(REPO / "rules", {})))
    await runner.run_once()
    c = alerts_t.c
    async with db.write() as session:
        firing = select(c.fingerprint).where(c.status == "firing").order_by(c.fingerprint).limit(100)
        fps = list(await session.scalars(firing))
        now = utcnow()
        stmt = update(alerts_t).where(c.fingerprint.in_(fps)).values(status="resolved", ends_at=now, updated_at=now)
        await session.execute(stmt)
        await session.commit()
    profiler = cProfile.Profile()
    profiler.enable()
    result = await runner.run_once()
    profiler.disable()
    live = len(runner.live_alerts())
    intents = 0 if result is None else len(result.intents)
    print(f"{live:,} live alerts; the pass after 100 of them resolved ({intents} intents)")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
    await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "store",
        help="a SQLite store's path or a store's URL, e.g. what bench_scale.py --keep left",
    )
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--frames", type=int, default=1, help="traceback depth per allocation site")
    parser.add_argument("--cpu", action="store_true", help="profile the time of a pass after 100 changes")
    parser.add_argument("--passes", type=int, default=0, help="time this many passes after 100 changes each")
    args = parser.parse_args()
    if "://" in args.store:
        url = args.store
    elif Path(args.store).exists():
        url = f"sqlite+aiosqlite:///{args.store}"
    else:
        sys.exit(f"no store at {args.store}")
    if args.passes:
        asyncio.run(time_passes(url, args.passes))
    elif args.cpu:
        asyncio.run(profile_cpu(url, args.top))
    else:
        asyncio.run(profile(url, args.top, args.frames))


if __name__ == "__main__":
    main()
