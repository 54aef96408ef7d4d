"""Logging setup: text for people, JSON lines for log pipelines; noisy libraries kept quiet."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

__all__ = ["configure_logging", "redact_secrets"]

# httpx logs every request URL at INFO; channel URLs carry tokens (DingTalk access_token, WeCom key).
_QUIET = {
    "httpx": logging.WARNING,
    "httpcore": logging.WARNING,
    "aiosqlite": logging.WARNING,
    "asyncio": logging.WARNING,
}


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name, quiet in _QUIET.items():
        logging.getLogger(name).setLevel(max(quiet, logging.getLevelName(level)))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


class _Redact(logging.Filter):
    """Replaces known secrets in every record, whatever logged it (an exception text, a library)."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = sorted(set(secrets), key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        text = message
        for secret in self.secrets:
            text = text.replace(secret, "***")
        if text != message:
            record.msg, record.args = text, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            for secret in self.secrets:
                record.exc_text = record.exc_text.replace(secret, "***")
        return True


def redact_secrets(secrets: list[str]) -> None:
    """Mask these values in every log line from now on (channel tokens, keys, passwords): defence in
    depth behind channels that never log them in the first place."""
    if not secrets:
        return
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, _Redact)]:
            handler.removeFilter(old)
        handler.addFilter(_Redact(secrets))
