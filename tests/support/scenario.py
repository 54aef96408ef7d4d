"""A clock-driven harness for engine scenarios: alerts change over time, passes run every few seconds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.labels import fingerprint
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.types import EvalResult, IncidentRecord, Intent, LiveAlert, next_records
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


def shipped_pipeline() -> CompiledRules:
    return compile_rules(load_ruleset(REPO / "rules", {}))


def gpu_labels(
    node: str, gpu: int, alertname: str = "GPUHighTemp", severity: str = "warning", **extra: str
) -> dict[str, str]:
    return {
        "alertname": alertname,
        "Hostname": node,
        "instance": f"{node}:9400",
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}",
        "job": "dcgm",
        "severity": severity,
        **extra,
    }


def node_down_labels(node: str, **extra: str) -> dict[str, str]:
    return {"alertname": "NodeDown", "instance": f"{node}:9100", "job": "node", "severity": "critical", **extra}


@dataclass
class Scenario:
    pipeline: CompiledRules = field(default_factory=shipped_pipeline)
    now: datetime = T0
    alerts: dict[str, LiveAlert] = field(default_factory=dict)
    records: dict[str, IncidentRecord] = field(default_factory=dict)
    sent: list[tuple[datetime, Intent]] = field(default_factory=list)
    last: EvalResult | None = None

    def __post_init__(self) -> None:
        self.evaluator = Evaluator(self.pipeline)

    def fire(self, labels: Mapping[str, str]) -> str:
        fp = fingerprint(labels)
        old = self.alerts.get(fp)
        fired_at = old.fired_at if old is not None and old.firing else self.now
        self.alerts[fp] = LiveAlert(fp, dict(labels), True, self.now, fired_at)
        return fp

    def resolve(self, labels: Mapping[str, str]) -> str:
        fp = fingerprint(labels)
        old = self.alerts[fp]
        self.alerts[fp] = LiveAlert(fp, old.labels, False, old.starts_at, old.fired_at)
        return fp

    def step(self) -> EvalResult:
        self.last = self.evaluator.evaluate(list(self.alerts.values()), self.records, now=self.now)
        self.records = next_records(self.records, self.last)
        self.sent.extend((self.now, intent) for intent in self.last.intents)
        return self.last

    def run(self, duration: timedelta, every: timedelta = timedelta(seconds=5)) -> None:
        end = self.now + duration
        while self.now < end:
            self.step()
            self.now += every
        self.step()

    def restart(self) -> None:
        """A new process: the evaluator (and its in-memory inhibitor) is rebuilt from the store's records."""
        self.evaluator = Evaluator(self.pipeline)

    def messages(self, receiver: str | None = None) -> list[Intent]:
        return [i for _, i in self.sent if receiver is None or i.receiver == receiver]
