"""The app the engine-side poison fuzz drives: `create_app` in-process (ingest, the engine runner and the
delivery worker on their own loops, real time), reached through an ASGI transport, delivering to a
signed fake DingTalk robot over loopback HTTP; and a log of every engine pass's outcome.

The rules are the shipped global section (node labels), inhibition (without hold-downs) and stale
rules, with aggregation and a route of their own: no wait before a first message and no roll-up into
storms, so each normal alert's message names its own node at once."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

from alertrouter.app import create_app
from alertrouter.engine.runner import EngineRunner
from alertrouter.pipeline.types import EvalResult
from alertrouter.ruleset import Ruleset, load_ruleset
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings
from support.fakes.dingtalk import FakeDingTalk
from support.webhooks import webhook

__all__ = ["DT_SECRET", "DT_TOKEN", "WITHIN", "PassLog", "Router", "Trail", "fuzz_ruleset", "running_router"]

REPO = Path(__file__).resolve().parents[2]
TOKEN = "poison-fuzz-token-5e1f0a7c"  # literal test credentials, nothing real
DT_TOKEN = "dt-poison-token-2b7c"
DT_SECRET = "SEC7c0ffee1d2e3f4a5b6c7d8e9f0a1b2c3"
WITHIN = 20.0  # seconds: how long a wait gives up after, never a claim about speed

FUZZ_RULES = """\
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {label: gpu, per_group: 8, name: GPUs}
    group_wait: 0s
    rollup: off
  - name: node
    matchers: ['alertname=~"Node.*|Kube.*"']
    group_by: [alertname, node]
    group_wait: 0s
    rollup: off
route:
  receiver: oncall
  group_wait: 0s
  group_interval: 1s
  repeat_interval: {critical: 1h, warning: 2h, info: 4h, default: 4h}
  routes:
    - matchers: ['severity="critical"']
      receiver: oncall
      group_wait: 0s
      group_interval: 1s
      repeat_interval: 1h
      escalation: critical-unacked
    - {matchers: ['severity=~"warning|info"'], receiver: oncall, group_wait: 0s, group_interval: 1s}
receivers:
  - name: oncall
    channels: [robot]
  - name: lead
    channels: [robot]
oncall:
  escalations:
    - name: critical-unacked
      severities: [critical]
      steps:
        - {after: 1h, receivers: [lead]}
channels:
  - name: robot
    type: dingtalk
    url: ${DT_URL}/robot/send
    access_token: ${DT_TOKEN}
    secret: ${DT_SECRET}
    timeout: 5s
    rate_limit: {messages: 100000, per: 1m, block: 10m}
    retry: {initial: 1s, max: 2s, give_up_after: 1h}
"""


@dataclass(frozen=True, slots=True)
class Outcome:
    started: float
    ended: float
    error: str | None  # "Type: first line" of what the pass raised, None when it completed


class PassLog:
    """Every engine pass's outcome, the loop's and any other caller's (wraps `run_once`, as
    `support.passes.Passes` does): what `LoopHealth` sees, with the error each failed pass raised."""

    def __init__(self, engine: EngineRunner) -> None:
        self.outcomes: list[Outcome] = []
        self._run_once = engine.run_once
        engine.run_once = self._logged  # type: ignore[method-assign]

    async def _logged(self, *, urgent: bool = False) -> EvalResult | None:
        started = time.monotonic()
        try:
            result = await self._run_once(urgent=urgent)
        except Exception as exc:
            first = (str(exc).splitlines() or [""])[0]
            self.outcomes.append(Outcome(started, time.monotonic(), f"{type(exc).__name__}: {first}"[:400]))
            raise
        self.outcomes.append(Outcome(started, time.monotonic(), None))
        return result

    def errors(self, since: float) -> list[str]:
        """The distinct errors of the passes started since `since` (monotonic), in order."""
        return list(dict.fromkeys(o.error for o in self.outcomes if o.started >= since and o.error))

    async def next_after(self, since: float) -> Outcome | None:
        """The first pass started after `since` once it has ended, or None if none did within `WITHIN`."""
        deadline = time.monotonic() + WITHIN
        while time.monotonic() < deadline:
            done = [o for o in self.outcomes if o.started > since]
            if done:
                return done[0]
            await asyncio.sleep(0.05)
        return None


class Trail(logging.Handler):
    """What alertrouter logged at WARNING and above, and when (monotonic): its loops log each failed pass."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((time.monotonic(), f"{record.name}: {record.getMessage()}"[:400]))

    def since(self, since: float, most: int = 8) -> list[str]:
        """The first `most` distinct lines logged since `since`."""
        return list(dict.fromkeys(line for at, line in self.lines if at >= since))[:most]


