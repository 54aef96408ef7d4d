"""Where the shipped data directories are: next to the package in a checkout, inside it in a wheel."""

from __future__ import annotations

from pathlib import Path

__all__ = ["data_dir", "default_rules_dir"]

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """`migrations`, `templates` or `rules`: the wheel copy if installed, else the checkout's."""
    bundled = _PACKAGE / "_data" / name
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent / name


def default_rules_dir() -> Path:
    """`./rules` when run from a directory that has one, else the shipped rules."""
    local = Path("rules")
    return local if local.is_dir() else data_dir("rules")
