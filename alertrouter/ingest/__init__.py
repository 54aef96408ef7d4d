"""The HTTP edge where alerts arrive: Alertmanager webhooks and the Alertmanager API v2 shape."""

from __future__ import annotations
