"""Helpers shared by alertrouter's tests: real processes, real databases, realistic payloads."""
