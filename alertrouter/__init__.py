"""alertrouter: cuts Alertmanager noise for GPU clusters before anyone is paged."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
