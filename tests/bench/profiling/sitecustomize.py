"""CPU profile of a benchmarked `alertrouter serve`, switched on from outside by signals.

The benchmarks put this directory first on the server's PYTHONPATH with BENCH_PROFILE_DIR set:
SIGUSR1 starts a cProfile of the main thread (the event loop: the HTTP edge, parsing, planning,
SQLAlchemy and the engine) timed by the thread's own CPU clock, so that time spent waiting (for the
database, for the GIL, in epoll) counts nowhere; SIGUSR2 stops it and writes BENCH_PROFILE_DIR/profile.prof, which the
benchmark renames. Nothing happens without BENCH_PROFILE_DIR; alertrouter itself knows nothing of it.
Threads are not profiled (aiosqlite runs SQLite in one): their time shows as the gap between the
process's CPU and the profiled total.
"""

from __future__ import annotations

import os

_DIR = os.environ.get("BENCH_PROFILE_DIR")

if _DIR:
    import cProfile
    import signal
    import time
    from pathlib import Path
    from types import FrameType

    _profile: list[cProfile.Profile] = []
    _TARGET = Path(_DIR) / "profile.prof"

    def _start(_sig: int, _frame: FrameType | None) -> None:
        profile = cProfile.Profile(time.thread_time)
        _profile[:] = [profile]
        profile.enable()

    def _stop(_sig: int, _frame: FrameType | None) -> None:
        if not _profile:
            return
        profile = _profile.pop()
        profile.disable()
        target = _TARGET
        profile.dump_stats(str(target) + ".part")
        os.replace(str(target) + ".part", target)

    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
