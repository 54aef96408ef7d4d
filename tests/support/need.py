"""Skip a test whose dependency is missing, except in CI, where a missing dependency is a failure."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(condition: bool, reason: str) -> None:
    if condition:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI=true: tests needing it must run, not skip)")
    pytest.skip(reason)
