"""Outbound channels: one small module per vendor, each turning a `Notification` into one request."""
