"""A route muted by a time interval, through engine passes on a real store: nothing is sent while the
interval is active, the engine wakes when it ends and sends what still fires, and (as in Alertmanager) a
resolve during the mute is never told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.types import Decision, LiveAlert
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database
from alertrouter.store.tables import AlertEventRow, AlertRow, NotifyStateRow, OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.scenario import gpu_labels
from support.webhooks import webhook

S = timedelta(seconds=1)
M = timedelta(minutes=1)

# T0 is Saturday 2026-11-21 08:00 UTC.
RULES = """
receivers:
  - name: default
  - name: ops
time_intervals:
  - name: maintenance
    time_intervals:
      - weekdays: [saturday]
        times: [{start_time: '{start}', end_time: '{end}'}]
route:
  receiver: default
  routes:
    - matchers: ['alertname="GPUHighTemp"']
      receiver: ops
      group_wait: 30s
      group_interval: 1m
      mute_time_intervals: [maintenance]
"""


def pipeline(tmp_path: Path, start: str, end: str) -> CompiledRules:
    (tmp_path / "rules.yml").write_text(RULES.replace("{start}", start).replace("{end}", end))
    return compile_rules(load_ruleset(tmp_path, {}))


async def test_muted_route_sends_nothing_then_what_still_fires_when_the_interval_ends(
    db: Database, tmp_path: Path
) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, pipeline(tmp_path, "08:00", "09:00"), clock=clock)
    gpus = [gpu_labels("gpu-node-07", g) for g in range(3)]
    await ingestor.ingest(parse_webhook(webhook(gpus)).batch)
    await run_for(runner, clock, 20 * M)
    assert await rows(db, OutboxRow) == []
    alerts = await rows(db, AlertRow)
    assert {a.decision for a in alerts} == {"muted_by_interval"}
    assert alerts[0].decision_detail["muted_by_interval"] == {"ops": ["maintenance"]}
    assert alerts[0].decision_detail["mute_ends_at"] == "2026-11-21T09:00:00+00:00"
    trail = [e.detail for e in await rows(db, AlertEventRow) if e.kind == "decision"]
    assert trail
    assert all(d["decision"] == "muted_by_interval" for d in trail)
    assert runner.wake_at == T0 + timedelta(hours=1)  # the engine looks again when the interval ends

    # One GPU cools down during the mute; the other two still fire when it ends.
    clock.now = T0 + 30 * M
    await ingestor.ingest(parse_webhook(webhook(gpus[:1], status="resolved", ends_at=clock.now)).batch)
    await run_for(runner, clock, 29 * M + 50 * S)
    assert clock.now < runner.wake_at
    assert await rows(db, OutboxRow) == []

    clock.now = runner.wake_at
    await runner.run_once()
    (sent,) = await rows(db, OutboxRow)
    assert (sent.receiver, sent.reason, sent.created_at) == ("ops", "first", T0 + timedelta(hours=1))
    assert sorted(a["labels"]["gpu"] for a in sent.message["alerts"]) == ["1", "2"]
    firing = [a for a in await rows(db, AlertRow) if a.status == "firing"]
    assert {a.decision for a in firing} == {"aggregated"}
    assert "muted_by_interval" not in firing[0].decision_detail
    # Next saturday's window is what the engine waits for now (nothing else is due before the repeat).
    assert runner.wake_at is not None
    assert runner.wake_at > clock.now


async def test_a_resolve_during_the_mute_is_never_told(db: Database, tmp_path: Path) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, pipeline(tmp_path, "08:10", "08:20"), clock=clock)
    gpu = [gpu_labels("gpu-node-07", 0)]
    await ingestor.ingest(parse_webhook(webhook(gpu)).batch)
    await run_for(runner, clock, 5 * M)
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first"]  # before the interval

    clock.now = T0 + 12 * M
    await ingestor.ingest(parse_webhook(webhook(gpu, status="resolved", ends_at=clock.now)).batch)
    await run_for(runner, clock, 20 * M)  # through the mute and 12 minutes past its end
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first"]
    (state,) = await rows(db, NotifyStateRow)
    assert (state.firing, state.last_reason) == ([], "muted")

    # It fires again after the mute: a new first message, as after any resolve.
    await ingestor.ingest(parse_webhook(webhook(gpu, starts_at=clock.now)).batch)
    await run_for(runner, clock, 2 * M)
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first", "first"]


SPLIT = """
receivers: [{name: default}, {name: office}, {name: oncall}]
time_intervals:
  - name: business-hours
    time_intervals:
      - weekdays: ['monday:friday']
        times: [{start_time: '09:00', end_time: '18:00'}]
        location: Asia/Shanghai
  - name: saturday-morning
    time_intervals: [{weekdays: [saturday], times: [{start_time: '07:00', end_time: '12:00'}]}]
