"""The `topology:` section: labels and other names of nodes, and the optional Prometheus lookup of them."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, SecretStr, field_validator, model_validator

from alertrouter.ruleset.base import Duration, Section

__all__ = ["DEFAULT_NODE_LABELS", "LOOKUP_SERIES", "LookupSeries", "PrometheusLookupConfig", "TopologyConfig"]

LookupSeries = Literal["node_uname_info", "kube_node_info", "kube_pod_info", "kube_node_labels"]
LOOKUP_SERIES: tuple[LookupSeries, ...] = ("node_uname_info", "kube_node_info", "kube_pod_info", "kube_node_labels")
# kube-state-metrics' `kube_node_labels` names: a node label `topology.kubernetes.io/zone` is
# `label_topology_kubernetes_io_zone`; the first present of each list gives the alertrouter label.
DEFAULT_NODE_LABELS = {
    "region": ["label_topology_kubernetes_io_region", "label_failure_domain_beta_kubernetes_io_region"],
    "zone": ["label_topology_kubernetes_io_zone", "label_failure_domain_beta_kubernetes_io_zone"],
    "rack": ["label_rack"],
}
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _one_or_many(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
    return value


class PrometheusLookupConfig(Section):
    """Read which address (and pod) is which node, and the nodes' topology labels, from Prometheus."""

    url: str = Field(description="Base URL of the Prometheus HTTP API, e.g. http://prometheus:9090")
    refresh: Duration = Field(timedelta(minutes=1), description="How often the series are read again")
    timeout: Duration = Field(timedelta(seconds=10), description="For each query")
    bearer_token: SecretStr | None = Field(None, description="Sent as `Authorization: Bearer`; a ${ENV} reference")
    keep_for: Duration | None = Field(
        None,
        description="How long a discovered name stays in force after the last answer that had it (Prometheus "
        "down, or the series gone with a dead node); default: topology.learned_alias_ttl",
    )
    series: list[LookupSeries] = Field(default_factory=lambda: list(LOOKUP_SERIES), description="Which series to read")
    node_labels: Annotated[dict[str, list[str]], BeforeValidator(_one_or_many)] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_NODE_LABELS.items()},
        description="alertrouter label -> kube_node_labels label names, the first present wins",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"must be an http:// or https:// URL with a host, e.g. http://prometheus:9090, not {value!r}"
            )
        if parts.query or parts.fragment:
            raise ValueError("must be the base URL of Prometheus, without ?query or #fragment")
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number or out of range
        except ValueError as exc:
            raise ValueError(f"invalid port: {exc}") from None
        return value.rstrip("/")

    @field_validator("refresh", "timeout")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value < timedelta(seconds=1):
            raise ValueError("must be at least 1s")
        return value

    @field_validator("series")
    @classmethod
    def _some_series(cls, value: list[LookupSeries]) -> list[LookupSeries]:
        if not value:
            raise ValueError("must name at least one series")
        return list(dict.fromkeys(value))

    @field_validator("node_labels")
    @classmethod
    def _label_names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for target, names in value.items():
            for name in [target, *names]:
                if not _LABEL_NAME.fullmatch(name):
                    raise ValueError(f"{name!r} is not a Prometheus label name")
            if not names:
                raise ValueError(f"{target}: name at least one kube_node_labels label")
        return value


class TopologyConfig(Section):
    """Labels for nodes whose alerts lack them, and other names (IPs) of nodes."""

    nodes: dict[str, dict[str, str]] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)
    learned_alias_ttl: Duration = Field(
        timedelta(days=7),
        description="How long an address learned from an alert (IP instance + hostname) stays that node's "
        "without being seen again; 0s learns nothing. `aliases` always win over learned ones",
    )
    prometheus: PrometheusLookupConfig | None = Field(
        None, description="Off unless set: discover addresses, pods and topology labels of nodes from Prometheus"
    )

    @property
    def lookup_keep_for(self) -> timedelta:
        """How long a discovered name outlives the last answer that had it."""
        if self.prometheus is not None and self.prometheus.keep_for is not None:
            return self.prometheus.keep_for
        return self.learned_alias_ttl

    @model_validator(mode="after")
    def _keep_outlives_refresh(self) -> TopologyConfig:
        lookup = self.prometheus
        if lookup is not None and self.lookup_keep_for <= lookup.refresh:
            where = (
                "prometheus.keep_for"
                if lookup.keep_for is not None
                else "learned_alias_ttl (prometheus.keep_for unset)"
            )
            raise ValueError(
                f"{where} must be longer than prometheus.refresh ({lookup.refresh}), or every name "
                "discovered would lapse between two refreshes"
            )
        return self
