"""`serve` warms the console (`app._warm_console`) only while it has nothing else to do: a page is compiled
only once ingest has been quiet for `WARM_QUIET` and no engine pass runs, so that the first alert after
a start is not held back by it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from alertrouter import app as app_module


class _Runtime:
    def __init__(self) -> None:
        self.quiet = 0.0
        self.busy = False
        self.menus_read = 0
        self.ingestor = SimpleNamespace(quiet_for=lambda: self.quiet)
        self.engine = self
        self.filter_choices = self
        self.db = None

    @property
    def passing(self) -> bool:
        return self.busy

    async def read(self, db: Any) -> dict[str, list[str]]:
        self.menus_read += 1
        return {}


async def test_pages_are_compiled_only_while_ingest_is_quiet_and_no_pass_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = _Runtime()
    compiled: list[tuple[str, float, bool]] = []

    class Env:
        def get_template(self, name: str) -> None:
            compiled.append((name, runtime.quiet, runtime.busy))

    names = ["console/incidents.html.j2", "console/incident.html.j2"]
    monkeypatch.setattr(app_module, "console_templates", lambda app, rt: [(Env(), n) for n in names])
    monkeypatch.setattr(app_module, "WARM_QUIET", 0.2)
    warming = asyncio.create_task(app_module._warm_console(None, runtime))  # type: ignore[arg-type]
    await asyncio.sleep(0.5)  # alerts arriving: ingest never quiet
    assert compiled == []
    assert runtime.menus_read == 0
    runtime.quiet, runtime.busy = 5.0, True  # quiet, but a pass runs
    await asyncio.sleep(0.5)
    assert compiled == []
    assert runtime.menus_read == 0
    runtime.busy = False
    await asyncio.wait_for(warming, 5)
    assert compiled == [(n, 5.0, False) for n in names]
    assert runtime.menus_read == 1
