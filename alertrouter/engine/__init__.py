"""The noise-reduction engine: decisions, incidents and notification intents from the stored alerts."""

from __future__ import annotations
