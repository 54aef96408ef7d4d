"""The shape of the rules configuration; every section rejects unknown keys so typos are errors."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["GlobalConfig", "RuleFile", "Ruleset"]

_DEFAULT_NODE_LABELS = ["node", "hostname", "Hostname", "kubernetes_node", "instance"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GlobalConfig(_Section):
    node_labels: list[str] = Field(
        default_factory=lambda: list(_DEFAULT_NODE_LABELS),
        description="Labels tried in order to name an alert's node; `instance` loses its :port",
    )
    severity_label: str = "severity"
    external_url: str | None = Field(None, description="Base URL of this alertrouter, for links in messages")

    @field_validator("node_labels")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must name at least one label")
        if len(set(value)) != len(value):
            raise ValueError("labels must not repeat")
        return value


class RuleFile(_Section):
    """One YAML file: any subset of the sections. Files are merged in name order."""

    global_: GlobalConfig | None = Field(None, alias="global")


class Ruleset(_Section):
    """The merged, validated configuration the server runs on."""

    global_: GlobalConfig = Field(default_factory=lambda: GlobalConfig(), alias="global")
    sources: tuple[str, ...] = ()
    config_hash: str = ""
