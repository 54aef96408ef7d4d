"""The incremental pass against the full one: random sequences of webhooks (alerts firing, resolving,
leaving), storms, silences, acknowledgements and clock steps, given to two evaluators, one evaluating
only what changed and one evaluating everything every pass (the oracle), must give the same decisions,
incidents, notify states, messages and wake-ups after every pass.

The alerts are shaped as the exporters send them (dcgm-exporter scraped by IP with `Hostname`,
node-exporter scraped by IP with no name of the node, so aliases are learned from the dcgm alerts);
the rules are the shipped ones, and a set with time intervals muting and activating routes."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alertrouter.fingerprints import fingerprint
from alertrouter.labels import parse_matchers
from alertrouter.pipeline import aliases
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import EvalResult, IncidentRecord, LiveAlert, next_records
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.scenario import T0, dcgm_labels, gpu_labels, node_exporter_down_labels, shipped_pipeline

NODES = 12  # six a region: more than the shipped roll-up threshold (5), so a region's storm rolls up


def _node(n: int) -> tuple[str, str, str]:
    return f"gpu-node-{n:02d}", f"10.0.3.{n + 10}", "north" if n < NODES // 2 else "south"


def _pool() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for n in range(NODES):
        name, ip, region = _node(n)
        for gpu in range(2):
            out.append(gpu_labels(name, gpu, region=region, rack=f"r{n % 3}"))  # GPUHighTemp, warning
            out.append(dcgm_labels(ip, name, gpu, region=region))  # GPUXidError, critical, by IP
        out.append(node_exporter_down_labels(ip, region=region))  # NodeDown, by IP only
    return out


POOL = _pool()
STORMS = {
    r: [
        i
        for i, labels in enumerate(POOL)
        if labels.get("gpu") == "0" and labels.get("region") == r and labels["alertname"] == "GPUHighTemp"
    ]
    for r in ("north", "south")
}
SILENCES = [
    ['node="gpu-node-01"'],
    ['alertname="GPUHighTemp"', 'region="south"'],
    ['severity="critical"', 'region="north"'],
]

TIME_RULES = """
receivers:
  - name: default
  - name: ops
  - name: oncall
time_intervals:
  - name: maintenance
    time_intervals:
      - times: [{start_time: '08:05', end_time: '08:25'}]
  - name: office
    time_intervals:
      - times: [{start_time: '08:15', end_time: '09:00'}]
inhibit_rules:
  - name: node-down
    source_matchers: ['alertname="NodeDown"']
    target_matchers: ['alertname=~"GPU.*"']
    equal: [node]
    hold_down: 30s
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {label: gpu, per_group: 8, name: GPUs}
    group_wait: 20s
    rollup: {threshold: 3, window: 2m, by: [alertname, region], scope_labels: [region, rack]}
stale:
  # GPUXidError as a source-down alert: one that inhibits nothing, so only the evaluator's own
  # bookkeeping (a change to one alert of a node re-evaluates its other incidents) keeps it right.
  source_down: ['alertname=~"NodeDown|GPUXidError"']
  window: 1m
  together: all
  hold: 5m
  settle: 1m
route:
  receiver: default
  group_wait: 10s
  group_interval: 1m
  repeat_interval: {critical: 3m, warning: 6m, default: 10m}
  send_resolved: true
  routes:
    - matchers: ['severity="critical"']
      receiver: oncall
      mute_time_intervals: [maintenance]
    - matchers: ['severity="warning"']
      receiver: ops
      active_time_intervals: [office]
