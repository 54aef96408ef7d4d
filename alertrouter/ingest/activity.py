"""How busy this process's ingest is: payloads being stored now, and when the last one was.

The engine reads it (`quiet_for`) to wait for a pause in a burst before a pass; the writer updates it.
It is its own object so that both can be given it when they are built, neither knowing the other.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["IngestActivity"]


class IngestActivity:
    def __init__(self) -> None:
        self._in_flight = 0
        self._last_active = -math.inf

    @contextmanager
    def storing(self) -> Iterator[None]:
        """Around the storing of one payload, answered or failed."""
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            self._last_active = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since a payload was last being stored here; 0 while one is, infinity before the first."""
        return 0.0 if self._in_flight else time.monotonic() - self._last_active
