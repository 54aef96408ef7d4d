"""Durable delivery: the outbox worked into per-channel deliveries, sent, retried and recorded."""