"""

Op = tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["fire", "resolve", "forget"]), st.integers(0, len(POOL) - 1)),
        st.tuples(st.just("tick"), st.sampled_from([1, 5, 12, 25, 31, 65, 190, 400, 1900])),
        st.tuples(st.just("storm"), st.integers(0, 1)),
        st.tuples(st.just("dark"), st.integers(0, NODES - 1)),
        st.tuples(st.sampled_from(["silence", "unsilence", "later-silence"]), st.integers(0, len(SILENCES) - 1)),
        st.tuples(st.just("ack"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=45,
)


class _World:
    """The live alerts, silences and clock both evaluators see; each keeps its own records."""

    def __init__(self, pipeline: CompiledRules) -> None:
        self.pipeline = pipeline
        self.now = T0
        self.alerts: dict[str, LiveAlert] = {}
        self.silences: dict[int, Silence] = {}
        self.book: dict[str, aliases.LearnedAlias] = {}

    def fire(self, i: int) -> None:
        labels = POOL[i]
        fp = fingerprint(labels)
        old = self.alerts.get(fp)
        still = old is not None and old.firing
        fired_at = old.fired_at if old is not None and still else self.now
        starts_at = old.starts_at if old is not None and still else self.now  # as Prometheus' startsAt
        self.alerts[fp] = LiveAlert(fp, labels, True, starts_at, fired_at)

    def resolve(self, fp: str) -> None:
        old = self.alerts[fp]
        if old.firing:  # Alertmanager's resolved alert: endsAt is when it resolved
            self.alerts[fp] = LiveAlert(fp, old.labels, False, old.starts_at, old.fired_at, self.now)

    def apply(self, op: Op) -> None:
        kind, arg = op
        fp = fingerprint(POOL[arg]) if kind in ("fire", "resolve", "forget") else ""
        if kind == "fire":
            self.fire(arg)
        elif kind == "resolve" and fp in self.alerts:
            self.resolve(fp)
        elif kind == "dark":  # the node's dcgm-exporter goes away: all its GPU alerts resolve at once
            name = _node(arg)[0]
            for labels in POOL:
                f = fingerprint(labels)
                if labels.get("Hostname") == name and f in self.alerts:
                    self.resolve(f)
        elif kind == "forget" and fp in self.alerts and not self.alerts[fp].firing:
            del self.alerts[fp]  # the engine forgets resolved alerts after a while
        elif kind == "tick":
            self.now += timedelta(seconds=arg)
        elif kind == "storm":
            for i in STORMS["north" if arg == 0 else "south"]:
                self.fire(i)
        elif kind in ("silence", "later-silence"):
            start = self.now + (timedelta(minutes=2) if kind == "later-silence" else timedelta(0))
            matchers = tuple(m for text in SILENCES[arg] for m in parse_matchers(text))
            self.silences[arg] = Silence(
                f"s{arg}-{start.timestamp():.0f}", matchers, start, start + timedelta(minutes=7)
            )
        elif kind == "unsilence":
            self.silences.pop(arg, None)

    def learned(self) -> dict[str, str]:
        nodes = self.pipeline.nodes
        seen = [s for a in self.alerts.values() if (s := aliases.sighting(nodes, a)) is not None]
        refresh = aliases.refresh_every(nodes.learned_ttl)
        for row in aliases.learn(self.book, seen, now=self.now, refresh=refresh, ttl=nodes.learned_ttl):
            self.book[row.address] = row
        return aliases.active(self.book, now=self.now, ttl=nodes.learned_ttl)


def _acknowledge(records: dict[str, IncidentRecord], k: int) -> dict[str, IncidentRecord]:
    firing = sorted(key for key, r in records.items() if r.firing and not r.acknowledged)
    if not firing:
        return records
    key = firing[k % len(firing)]
    return {**records, key: replace(records[key], acknowledged=True)}


def _said(result: EvalResult) -> list[tuple[str, str, str, object]]:
    return [(i.incident, i.receiver, i.reason.value, i.message.to_json()) for i in result.intents]


def _members_found(evaluator: Evaluator, result: EvalResult, where: str) -> None:
    """`Evaluator.alerts_of` (through an incident's members) finds what a scan of every decision finds."""
    scanned: dict[str, list[str]] = {}
    for fp, decision in sorted(result.decisions.items()):
        if decision.incident is not None:
            scanned.setdefault(decision.incident, []).append(fp)
    for key in scanned.keys() | result.incidents.keys():
        assert evaluator.alerts_of(key) == scanned.get(key, []), f"{where}: the alerts of {key}"


def _same_run(pipeline: CompiledRules, ops: list[Op], decided: set[str] | None = None) -> int:
    """Run both evaluators through `ops` (a pass after each); assert they agree; the messages sent.
    `decided` collects every decision any pass made."""
    world = _World(pipeline)
    incremental, oracle = Evaluator(pipeline), Evaluator(pipeline)
    inc_records: dict[str, IncidentRecord] = {}
    full_records: dict[str, IncidentRecord] = {}
    sent = 0
    for step, op in enumerate([*ops, ("tick", 31), ("tick", 400)]):
        if op[0] == "ack":
            inc_records, full_records = _acknowledge(inc_records, op[1]), _acknowledge(full_records, op[1])
        else:
            world.apply(op)
        learned = world.learned()
        alerts = list(world.alerts.values())
        silences = list(world.silences.values())
        a = incremental.evaluate(alerts, inc_records, now=world.now, silences=silences, learned=learned)
        b = oracle.evaluate(alerts, full_records, now=world.now, silences=silences, learned=learned, full=True)
        where = f"after step {step} {op} at {world.now:%H:%M:%S}"
        assert a.decisions == b.decisions, where
        assert a.incidents == b.incidents, where
        assert a.notify_states == b.notify_states, where
        assert _said(a) == _said(b), where
        assert a.moved == b.moved, where
        assert a.counts == b.counts, where
        assert a.wake_at == b.wake_at, where
        assert b.decided == set(b.decisions), "a full pass decides every alert"
        assert a.decided <= set(a.decisions)
        _members_found(incremental, a, where)
        _members_found(oracle, b, where)
        inc_records, full_records = next_records(inc_records, a), next_records(full_records, b)
        assert inc_records == full_records, where
        sent += len(a.intents)
        if decided is not None:
            decided.update(a.counts)
    return sent


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_incremental_passes_equal_full_passes_on_the_shipped_rules(ops: list[Op]) -> None:
    _same_run(shipped_pipeline(), ops)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_incremental_passes_equal_full_passes_with_time_intervals(ops: list[Op], tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("rules")
    (folder / "rules.yml").write_text(TIME_RULES)
    _same_run(compile_rules(load_ruleset(Path(folder), {})), ops)


def test_a_storm_with_silences_and_acknowledgements_is_told_the_same_either_way() -> None:
    """A fixed sequence that exercises every path at once, so the comparison is known to compare
    something: messages are sent, a storm rolls up, a silence and an acknowledgement act."""
    ops: list[Op] = [
        ("fire", 0),
        ("fire", 1),
        ("tick", 31),
        ("storm", 0),
        ("tick", 31),
        ("storm", 1),
        ("tick", 31),
        ("silence", 1),
        ("tick", 65),
        ("ack", 0),
        ("fire", 4),
        ("tick", 190),
        ("unsilence", 1),
        ("fire", POOL.index(node_exporter_down_labels("10.0.3.10", region="north"))),
        ("tick", 31),
        ("resolve", 0),
        ("tick", 400),
        ("fire", 10),  # gpu-node-02: hot and an XID, then the node goes dark and NodeDown follows
        ("fire", 11),
        ("tick", 65),
        ("dark", 2),
        ("tick", 31),
        ("fire", POOL.index(node_exporter_down_labels("10.0.3.12", region="north"))),
        ("tick", 65),
        ("resolve", POOL.index(node_exporter_down_labels("10.0.3.12", region="north"))),
        ("tick", 65),
        ("tick", 190),
        ("tick", 1900),  # quiet: the storms repeat on their own wake-ups
        ("tick", 1900),
    ]
    decided: set[str] = set()
    assert _same_run(shipped_pipeline(), ops, decided) >= 3
    assert {"stale", "resolving", "rolled_up", "silenced", "inhibited"} <= decided


def test_a_source_down_alert_that_mutes_nothing_still_reaches_the_stale_alerts_of_its_node(tmp_path: Path) -> None:
    """GPUXidError is a source-down alert under TIME_RULES and no inhibit rule's source: its firing and
    resolving must re-evaluate the GPUHighTemp incident of its node, which no alert of its own changed."""
    (tmp_path / "rules.yml").write_text(TIME_RULES)
    pipeline = compile_rules(load_ruleset(tmp_path, {}))
    xid = POOL.index(dcgm_labels("10.0.3.12", "gpu-node-02", 0, region="north"))
    ops: list[Op] = [
        ("fire", 10),  # gpu-node-02 GPUHighTemp on GPUs 0 and 1
        ("fire", 12),
        ("tick", 65),
        ("dark", 2),
        ("tick", 25),
        ("fire", xid),
        ("tick", 65),
        ("resolve", xid),
        ("tick", 5),
        ("tick", 65),
    ]
    decided: set[str] = set()
    _same_run(pipeline, ops, decided)
    assert "stale" in decided


def test_a_node_counted_from_its_source_resolving_tips_a_storm_in_the_pass_after_either_way() -> None:
    """gpu-node-00 overheats while its NodeDown mutes it; five more northern nodes overheat much later, and
    then gpu-node-00's NodeDown resolves. Its incident counts from that moment (the record the pass writes
    says so, not its alert's first firing), so the pass after that one finds six node incidents opened
    within two minutes: a storm. That pass has only the written record as a change: the incremental pass
    must count the storm's openings again from it, as the full pass does."""
    down = POOL.index(node_exporter_down_labels("10.0.3.10", region="north"))
    xid = POOL.index(dcgm_labels("10.0.3.10", "gpu-node-00", 0, region="north"))
    north = STORMS["north"]
    ops: list[Op] = [
        ("fire", xid),  # its address is learned from dcgm-exporter's Hostname
        ("fire", down),
        ("fire", north[0]),  # gpu-node-00 GPUHighTemp: inhibited
        ("tick", 400),
        *(("fire", i) for i in north[1:]),  # five nodes: no storm yet
        ("tick", 31),
        ("resolve", down),
        ("tick", 5),  # the pass after: six
    ]
    decided: set[str] = set()
    _same_run(shipped_pipeline(), ops, decided)
    assert {"inhibited", "rolled_up"} <= decided