@dataclass
class Router:
    store: str
    client: httpx.AsyncClient
    runtime: Runtime
    robot: FakeDingTalk
    passes: PassLog
    trail: Trail
    auth: dict[str, str] = field(default_factory=lambda: {"Authorization": f"Bearer {TOKEN}"})

    async def send(self, labels: dict[str, Any], annotations: dict[str, Any]) -> tuple[bytes, httpx.Response]:
        """A webhook of one firing alert, as Alertmanager POSTs it; the body sent and the answer."""
        started = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
        body = webhook([labels], annotations=annotations, starts_at=started, group_by=("alertname",))
        return body, await self.client.post("/webhook/alertmanager", content=body, headers=self.auth)

    async def decision(self, fingerprint: str) -> tuple[bool, str | None, Any]:
        """(stored, decision, decision_detail) of one alert, as `/api/v1/alerts/{fingerprint}` shows it."""
        answer = await self.client.get(f"/api/v1/alerts/{fingerprint}", headers=self.auth)
        if answer.status_code == 404:
            return False, None, None
        assert answer.status_code == 200, (answer.status_code, answer.text[:500])
        alert = answer.json()["alert"]
        return True, alert["decision"], alert["decision_detail"]

    async def decided(self, fingerprint: str) -> tuple[bool, str | None, Any]:
        """The alert's decision once it has one, or what it has after `WITHIN`."""
        deadline = time.monotonic() + WITHIN
        while True:
            found = await self.decision(fingerprint)
            if found[1] is not None or time.monotonic() > deadline:
                return found
            await asyncio.sleep(0.05)

    async def message_naming(self, *words: str) -> str | None:
        """The text of the first message the robot accepted naming all of `words`, within `WITHIN`."""
        deadline = time.monotonic() + WITHIN
        while time.monotonic() < deadline:
            for body in self.robot.messages(DT_TOKEN):
                text = json.dumps(body, ensure_ascii=False)
                if all(w in text for w in words):
                    return text
            await asyncio.sleep(0.05)
        return None


def fuzz_ruleset(rules: Path, robot: FakeDingTalk) -> Ruleset:
    """The fuzz's rules, written under `rules` and loaded, sending to `robot`."""
    rules.mkdir(exist_ok=True)
    for name in ("alertrouter.yml", "stale.yml"):
        shutil.copy(REPO / "rules" / name, rules / name)
    inhibit = yaml.safe_load((REPO / "rules" / "inhibit.yml").read_text())
    for rule in inhibit["inhibit_rules"]:
        rule["hold_down"] = "0s"  # a hold-down (30 s unless set) would hold back the GPU page
    (rules / "inhibit.yml").write_text(yaml.safe_dump(inhibit))
    (rules / "fuzz.yml").write_text(FUZZ_RULES)
    return load_ruleset(rules, {"DT_URL": robot.url, "DT_TOKEN": DT_TOKEN, "DT_SECRET": DT_SECRET})


@asynccontextmanager
async def running_router(store: str, database_url: str, robot: FakeDingTalk, ruleset: Ruleset) -> AsyncIterator[Router]:
    """The app started on `database_url` (migrated) with `ruleset`, its messages sent to `robot`."""
    settings = Settings(
        database_url=database_url,
        bearer_token=TOKEN,
        auto_migrate=False,
        scheduler=False,
        engine_interval=timedelta(milliseconds=200),  # an idle pass this often: the one after each delivery
        delivery_interval=timedelta(milliseconds=200),
    )
    app = create_app(settings, ruleset)
    trail, logger = Trail(), logging.getLogger("alertrouter")
    logger.addHandler(trail)
    try:
        async with app.router.lifespan_context(app):
            runtime: Runtime = app.state.runtime
            passes = PassLog(runtime.engine)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://ar", timeout=60) as client:
                yield Router(store, client, runtime, robot, passes, trail)
    finally:
        logger.removeHandler(trail)
