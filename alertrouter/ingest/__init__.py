"""The ingest stage: payloads checked at one boundary, planned against the stored state and committed
before the HTTP edge (`alertrouter.web.receive`) answers."""

from __future__ import annotations
