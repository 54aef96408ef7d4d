"""The engine-side poison fuzz (issue 44), on both stores: no one alert may silence everyone.

Each poison alert (`support.poison`: a node-exporter, dcgm-exporter or kube-state-metrics alert with one
hostile value) is sent as Alertmanager sends it, the engine runs a pass, then a normal critical alert on
a node of its own is sent, and its message must reach the signed fake DingTalk robot, naming its
alertname and node. Afterwards the engine's passes complete again (none keeps failing), and the poison is
accounted for: refused at ingest with a 4xx, or stored and decided (`quarantined` included).

On PostgreSQL a severity longer than `incidents.severity` (32) or an IPv6 instance with a long zone id
learned as a node's address (`node_aliases.address`, 64) made every later pass fail: `FIXED` tries them
on every run. `ALERTROUTER_FUZZ_SEED` and `ALERTROUTER_FUZZ_N` change the seeded run (defaults keep CI short).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from alertrouter.ingest.payloads import PayloadError, parse_webhook
from alertrouter.ruleset import Ruleset
from support.fakes.dingtalk import FakeDingTalk
from support.poison import FIXED, Poison, draw, normal_labels, shown
from support.poison_router import DT_SECRET, DT_TOKEN, WITHIN, Router, fuzz_ruleset, running_router

SEED = int(os.environ.get("ALERTROUTER_FUZZ_SEED", "4404"))
N = int(os.environ.get("ALERTROUTER_FUZZ_N", "30"))


@pytest.fixture
def robot() -> Iterator[FakeDingTalk]:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}, limit=100_000) as fake:
        yield fake


@pytest.fixture
def ruleset(robot: FakeDingTalk, tmp_path: Path) -> Ruleset:
    return fuzz_ruleset(tmp_path / "rules", robot)


@pytest.fixture
async def router(database_url: str, robot: FakeDingTalk, ruleset: Ruleset) -> AsyncIterator[Router]:
    store = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    async with running_router(store, database_url, robot, ruleset) as r:
        yield r


def promised(body: bytes) -> set[str]:
    """The fingerprints of the alerts the ingest boundary accepts from `body`."""
    try:
        return {a.fingerprint for a in parse_webhook(body).batch.alerts}
    except PayloadError:
        return set()


def case_name(i: int, poison: Poison, store: str) -> str:
    return f"case {i} on {store} ({poison.title}; {poison.where} = {shown(poison.value)})"


async def survive(router: Router, i: int, poison: Poison) -> str:
    """Send `poison`, let a pass take it, then a normal critical alert: its message must reach the robot,
    the passes after it complete, and the poison be refused (4xx), or stored and decided. What
    happened to the poison: "refused 400", "quarantined", or its decision."""
    name = case_name(i, poison, router.store)
    since = time.monotonic()
    body, answer = await router.send(poison.labels, poison.annotations)
    assert answer.status_code < 500, f"{name}: ingest answered {answer.status_code}: {answer.text[:300]}"
    accepted = answer.status_code < 300 or (answer.status_code == 400 and "stored" in answer.json())
    fingerprints = promised(body) if accepted else set()
    if not accepted:
        assert 400 <= answer.status_code < 500, f"{name}: {answer.status_code} {answer.text[:300]}"
    assert fingerprints or not accepted, f"{name}: answered {answer.status_code} for an alert its parser refuses"
    first = {fp: await router.decided(fp) for fp in sorted(fingerprints)}  # the engine ran a pass on it
    normal = normal_labels(i)
    _, sent = await router.send(normal, {"summary": f"XID 79 on {normal['Hostname']}"})
    assert sent.status_code == 200, f"{name}: the normal alert was answered {sent.status_code}: {sent.text[:300]}"
    message = await router.message_naming(normal["Hostname"], normal["alertname"])
    assert message is not None, (
        f"{name}: the normal critical alert {normal['alertname']} on {normal['Hostname']} never reached the "
        f"DingTalk robot within {WITHIN:.0f} s; poison answered {answer.status_code}, its decision "
        f"{ {fp[:8]: d[1] for fp, d in first.items()} }; engine pass errors since: {router.passes.errors(since)}; "
        f"logged since: {router.trail.since(since)}"
    )
    delivered = time.monotonic()
    after = await router.passes.next_after(delivered)
    assert after is not None, f"{name}: no engine pass started within {WITHIN:.0f} s after the delivery"
    assert after.error is None, f"{name}: the engine's passes keep failing: {router.passes.errors(since)}"
    if not fingerprints:
        return f"refused {answer.status_code}"
    decisions = set()
    for fp in fingerprints:
        stored, decision, detail = await router.decision(fp)
        assert stored, f"{name}: answered {answer.status_code} but alert {fp} is not stored"
        assert decision is not None, f"{name}: alert {fp} stored, never decided nor quarantined"
        if decision == "quarantined":
            assert detail, f"{name}: quarantined without saying why"
            assert detail.get("error"), f"{name}: quarantined without saying why: {detail}"
        decisions.add(decision)
    return ", ".join(sorted(decisions))


@pytest.mark.parametrize("case", range(len(FIXED)), ids=[p.title for p in FIXED])
async def test_issue_44_poison_leaves_the_next_critical_alert_notified(router: Router, case: int) -> None:
    poison = FIXED[case]
    await survive(router, 9000 + case, poison)
    ready = await router.client.get("/readyz")
    assert ready.status_code == 200, ready.text


async def test_seeded_poison_never_silences_the_next_critical_alert(router: Router) -> None:
    rng = random.Random(SEED)
    cases = [*FIXED, *(draw(rng, i) for i in range(N))]
    outcomes: dict[str, int] = {}
    for i, poison in enumerate(cases):
        outcome = await survive(router, i, poison)
        kind = outcome.split(" ")[0] if outcome.startswith("refused") else outcome
        outcomes[kind] = outcomes.get(kind, 0) + 1
    assert len(router.robot.messages(DT_TOKEN)) >= len(cases)  # one for each normal alert, at least
    assert "refused" in outcomes, outcomes  # the fuzz reaches both the ingest boundary and the engine
    assert set(outcomes) - {"refused"}, outcomes
    ready = await router.client.get("/readyz")
    assert ready.status_code == 200, ready.text
