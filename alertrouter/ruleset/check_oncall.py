"""Cross-checks of the `oncall:` section and what refers to it: people named by schedules, schedules named
by receivers, receivers named by escalation steps. Each problem names the item's path (`ruleset.build`
adds the file)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from alertrouter.pipeline.escalation import EscalationPolicy, EscalationStep
from alertrouter.ruleset.oncall import OnCallConfig
from alertrouter.ruleset.schema import Ruleset

__all__ = ["check_oncall", "escalation_policies"]

Problem = tuple[str, int | None, str, str]  # section, item index, path below it, message


def _unique(names: Sequence[str], where: str, out: list[Problem]) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            out.append(
                ("oncall", None, f".{where}[{i}].name", f"duplicate name {name!r} (first at {where}[{seen[name]}])")
            )
        seen.setdefault(name, i)


def _known(name: str, known: Collection[str], what: str, section: str) -> str | None:
    if name in known:
        return None
    listed = ", ".join(sorted(known)) or f"none defined in {section}"
    return f"undefined {what} {name!r} (known: {listed})"


def check_oncall(ruleset: Ruleset, receivers: Collection[str]) -> list[Problem]:
    cfg = ruleset.oncall
    out: list[Problem] = []
    _unique([p.name for p in cfg.people], "people", out)
    _unique([s.name for s in cfg.schedules], "schedules", out)
    _unique([e.name for e in cfg.escalations], "escalations", out)
    people = {p.name for p in cfg.people}
    for i, schedule in enumerate(cfg.schedules):
        for j, layer in enumerate(schedule.layers):
            for k, name in enumerate(layer.people):
                if (problem := _known(name, people, "person", "oncall.people")) is not None:
                    out.append(("oncall", None, f".schedules[{i}].layers[{j}].people[{k}]", problem))
        for j, override in enumerate(schedule.overrides):
            if (problem := _known(override.person, people, "person", "oncall.people")) is not None:
                out.append(("oncall", None, f".schedules[{i}].overrides[{j}].person", problem))
    severities = set(ruleset.global_.severities)
    for i, policy in enumerate(cfg.escalations):
        for j, severity in enumerate(policy.severities):
            if severity not in severities:
                known = ", ".join(ruleset.global_.severities)
                out.append(
                    (
                        "oncall",
                        None,
                        f".escalations[{i}].severities[{j}]",
                        f"unknown severity {severity!r} (global.severities: {known})",
                    )
                )
        for j, step in enumerate(policy.steps):
            for k, receiver in enumerate(step.receivers):
                if (problem := _known(receiver, receivers, "receiver", "receivers")) is not None:
                    out.append(("oncall", None, f".escalations[{i}].steps[{j}].receivers[{k}]", problem))
    schedules = {s.name for s in cfg.schedules}
    for i, config in enumerate(ruleset.receivers):
        for j, ref in enumerate(config.channels):
            for key, names in ((".mentions.oncall", ref.mentions.oncall), (".oncall", ref.oncall)):
                for k, name in enumerate(names):
                    if (problem := _known(name, schedules, "on-call schedule", "oncall.schedules")) is not None:
                        out.append(("receivers", i, f".channels[{j}]{key}[{k}]", problem))
    return out


def escalation_policies(cfg: OnCallConfig) -> dict[str, EscalationPolicy]:
    return {
        p.name: EscalationPolicy(
            name=p.name,
            severities=frozenset(p.severities),
            steps=tuple(EscalationStep(s.after, tuple(s.receivers)) for s in p.steps),
        )
        for p in cfg.escalations
    }
