"""The `maintenance:` section: which cluster state puts a node in maintenance, and when one is stuck.

    maintenance:
      cordoned: true                      # kube_node_spec_unschedulable == 1
      taints:                             # kube_node_spec_taint: key, key=value, key:effect, key=value:effect
        - nvidia.com/gpu-xid-error
        - example.com/repair=true:NoSchedule
      stuck_after: 24h                    # in maintenance longer than this: reported once

The cluster state is read by the node lookup (`topology.prometheus`), so it needs one; windows started by
people (`alertrouter maintenance start`) need nothing. The default taints are NVSentinel's documented
examples (docs.nvidia.com/nvsentinel, "Integration Guide": its fault-quarantine rulesets taint only when
configured, and cordon by default). node-problem-detector sets node conditions and no taints (its
maintainers leave tainting by condition to Kubernetes' node controller): a team that taints from them
names its own key here.
"""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import Field, field_validator

from alertrouter.pipeline.maintenance import EFFECTS, TaintRule
from alertrouter.ruleset.base import Duration, Section

__all__ = ["DEFAULT_TAINTS", "MaintenanceConfig", "parse_taint", "taint_rules"]

DEFAULT_TAINTS = (
    "nvidia.com/gpu-xid-error",
    "nvidia.com/gpu-nvlink-error",
    "nvidia.com/syslog-xid-error",
    "nvidia.com/gpu-error",
)
# Kubernetes' taint key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters
# (alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric); a value likewise, possibly empty.
_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}")
_VALUE = re.compile(rf"(?:{_NAME})?")


def parse_taint(text: str) -> TaintRule:
    """`key`, `key=value`, `key:effect` or `key=value:effect`, as `kubectl taint` writes them."""
    rest, colon, effect = text.rpartition(":") if ":" in text else (text, "", "")
    key, equals, value = rest.partition("=")
    if not _KEY.fullmatch(key):
        raise ValueError(f"{text!r}: {key!r} is not a taint key (e.g. nvidia.com/gpu-xid-error)")
    if equals and not _VALUE.fullmatch(value):
        raise ValueError(f"{text!r}: {value!r} is not a taint value")
    if colon and effect not in EFFECTS:
        raise ValueError(f"{text!r}: the effect is one of {', '.join(EFFECTS)}, not {effect!r}")
    return TaintRule(key, value if equals else None, effect if colon else None)


class MaintenanceConfig(Section):
    cordoned: bool = Field(True, description="a cordoned node (kube_node_spec_unschedulable == 1) is in maintenance")
    taints: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TAINTS),
        description="taints (key, key=value, key:effect, key=value:effect) that put a node in maintenance",
    )
    stuck_after: Duration = Field(timedelta(hours=24), description="in maintenance longer than this: reported once")

    @field_validator("taints")
    @classmethod
    def _taints(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_taint(text)
        if len(set(value)) != len(value):
            raise ValueError(f"a taint twice: {', '.join(sorted({t for t in value if value.count(t) > 1}))}")
        return value

    @field_validator("stuck_after")
    @classmethod
    def _stuck_after(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be more than 0s")
        return value


def taint_rules(config: MaintenanceConfig) -> tuple[TaintRule, ...]:
    return tuple(parse_taint(text) for text in config.taints)
