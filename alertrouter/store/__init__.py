"""Persistence: typed tables and query functions. Functions here never commit; orchestrators do."""

from __future__ import annotations

from alertrouter.store.db import STORE_ERRORS, Database, describe_error, is_outage

__all__ = ["STORE_ERRORS", "Database", "describe_error", "is_outage"]
