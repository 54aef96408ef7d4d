"""The background loops keep going, and `/readyz` tells when one stops completing passes."""

from __future__ import annotations

from pathlib import Path

import httpx

from alertrouter.app import create_app
from alertrouter.process.loops import STALL_FLOOR, LoopHealth
from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_readyz_is_not_ready_while_a_loop_is_stuck_and_ready_again_after_a_pass(database_url: str) -> None:
    app = create_app(Settings(database_url=database_url), load_ruleset(REPO / "rules", {}))
    async with app.router.lifespan_context(app):
        runtime = app.state.runtime
        clock = Clock()
        runtime.loops = LoopHealth(runtime.metrics, clock=clock)  # the same watch, on a clock the test moves
        runtime.loops.register("engine", interval=1.0)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ar") as client:
            assert (await client.get("/readyz")).status_code == 200
            clock.now += STALL_FLOOR + 5  # no engine pass completed for over a minute: stuck
            stuck = await client.get("/readyz")
            assert stuck.status_code == 503
            assert "engine" in stuck.json()["reason"]
            metrics = (await client.get("/metrics")).text
            assert 'alertrouter_loop_stalled{loop="engine"} 1.0' in metrics
            runtime.loops.passed("engine")
            assert (await client.get("/readyz")).status_code == 200


async def test_every_real_loop_is_watched_from_the_start(database_url: str) -> None:
    app = create_app(Settings(database_url=database_url), load_ruleset(REPO / "rules", {}))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as client:
        metrics = (await client.get("/metrics")).text
        for loop in ("engine", "delivery", "maintenance", "scheduler"):
            assert f'alertrouter_loop_errors_total{{loop="{loop}"}} 0.0' in metrics
            assert f'alertrouter_loop_stalled{{loop="{loop}"}} 0.0' in metrics
