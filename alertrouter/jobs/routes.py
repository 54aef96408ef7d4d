"""Who is told of a job hit: the `jobs:` rules' namespace -> receiver table, and a default for the rest (none:
no job message). Told in addition to the infrastructure incidents, never instead of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["JobRoutes"]


@dataclass(frozen=True, slots=True)
class JobRoutes:
    namespaces: Mapping[str, str] = field(default_factory=dict)
    default_receiver: str | None = None
    severity: str = "critical"

    def receiver_of(self, namespace: str) -> str | None:
        """The receiver told of a job of `namespace` ("" for a job outside Kubernetes), or None."""
        return self.namespaces.get(namespace, self.default_receiver)
