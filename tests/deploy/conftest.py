"""The Kubernetes overlays, built once per module."""

from __future__ import annotations

from typing import Any

import pytest

from support.kustomize import OVERLAYS, build


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    """(name, objects) of each overlay, as `kubectl apply -k deploy/kubernetes/overlays/<name>` would send them."""
    return request.param, build(OVERLAYS[request.param])
