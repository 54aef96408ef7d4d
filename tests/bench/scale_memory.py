"""Where `serve`'s memory goes with a big store: the engine's first pass over it, under tracemalloc.

    .venv/bin/python tests/bench/bench_scale.py --stores sqlite --keep /tmp/scale   # leaves scale.db
    .venv/bin/python tests/bench/scale_memory.py /tmp/scale/scale.db [--top 25]

Runs in-process what `serve`'s engine holds after its first pass (the runner, its evaluator and the
last result, on the shipped rules) over every live alert of the store, and prints the allocations
still alive afterwards, by source line, plus the bytes per live alert. The alerts must still be live
(firing, or resolved within the hour). A profile to read, not a figure to compare across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tracemalloc
from pathlib import Path

from alertrouter.engine.runner import EngineRunner
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database

REPO = Path(__file__).resolve().parents[2]


async def profile(db_path: Path, top: int, frames: int) -> None:
    db = Database(f"sqlite+aiosqlite:///{db_path}")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path, help="a SQLite store, e.g. the one bench_scale.py --keep left")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--frames", type=int, default=1, help="traceback depth per allocation site")
    args = parser.parse_args()
    if not args.store.exists():
        sys.exit(f"no store at {args.store}")
    asyncio.run(profile(args.store, args.top, args.frames))


if __name__ == "__main__":
    main()