route:
  receiver: default
  routes:
    - receiver: office
      continue: true
      active_time_intervals: [business-hours]
    - receiver: oncall
      mute_time_intervals: [saturday-morning]
"""


def test_each_receiver_muted_on_its_own_and_the_alert_muted_only_when_all_are(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(SPLIT)
    rules = compile_rules(load_ruleset(tmp_path, {}))
    alert = LiveAlert("fp1", gpu_labels("gpu-node-07", 0), True, T0 - M, T0 - M)
    # Saturday 08:00 UTC (16:00 in Shanghai): outside business hours, inside saturday-morning.
    result = Evaluator(rules).evaluate([alert], {}, now=T0 + timedelta(minutes=5))
    decision = result.decisions["fp1"]
    assert decision.decision is Decision.MUTED_BY_INTERVAL
    assert decision.detail()["outside_active_time_intervals"] == {"office": ["business-hours"]}
    assert decision.detail()["muted_by_interval"] == {"oncall": ["saturday-morning"]}
    assert decision.mute_ends_at == datetime(2026, 11, 21, 12, 0, tzinfo=UTC)  # the first of the two to change
    assert result.intents == []
    assert result.wake_at == datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    # Saturday 12:00 UTC: oncall is told; office still is not.
    noon = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    result = Evaluator(rules).evaluate([alert], {}, now=noon)
    decision = result.decisions["fp1"]
    assert decision.decision is Decision.NOTIFY
    assert decision.routed_to == ("office", "oncall")
    assert decision.detail()["outside_active_time_intervals"] == {"office": ["business-hours"]}
    assert "muted_by_interval" not in decision.detail()
    assert [(i.receiver, i.reason.value) for i in result.intents] == [("oncall", "first")]


STORM = """
receivers: [{name: default}, {name: ops}]
time_intervals:
  - name: always
    time_intervals: [{times: [{start_time: '00:00', end_time: '24:00'}]}]
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {label: gpu, per_group: 8}
    rollup: {threshold: 3, window: 2m, by: [alertname, region], scope_labels: [region]}
route:
  receiver: default
  routes:
    - matchers: ['region="north"']
      receiver: ops
      mute_time_intervals: [always]
"""


def test_a_storm_on_a_muted_route_is_muted_by_interval_not_rolled_up(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(STORM)
    rules = compile_rules(load_ruleset(tmp_path, {}))
    alerts = [
        LiveAlert(f"fp{n}", gpu_labels(f"gpu-node-0{n}", 0, region="north"), True, T0 - M, T0 - M) for n in range(4)
    ]
    result = Evaluator(rules).evaluate(alerts, {}, now=T0)
    assert result.intents == []
    decisions = {d.decision for d in result.decisions.values()}
    assert decisions == {Decision.MUTED_BY_INTERVAL}
    (cluster,) = {d.incident for d in result.decisions.values()}
    assert cluster is not None
    assert result.incidents[cluster].kind == "cluster"
    assert result.decisions["fp0"].detail()["muted_by_interval"] == {"ops": ["always"]}
