"""Debian's Chromium, headless, driven by Playwright (no browser download): what every browser test starts.

The flags keep Chromium off this machine's closed network (no background fetches, no component updates, no
QUIC) and out of a sandbox it cannot have as root."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.need import need

try:
    from playwright.sync_api import Browser, sync_playwright
except ImportError:  # pragma: no cover - reported by `chromium` below
    sync_playwright = None  # type: ignore[assignment]

__all__ = ["ARGS", "CHROMIUM", "chromium"]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium for the block; fails (CI) or skips with the reason when it cannot start."""
    need(sync_playwright is not None, "the playwright Python package is not installed (pip install -e '.[dev]')")
    need(CHROMIUM.exists(), "Debian's chromium is not installed (bash .ci/setup installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()
