"""Persistence: typed tables and query functions. Functions here never commit; orchestrators do."""

from __future__ import annotations

from alertrouter.store.db import OUTAGE_ERRORS, STORE_ERRORS, Database, describe_error

__all__ = ["OUTAGE_ERRORS", "STORE_ERRORS", "Database", "describe_error"]
