"""HTTP edges other than ingest: the JSON read API and the operations endpoints."""

from __future__ import annotations
