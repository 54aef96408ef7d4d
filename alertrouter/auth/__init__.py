"""Credentials and tokens: webhook authentication, console passwords, signed links and sessions, keys."""
