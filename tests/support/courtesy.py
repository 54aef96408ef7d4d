"""Watching a computing thread's courtesy (`alertrouter.process.courtesy`) in tests: which threads offered the
event loop a pause, and how many pauses a wrapped step offered."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from alertrouter.process.courtesy import Courtesy


def record_callers(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """The `Courtesy` that `module` builds records the thread of every call; the list of them."""
    callers: list[int] = []

    class Recorded(Courtesy):
        def __call__(self) -> None:
            callers.append(threading.get_ident())
            super().__call__()

    monkeypatch.setattr(module, "Courtesy", Recorded)
    return callers


def watch_step(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, size: Callable[..., int]
) -> list[tuple[bool, int, int]]:
    """Wrap `module.name` (a step taking `courtesy=` as a keyword); each call appends (run on this thread,
    `size(*args)`, pauses it offered through its courtesy)."""
    calls: list[tuple[bool, int, int]] = []
    real = getattr(module, name)
    here = threading.get_ident()

    def watched(*args: Any, **kwargs: Any) -> Any:
        offered = 0
        if (courtesy := kwargs.get("courtesy")) is not None:

            def counted() -> None:
                nonlocal offered
                offered += 1
                courtesy()

            kwargs["courtesy"] = counted
        out = real(*args, **kwargs)
        calls.append((threading.get_ident() == here, size(*args), offered))
        return out

    monkeypatch.setattr(module, name, watched)
    return calls
